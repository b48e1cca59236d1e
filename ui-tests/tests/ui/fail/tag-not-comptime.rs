use cubecl::prelude::*;
use island_runtime::prelude::*;

// A tag parameter not marked `#[comptime]`.
#[islands]
#[cube]
fn helper(x: i32, target: Target) -> i32 {
    island! {
        cuda => x + 1,
        default => x + 2,
    }
}

fn main() {}
