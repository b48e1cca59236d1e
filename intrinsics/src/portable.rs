//! Portable formulations an island's `default` arm can use: plain CubeCL that runs on every
//! runtime (shared memory and barriers, no plane operations), written to define the order of
//! operations the accelerated arms reproduce.

use cubecl::prelude::*;
use island_runtime::emulation::{MAX_CUBE_UNITS, Reduce, combine, gather};

/// The sum of `value` over each group of `width` consecutive units, received by every unit of
/// the group: a pairwise tree, neighbours first (`((x0 + x1) + (x2 + x3)) + …`), the order of
/// a plane butterfly. The group's values meet in shared memory once; each unit then reduces
/// them in registers, so the whole sum costs two cube barriers whatever the width.
///
/// Every unit of the cube must call it (it synchronises the cube).
#[cube]
pub fn tree_sum<T: Numeric>(value: T, #[comptime] width: u32) -> T {
    tree::<T>(value, width, Reduce::Sum)
}

/// The maximum of `value` over each group of `width` consecutive units, received by every
/// unit: the same exchange and tree as [`tree_sum`].
#[cube]
pub fn tree_max<T: Numeric>(value: T, #[comptime] width: u32) -> T {
    tree::<T>(value, width, Reduce::Max)
}

/// The pairwise tree of [`tree_sum`] for any [`Reduce`].
#[cube]
pub fn tree<T: Numeric>(value: T, #[comptime] width: u32, #[comptime] op: Reduce) -> T {
    let mut v = gather::<T>(value, width);
    #[unroll]
    for level in 0..comptime!(width.trailing_zeros()) {
        let stride = comptime!(1usize << level);
        #[unroll]
        for i in 0..width as usize {
            if i % (2 * stride) == 0 {
                v[i] = combine::<T>(v[i], v[i + stride], op);
            }
        }
    }
    v[0]
}

/// The value unit `source` of this unit's `width`-unit group holds (`source` may be
/// `lane ^ mask` for a shuffle), through shared memory.
#[cube]
pub fn group_read<T: CubePrimitive>(value: T, source: u32, #[comptime] width: u32) -> T {
    let mut slots = Shared::<[T]>::new_slice(MAX_CUBE_UNITS);
    slots[UNIT_POS as usize] = value;
    sync_cube();
    let base = UNIT_POS - UNIT_POS % width;
    let other = slots[(base + source) as usize];
    sync_cube();
    other
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
