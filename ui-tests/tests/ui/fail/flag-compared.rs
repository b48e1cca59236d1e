use cubecl::prelude::*;
use island_runtime::prelude::*;

// A flag capability with a comparison.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda if dp4a == 1 => 1i32,
        default => 2i32,
    };
}

fn main() {}
