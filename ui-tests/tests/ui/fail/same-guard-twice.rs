use cubecl::prelude::*;
use island_runtime::prelude::*;

// One backend in two arms with the same guard.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda if sm >= 61 => 1i32,
        vulkan => 2i32,
        cuda if sm >= 61 => 3i32,
        default => 4i32,
    };
}

fn main() {}
