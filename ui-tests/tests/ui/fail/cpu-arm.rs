use cubecl::prelude::*;
use island_runtime::prelude::*;

// The CPU has no arm of its own: it always runs `default`.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cpu => 1i32,
        default => 2i32,
    };
}

fn main() {}
