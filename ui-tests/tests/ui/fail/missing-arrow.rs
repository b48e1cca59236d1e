use cubecl::prelude::*;
use island_runtime::prelude::*;

// An arm without `=>`.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda 1i32,
        default => 2i32,
    };
}

fn main() {}
