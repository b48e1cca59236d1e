use cubecl::prelude::*;
use island_runtime::prelude::*;

// An option of `#[islands]` the SDK does not know.
#[islands(strict)]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda => 1i32,
        default => 2i32,
    };
}

fn main() {}
