use cubecl::prelude::*;
use island_runtime::prelude::*;

// `island!` in plain Rust.
fn host() -> i32 {
    island! { cuda => 1, default => 2 }
}

fn main() {
    let _ = host();
}
