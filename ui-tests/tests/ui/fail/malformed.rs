use cubecl::prelude::*;
use island_runtime::prelude::*;

#[islands]
#[cube(launch)]
fn missing_arrow(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda 1i32,
        default => 2i32,
    };
}

#[islands]
#[cube(launch)]
fn unknown_capability(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda if tensor_cores => 1i32,
        default => 2i32,
    };
}

#[islands]
#[cube(launch)]
fn guard_on_default(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda => 1i32,
        default if dp4a => 2i32,
    };
}

#[islands]
#[cube(launch)]
fn proof_without_semicolon(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(x: i32) -> i32
        cuda => 1i32,
        default => 2i32,
    };
}

fn main() {}
