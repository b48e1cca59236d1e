use cubecl::prelude::*;
use island_runtime::prelude::*;

// An arm whose every backend an earlier unguarded arm takes.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda | vulkan => 1i32,
        cuda if sm >= 80 => 2i32,
        default => 3i32,
    };
}

fn main() {}
