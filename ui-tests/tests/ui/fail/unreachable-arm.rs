use cubecl::prelude::*;
use island_runtime::prelude::*;

#[islands]
#[cube(launch)]
fn shadowed(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda | vulkan => 1i32,
        cuda if sm >= 80 => 2i32,
        default => 3i32,
    };
}

#[islands]
#[cube(launch)]
fn after_default(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        default => 1i32,
        cuda => 2i32,
    };
}

fn main() {}
