//! Building blocks for emulating a target's plane (warp, wavefront, subgroup) on any runtime,
//! the CPU included: lanes exchange values through shared memory, with a barrier per step.
//!
//! The emulated plane is a group of `width` consecutive units of the cube (`UNIT_POS / width`),
//! exactly how CUDA, HIP, Vulkan and Metal carve a 1-D cube into planes. Every unit of the cube
//! must reach each call (the barriers are cube-wide), as with the native plane operations,
//! which need converged lanes.

use crate::Target;
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
    if target.is_native() {
        UNIT_POS_PLANE
    } else {
        UNIT_POS % comptime!(target.plane())
    }
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

/// The sum over a `width`-lane emulated plane, in the order of a hardware butterfly with xor
/// offsets 1, 2, 4, …: neighbours first, `((x0 + x1) + (x2 + x3)) + …`.
///
/// Each step adds the lower lane's value first, so every lane computes lane 0's exact bits
/// (on hardware all lanes agree too, commutativity aside, which only matters for NaN payloads).
#[cube]
pub fn butterfly_sum<T: Numeric>(value: T, #[comptime] width: u32) -> T {
    let mut v = value;
    let lane = UNIT_POS % width;
    #[unroll]
    for level in 0..comptime!(width.trailing_zeros()) {
        let offset = 1u32 << level;
        let other = shuffle_xor::<T>(v, offset);
        if lane & offset == 0 {
            v = v + other;
        } else {
            v = other + v;
        }
    }
    v
}

/// The maximum over a `width`-lane emulated plane, in butterfly order (lower lane first).
#[cube]
pub fn butterfly_max<T: Numeric>(value: T, #[comptime] width: u32) -> T {
    let mut v = value;
    let lane = UNIT_POS % width;
    #[unroll]
    for level in 0..comptime!(width.trailing_zeros()) {
        let offset = 1u32 << level;
        let other = shuffle_xor::<T>(v, offset);
        if lane & offset == 0 {
            v = max(v, other);
        } else {
            v = max(other, v);
        }
    }
    v
}
