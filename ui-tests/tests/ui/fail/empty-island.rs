use cubecl::prelude::*;
use island_runtime::prelude::*;

// An island with no arm at all.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {};
}

fn main() {}
