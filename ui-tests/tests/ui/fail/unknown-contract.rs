use cubecl::prelude::*;
use island_runtime::prelude::*;

// A contract the SDK does not know.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [f32]) {
    out[ABSOLUTE_POS] = island! {
        proof() -> f32, contract = ulps(1, "reason");
        cuda => 1.0f32,
        default => 2.0f32,
    };
}

fn main() {}
