use cubecl::prelude::*;
use island_runtime::prelude::*;

// One backend in two arms without a guard.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda => 1i32,
        cuda | vulkan => 2i32,
        default => 3i32,
    };
}

fn main() {}
