use cubecl::prelude::*;
use island_runtime::prelude::*;

#[islands]
#[cube(launch)]
fn in_one_pattern(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda | vulkan | cuda => 1i32,
        default => 2i32,
    };
}

#[islands]
#[cube(launch)]
fn in_two_arms(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda if sm >= 61 => 1i32,
        vulkan => 2i32,
        cuda if sm >= 61 => 3i32,
        default => 4i32,
    };
}

fn main() {}
