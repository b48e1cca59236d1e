use cubecl::prelude::*;
use island_runtime::prelude::*;

// A tag parameter of another type than `Target`.
#[islands]
#[cube]
fn helper(x: i32, #[comptime] target: u32) -> i32 {
    island! {
        cuda => x + 1,
        default => x + 2,
    }
}

fn main() {}
