use cubecl::prelude::*;
use island_runtime::prelude::*;

// A tolerance contract without its reason.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [f32]) {
    out[ABSOLUTE_POS] = island! {
        proof() -> f32, contract = ulp(1, " ");
        cuda => 1.0f32,
        default => 2.0f32,
    };
}

fn main() {}
