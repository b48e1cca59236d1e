use cubecl::prelude::*;
use island_runtime::prelude::*;

// `default` in a pattern with backends.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda | default => 1i32,
        default => 2i32,
    };
}

fn main() {}
