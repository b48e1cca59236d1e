use cubecl::prelude::*;
use island_runtime::prelude::*;

// `island!` in a `#[cube]` function without `#[islands]` above it.
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda => 1i32,
        default => 2i32,
    };
}

fn main() {}
