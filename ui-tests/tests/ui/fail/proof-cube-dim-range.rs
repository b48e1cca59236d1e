use cubecl::prelude::*;
use island_runtime::prelude::*;

// A proof cube_dim out of range.
#[islands]
#[cube(launch)]
fn kernel(x: i32, out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(x: i32) -> i32, cube_dim = 2048;
        cuda => x,
        default => x,
    };
}

fn main() {}
