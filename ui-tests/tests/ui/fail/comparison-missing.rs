use cubecl::prelude::*;
use island_runtime::prelude::*;

// A numeric capability without a comparison.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda if plane 32 => 1i32,
        default => 2i32,
    };
}

fn main() {}
