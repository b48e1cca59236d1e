use cubecl::prelude::*;
use island_runtime::prelude::*;

// A tile shape with an element type the SDK does not know.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda if cmma(f8, f8, f32, 16, 16, 16) => 1i32,
        default => 2i32,
    };
}

fn main() {}
