use cubecl::prelude::*;
use island_runtime::prelude::*;

// `tag = name` naming no parameter.
#[islands(tag = tag)]
#[cube]
fn helper(x: i32, #[comptime] target: Target) -> i32 {
    island! {
        cuda => x + 1,
        default => x + 2,
    }
}

fn main() {}
