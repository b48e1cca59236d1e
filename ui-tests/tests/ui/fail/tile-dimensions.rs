use cubecl::prelude::*;
use island_runtime::prelude::*;

// A tile shape with two dimensions.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda if cmma(i8, i8, i32, 16, 16) => 1i32,
        default => 2i32,
    };
}

fn main() {}
