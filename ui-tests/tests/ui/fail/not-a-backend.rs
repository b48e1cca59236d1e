use cubecl::prelude::*;
use island_runtime::prelude::*;

// An arm that starts with something other than a backend.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        42 => 1i32,
        default => 2i32,
    };
}

fn main() {}
