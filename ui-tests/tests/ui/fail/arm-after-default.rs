use cubecl::prelude::*;
use island_runtime::prelude::*;

// An arm after `default`.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        default => 1i32,
        cuda => 2i32,
    };
}

fn main() {}
