use cubecl::prelude::*;
use island_runtime::prelude::*;

// `#[cube]` without `#[islands]` above it.
#[cube(launch)]
fn kernel(out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        cuda => 1i32,
        default => 2i32,
    };
}

// Plain Rust.
fn host() -> i32 {
    island! { cuda => 1, default => 2 }
}

fn main() {
    let _ = host();
}
