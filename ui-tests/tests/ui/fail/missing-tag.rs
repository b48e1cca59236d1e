use cubecl::prelude::*;
use island_runtime::prelude::*;

// A helper must take the kernel's tag: it cannot invent one.
#[islands]
#[cube]
fn helper(x: i32) -> i32 {
    island! {
        cuda => x + 1,
        default => x + 2,
    }
}

fn main() {}
