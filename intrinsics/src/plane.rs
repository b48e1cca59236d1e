//! Plane (warp, wavefront, subgroup, SIMD-group) operations with the selected target's lane
//! count: 32 on CUDA and Metal, 32 or 64 on HIP, the device's subgroup size on Vulkan (8 on
//! lavapipe).
//!
//! Native lowering: `__shfl_xor_sync` / `__reduce_*` on CUDA, `__shfl_xor` on HIP,
//! `OpGroupNonUniform*` on Vulkan, `subgroup*` in WGSL, `simd_*` on Metal. Emulation: the
//! lanes of a plane exchange values through shared memory (see
//! `island_runtime::emulation`), reducing in the butterfly order the hardware uses (xor
//! offsets 1, 2, 4, …, neighbours first), which was measured equal to CUDA's `plane_sum` bit
//! for bit.

use cubecl::prelude::*;
use island_runtime::Target;
use island_runtime::emulation;

/// This unit's lane in its plane.
#[cube]
pub fn lane(#[comptime] target: Target) -> u32 {
    emulation::lane(target)
}

/// The plane width the arm computes with (a comptime value).
pub fn width(target: &Target) -> u32 {
    emulation::width(target)
}

/// The sum over the plane; every lane receives it.
#[cube]
pub fn sum<T: Numeric>(value: T, #[comptime] target: Target) -> T {
    if target.is_native() {
        plane_sum(value)
    } else {
        emulation::butterfly::<T>(value, comptime!(target.plane()), emulation::Reduce::Sum)
    }
}

/// The maximum over the plane; every lane receives it.
#[cube]
pub fn max<T: Numeric>(value: T, #[comptime] target: Target) -> T {
    if target.is_native() {
        plane_max(value)
    } else {
        emulation::butterfly::<T>(value, comptime!(target.plane()), emulation::Reduce::Max)
    }
}

/// The maximum over each aligned group of `width` lanes (a power of two, at most the plane
/// width); every lane of the group receives it. Native: xor shuffles at offsets 1, 2, …,
/// `width / 2`, each lane taking `max(own, partner)`. Emulated: the same butterfly over the
/// group's values, gathered in one exchange.
#[cube]
pub fn group_max<T: Numeric>(value: T, #[comptime] width: u32, #[comptime] target: Target) -> T {
    if target.is_native() {
        group_max_native::<T>(value, width)
    } else {
        emulation::butterfly::<T>(value, width, emulation::Reduce::Max)
    }
}

/// The native lowering of [`group_max`], for kernels written for devices with planes alone.
#[cube]
pub fn group_max_native<T: Numeric>(value: T, #[comptime] width: u32) -> T {
    let mut m = value;
    #[unroll]
    for level in 0..comptime!(width.trailing_zeros()) {
        m = cubecl::prelude::max(m, plane_shuffle_xor(m, comptime!(1u32 << level)));
    }
    m
}

/// The value held by lane `lane ^ mask` (mask below the plane width).
#[cube]
pub fn shuffle_xor<T: CubePrimitive>(value: T, mask: u32, #[comptime] target: Target) -> T {
    if target.is_native() {
        plane_shuffle_xor(value, mask)
    } else {
        emulation::shuffle_xor::<T>(value, mask)
    }
}

/// The value held by lane `source` (a constant) of this plane.
#[cube]
pub fn broadcast<T: CubePrimitive>(value: T, #[comptime] source: u32, #[comptime] target: Target) -> T {
    if target.is_native() {
        plane_broadcast(value, source)
    } else {
        emulation::broadcast::<T>(value, source, comptime!(target.plane()))
    }
}
