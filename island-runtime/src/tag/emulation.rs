//! Building blocks for emulating a target's plane (warp, wavefront, subgroup) on any runtime,
//! the CPU included: lanes exchange values through shared memory, with a barrier per step.
//!
//! The emulated plane is a group of `width` consecutive units of the cube (`UNIT_POS / width`),
//! exactly how CUDA, HIP, Vulkan and Metal carve a 1-D cube into planes. Every unit of the cube
//! must reach each call (the barriers are cube-wide), as with the native plane operations,
//! which need converged lanes.

use crate::tag::target::Target;
use cubecl::prelude::*;

/// The exchange buffer of an emulated plane operation holds one value per unit of the cube.
pub const MAX_CUBE_UNITS: usize = 1024;

/// The width of the plane whose semantics an arm has: the selected profile's, or the
/// hardware's for `default` arms.
pub fn width(target: &Target) -> u32 {
    target.plane()
}

/// This unit's lane in its (native or emulated) plane.
#[cube]
pub fn lane(#[comptime] target: Target) -> u32 {
    if target.is_native() { UNIT_POS_PLANE } else { UNIT_POS % comptime!(target.plane()) }
}

/// The value `lane ^ mask` holds, across a `width`-lane emulated plane.
#[cube]
pub fn shuffle_xor<T: CubePrimitive>(value: T, mask: u32) -> T {
    let mut exchange = Shared::<[T]>::new_slice(MAX_CUBE_UNITS);
    exchange[UNIT_POS as usize] = value;
    sync_cube();
    let other = exchange[(UNIT_POS ^ mask) as usize];
    sync_cube();
    other
}

/// The value lane `source` of this unit's `width`-lane emulated plane holds.
#[cube]
pub fn broadcast<T: CubePrimitive>(value: T, #[comptime] source: u32, #[comptime] width: u32) -> T {
    let mut exchange = Shared::<[T]>::new_slice(MAX_CUBE_UNITS);
    exchange[UNIT_POS as usize] = value;
    sync_cube();
    let base = UNIT_POS - UNIT_POS % width;
    let other = exchange[(base + source) as usize];
    sync_cube();
    other
}

/// The values of this unit's `width`-lane emulated plane, lane order, in registers: one
/// shared-memory exchange (two cube barriers, whatever the width).
#[cube]
pub fn gather<T: CubePrimitive>(value: T, #[comptime] width: u32) -> Array<T> {
    let mut exchange = Shared::<[T]>::new_slice(MAX_CUBE_UNITS);
    exchange[UNIT_POS as usize] = value;
    sync_cube();
    let base = (UNIT_POS - UNIT_POS % width) as usize;
    let mut lanes = Array::<T>::new(width as usize);
    #[unroll]
    for i in 0..width as usize {
        lanes[i] = exchange[base + i];
    }
    sync_cube();
    lanes
}

/// A reduction a plane can run: the operation each butterfly or tree step applies.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Max,
}

/// `a <op> b`, with `a` the left operand. The maximum of +0.0 and −0.0 is +0.0 in either
/// order, as CUDA's and NVIDIA Vulkan's plane maxima return it (measured on an H200); CubeCL's
/// `max` leaves that tie to the backend.
#[cube]
pub fn combine<T: Numeric>(a: T, b: T, #[comptime] op: Reduce) -> T {
    match op {
        Reduce::Sum => a + b,
        Reduce::Max => {
            let zero = T::from_int(0);
            if a == zero && b == zero { a + b } else { max(a, b) }
        }
    }
}

/// The reduction over a `width`-lane emulated plane, computed as the hardware's butterfly
/// network computes it: at offset 1, 2, 4, … every lane combines its own value with its
/// partner's (`lane ^ offset`). For a sum that is the order measured on CUDA's `plane_sum`:
/// neighbours first, `((x0 + x1) + (x2 + x3)) + …`.
#[cube]
pub fn butterfly<T: Numeric>(value: T, #[comptime] width: u32, #[comptime] op: Reduce) -> T {
    let mut v = gather::<T>(value, width);
    #[unroll]
    for level in 0..comptime!(width.trailing_zeros()) {
        let offset = comptime!(1usize << level);
        #[unroll]
        for i in 0..width as usize {
            if i & offset == 0 {
                let own = v[i];
                let other = v[i + offset];
                v[i] = combine::<T>(own, other, op);
                v[i + offset] = combine::<T>(other, own, op);
            }
        }
    }
    v[(UNIT_POS % width) as usize]
}
