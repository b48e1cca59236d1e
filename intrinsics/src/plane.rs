//! Plane (warp, wavefront, subgroup, SIMD-group) operations with the selected target's lane
//! count: 32 on CUDA and Metal, 32 or 64 on HIP, the device's subgroup size on Vulkan (8 on
//! lavapipe). Each is an intrinsic: `plane::sum::call::<f32>(v, target)`.
//!
//! Native lowerings: CubeCL's plane operations, whose instructions each intrinsic's
//! `lowerings(…)` names per backend. Emulation: the lanes of a plane exchange values through
//! shared memory (`island_runtime::emulation`), reducing in the butterfly order the hardware
//! uses (xor offsets 1, 2, 4, …, neighbours first), measured equal to CUDA's `plane_sum` bit
//! for bit.

use cubecl::prelude::*;
use island_runtime::{Target, emulation, intrinsic};

/// This unit's lane in its (native or emulated) plane.
#[cube]
pub fn lane(#[comptime] target: Target) -> u32 {
    emulation::lane(target)
}

/// The sum over the plane; every lane receives it.
#[intrinsic(
    name = "plane::sum",
    semantics = float_device_defined("the order of a float subgroup reduction and its handling of subnormals and signed zeros"),
    summary = "sum over the plane in butterfly order (xor 1, 2, 4, …), every lane receives it; f32 or wrapping i32",
    check = [crate::checks::plane_sum_f32_w8, crate::checks::plane_sum_f32_w32, crate::checks::plane_sum_f32_w64, crate::checks::plane_sum_i32_w32],
    lowerings(
        cuda => "__shfl_xor_sync" sass "SHFL.BFLY",
        hip => "__shfl_xor",
        vulkan => "OpGroupNonUniformFAdd",
        vulkan => "OpGroupNonUniformIAdd",
        metal => "simd_sum",
        webgpu => "subgroupAdd",
    ),
)]
pub mod sum {
    use cubecl::prelude::*;
    use island_runtime::{Target, emulation};

    #[cube]
    pub fn native<T: Numeric>(value: T) -> T {
        plane_sum(value)
    }

    #[cube]
    pub fn emulate<T: Numeric>(value: T, #[comptime] target: Target) -> T {
        emulation::butterfly::<T>(value, comptime!(target.plane()), emulation::Reduce::Sum)
    }
}

/// The maximum over the plane; every lane receives it.
#[intrinsic(
    name = "plane::max",
    semantics = float_device_defined("a float subgroup maximum's handling of NaNs, subnormals and signed zeros"),
    summary = "maximum over the plane, every lane receives it",
    check = [crate::checks::plane_max_f32_w8, crate::checks::plane_max_f32_w32],
    lowerings(cuda => "__shfl_xor_sync" sass "SHFL.BFLY", vulkan => "OpGroupNonUniformFMax"),
)]
pub mod max {
    use cubecl::prelude::*;
    use island_runtime::{Target, emulation};

    #[cube]
    pub fn native<T: Numeric>(value: T) -> T {
        plane_max(value)
    }

    #[cube]
    pub fn emulate<T: Numeric>(value: T, #[comptime] target: Target) -> T {
        emulation::butterfly::<T>(value, comptime!(target.plane()), emulation::Reduce::Max)
    }
}

/// The maximum over each aligned group of `width` lanes (a power of two, at most the plane
/// width); every lane of the group receives it. Native: xor shuffles at offsets 1, 2, …,
/// `width / 2`, each lane taking `max(own, partner)`. Emulated: the same butterfly over the
/// group's values, gathered in one exchange.
#[intrinsic(
    name = "plane::group_max",
    semantics = float_device_defined("a float subgroup maximum's handling of NaNs, subnormals and signed zeros"),
    summary = "maximum over each aligned group of lanes (8 in the check), every lane of the group receives it",
    check = crate::checks::group_max_f32_g8,
    lowerings(
        cuda => "__shfl_xor_sync" sass "SHFL.BFLY",
        hip => "__shfl_xor",
        vulkan => "OpGroupNonUniformShuffleXor",
        metal => "simd_shuffle_xor",
        webgpu => "subgroupShuffleXor",
    ),
)]
pub mod group_max {
    use cubecl::prelude::*;
    use island_runtime::emulation;

    /// The native lowering, also for kernels written for devices with planes alone.
    #[cube]
    pub fn native<T: Numeric>(value: T, #[comptime] width: u32) -> T {
        let mut m = value;
        #[unroll]
        for level in 0..comptime!(width.trailing_zeros()) {
            m = cubecl::prelude::max(m, plane_shuffle_xor(m, comptime!(1u32 << level)));
        }
        m
    }

    #[cube]
    pub fn emulate<T: Numeric>(value: T, #[comptime] width: u32) -> T {
        emulation::butterfly::<T>(value, width, emulation::Reduce::Max)
    }
}

/// The value held by lane `lane ^ mask` (mask below the plane width).
#[intrinsic(
    name = "plane::shuffle_xor",
    semantics = defined,
    summary = "the value of lane `lane ^ mask`",
    check = [
        crate::checks::shuffle_xor_w8,
        crate::checks::shuffle_xor_w32,
        crate::checks::partial_shuffle_xor_w8,
        crate::checks::partial_shuffle_xor_w32,
    ],
    lowerings(
        cuda => "__shfl_xor_sync" sass "SHFL.BFLY",
        vulkan => "OpGroupNonUniformShuffleXor",
        metal => "simd_shuffle_xor",
        webgpu => "subgroupShuffleXor",
    ),
)]
pub mod shuffle_xor {
    use cubecl::prelude::*;
    use island_runtime::emulation;

    #[cube]
    pub fn native<T: CubePrimitive>(value: T, mask: u32) -> T {
        plane_shuffle_xor(value, mask)
    }

    #[cube]
    pub fn emulate<T: CubePrimitive>(value: T, mask: u32) -> T {
        emulation::shuffle_xor::<T>(value, mask)
    }
}

/// The value held by lane `source` (a constant) of this plane.
#[intrinsic(
    name = "plane::broadcast",
    semantics = defined,
    summary = "the value of a given lane",
    check = [crate::checks::broadcast_w8, crate::checks::broadcast_w32],
    lowerings(cuda => "__shfl_sync" sass "SHFL.IDX", vulkan => "OpGroupNonUniformBroadcast"),
)]
pub mod broadcast {
    use cubecl::prelude::*;
    use island_runtime::{Target, emulation};

    #[cube]
    pub fn native<T: CubePrimitive>(value: T, #[comptime] source: u32) -> T {
        plane_broadcast(value, source)
    }

    #[cube]
    pub fn emulate<T: CubePrimitive>(value: T, #[comptime] source: u32, #[comptime] target: Target) -> T {
        emulation::broadcast::<T>(value, source, comptime!(target.plane()))
    }
}
