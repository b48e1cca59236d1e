use cubecl::prelude::*;
use island_runtime::prelude::*;

// A `default` that calls the emulation its arm is proven with: the proof would compare the
// emulation with itself.
#[islands]
#[cube]
fn dot(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        cuda => island_intrinsics::dp4a::call(a, b, c, target),
        default => island_intrinsics::dp4a::emulate(a, b, c),
    }
}

fn main() {}
