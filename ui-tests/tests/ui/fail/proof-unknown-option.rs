use cubecl::prelude::*;
use island_runtime::prelude::*;

// An unknown option of a proof signature.
#[islands]
#[cube(launch)]
fn kernel(x: i32, out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(x: i32) -> i32, warps = 2;
        cuda => x,
        default => x,
    };
}

fn main() {}
