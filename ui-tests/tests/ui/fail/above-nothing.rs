use island_runtime::prelude::*;

// `#[islands]` needs a `#[cube]` below it.
#[islands]
fn not_a_kernel(x: i32) -> i32 {
    x
}

fn main() {
    let _ = not_a_kernel(1);
}
