use cubecl::prelude::*;
use island_runtime::prelude::*;

// A proof input declared twice.
#[islands]
#[cube(launch)]
fn kernel(x: i32, out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(x: i32, x: i32) -> i32;
        cuda => x,
        default => x,
    };
}

fn main() {}
