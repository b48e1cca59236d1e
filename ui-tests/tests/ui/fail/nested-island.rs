use cubecl::prelude::*;
use island_runtime::prelude::*;

// An island inside another island's arm.
#[islands]
#[cube(launch)]
fn kernel(out: &mut [u32]) {
    out[ABSOLUTE_POS] = island! {
        cuda => island! {
            cuda if plane == 32 => 2u32,
            default => 1u32,
        },
        default => 1u32,
    };
}

fn main() {}
