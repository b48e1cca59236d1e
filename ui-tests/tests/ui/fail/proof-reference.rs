use cubecl::prelude::*;
use island_runtime::prelude::*;

// A proof input that is a reference but not a slice.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(x: &i32) -> i32;
        cuda => 1i32,
        default => 2i32,
    };
}

fn main() {}
