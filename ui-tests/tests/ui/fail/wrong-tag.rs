use cubecl::prelude::*;
use island_runtime::prelude::*;

#[islands]
#[cube]
fn wrong_type(x: i32, #[comptime] target: u32) -> i32 {
    island! {
        cuda => x + 1,
        default => x + 2,
    }
}

#[islands]
#[cube]
fn not_comptime(x: i32, target: Target) -> i32 {
    island! {
        cuda => x + 1,
        default => x + 2,
    }
}

#[islands(tag = tag)]
#[cube]
fn named_tag_missing(x: i32, #[comptime] target: Target) -> i32 {
    island! {
        cuda => x + 1,
        default => x + 2,
    }
}

fn main() {}
