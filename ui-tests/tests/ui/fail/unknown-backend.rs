use cubecl::prelude::*;
use island_runtime::prelude::*;

// A backend the SDK does not know.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda | opencl => 1i32,
        default => 2i32,
    };
}

fn main() {}
