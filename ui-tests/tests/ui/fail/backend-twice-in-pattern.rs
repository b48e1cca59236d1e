use cubecl::prelude::*;
use island_runtime::prelude::*;

// One backend twice in one pattern.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda | vulkan | cuda => 1i32,
        default => 2i32,
    };
}

fn main() {}
