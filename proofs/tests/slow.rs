//! A fixture for the speed gate: an arm that is bit-exact and slow. Its `vulkan` arm computes
//! the same dot product as `default`, after a 4096-step xorshift chain the compiler cannot fold
//! away (the chain never reaches 0 from a nonzero seed, but nothing tells the compiler so). The
//! gate must decline it on a device; `ledger::gate_declines_a_slow_arm` checks that it does.

use cubecl::prelude::*;
use island_intrinsics::{dp4a, portable};
use island_runtime::prelude::*;

/// `dp4a(a, b, c)`, after thousands of operations that do not change it.
#[cube]
fn slow_dot(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    let mut s = u32::cast_from(a) | 1u32;
    for _ in 0..4096u32 {
        s ^= s << 13u32;
        s ^= s >> 17u32;
        s ^= s << 5u32;
    }
    let dot = dp4a::call(a, b, c, target);
    select(s == 0u32, 0i32, dot)
}

#[islands]
#[cube]
pub fn slow_arm(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        vulkan if dp4a => slow_dot(a, b, c, target),
        default => portable::dot4_i8(a, b, c),
    }
}
