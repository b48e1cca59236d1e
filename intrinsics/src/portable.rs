//! Portable formulations an island's `default` arm can use: plain CubeCL that runs on every
//! runtime (shared memory and barriers, no plane operations), written to define the order of
//! operations the accelerated arms reproduce.

use cubecl::prelude::*;
use island_runtime::emulation::MAX_CUBE_UNITS;

/// The sum of `value` over each group of `width` consecutive units, received by every unit of
/// the group: a pairwise tree in shared memory, neighbours first
/// (`((x0 + x1) + (x2 + x3)) + …`), the order of a plane butterfly.
///
/// Every unit of the cube must call it (it synchronises the cube).
#[cube]
pub fn tree_sum<T: Numeric>(value: T, #[comptime] width: u32) -> T {
    let mut partial = Shared::<[T]>::new_slice(MAX_CUBE_UNITS);
    let unit = UNIT_POS as usize;
    partial[unit] = value;
    sync_cube();
    let lane = UNIT_POS % width;
    #[unroll]
    for level in 0..comptime!(width.trailing_zeros()) {
        let stride = 1u32 << level;
        if lane % (2 * stride) == 0 {
            partial[unit] = partial[unit] + partial[unit + stride as usize];
        }
        sync_cube();
    }
    let total = partial[(UNIT_POS - lane) as usize];
    sync_cube();
    total
}

/// `c + Σ a[i]·b[i]` over four packed signed bytes, byte by byte with masks: a formulation
/// independent of [`crate::dp4a::emulate`] (which sign-extends by shifting).
#[cube]
pub fn dot4_i8(a: i32, b: i32, c: i32) -> i32 {
    let mut acc = c;
    #[unroll]
    for byte in 0..4i32 {
        let x = ((a >> (8 * byte)) & 0xff ^ 0x80) - 0x80;
        let y = ((b >> (8 * byte)) & 0xff ^ 0x80) - 0x80;
        acc += x * y;
    }
    acc
}
