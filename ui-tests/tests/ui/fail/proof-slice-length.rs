use cubecl::prelude::*;
use island_runtime::prelude::*;

// A per-cube proof input of length 0.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(x: &[i32; 0]) -> i32;
        cuda => 1i32,
        default => 2i32,
    };
}

fn main() {}
