use cubecl::prelude::*;
use island_runtime::prelude::*;

// A guard on `default`.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda => 1i32,
        default if dp4a => 2i32,
    };
}

fn main() {}
