use cubecl::prelude::*;
use island_runtime::prelude::*;

// A proof signature with nothing to compare.
#[islands]
#[cube(launch)]
fn kernel(x: i32, out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(x: i32);
        cuda => x,
        default => x,
    };
}

fn main() {}
