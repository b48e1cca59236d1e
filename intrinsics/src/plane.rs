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
use island_portable as portable;
use island_runtime::divergence::{Divergence, Of};
use island_runtime::prelude::*;
use island_runtime::quirks;
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
    check = [crate::plane::plane_sum_f32_w8, crate::plane::plane_sum_f32_w32, crate::plane::plane_sum_f32_w64, crate::plane::plane_sum_i32_w32],
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
    check = [crate::plane::plane_max_f32_w8, crate::plane::plane_max_f32_w32],
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
    check = crate::plane::group_max_f32_g8,
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
        crate::plane::shuffle_xor_w8,
        crate::plane::shuffle_xor_w32,
        crate::plane::partial_shuffle_xor_w8,
        crate::plane::partial_shuffle_xor_w32,
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
    check = [crate::plane::broadcast_w8, crate::plane::broadcast_w32],
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

// The checks: one per plane width, since `default` must know the width the arm computes
// with: 8 (lavapipe), 32 (NVIDIA, Apple, AMD wave32, most Vulkan), 64 (AMD wave64). Each check's
// cube holds two planes, so a reduction that leaks across planes shows.

#[islands]
#[cube]
pub fn plane_sum_f32_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => sum::call::<f32>(v, target),
        default => portable::tree_sum::<f32>(v, 8u32),
    }
}

#[islands]
#[cube]
pub fn plane_sum_f32_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | hip | vulkan | metal | webgpu if plane == 32 => sum::call::<f32>(v, target),
        default => portable::tree_sum::<f32>(v, 32u32),
    }
}

#[islands]
#[cube]
pub fn plane_sum_f32_w64(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 128;
        hip if plane == 64 => sum::call::<f32>(v, target),
        default => portable::tree_sum::<f32>(v, 64u32),
    }
}

#[islands]
#[cube]
pub fn plane_sum_i32_w32(v: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(v: i32) -> i32, cube_dim = 64;
        cuda | vulkan if plane == 32 => sum::call::<i32>(v, target),
        default => portable::tree_sum::<i32>(v, 32u32),
    }
}

#[islands]
#[cube]
pub fn plane_max_f32_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => max::call::<f32>(v, target),
        default => portable::tree_max::<f32>(v, 8u32),
    }
}

#[islands]
#[cube]
pub fn plane_max_f32_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan if plane == 32 => max::call::<f32>(v, target),
        default => portable::tree_max::<f32>(v, 32u32),
    }
}

#[islands]
#[cube]
pub fn group_max_f32_g8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | hip | vulkan | metal | webgpu if plane >= 8 => group_max::call::<f32>(v, 8u32, target),
        default => portable::tree_max::<f32>(v, 8u32),
    }
}

#[islands]
#[cube]
pub fn shuffle_xor_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => shuffle_xor::call::<f32>(v, 5u32, target),
        default => portable::group_read::<f32>(v, (UNIT_POS % 8) ^ 5, 8u32),
    }
}

#[islands]
#[cube]
pub fn shuffle_xor_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan | metal | webgpu if plane == 32 => shuffle_xor::call::<f32>(v, 21u32, target),
        default => portable::group_read::<f32>(v, (UNIT_POS % 32) ^ 21, 32u32),
    }
}

/// A shuffle over a partial plane: the lanes of an 8-lane plane at and past `n[0] % 9` hold no
/// data (their producer ran behind `if lane < n`), so a lane whose own value or whose partner's
/// is missing has no defined result. Proven modulo those lanes, with a taint run: neither side
/// may read a missing lane into a defined one.
#[islands]
#[cube]
pub fn partial_shuffle_xor_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 16,
            dont_care = UNIT_POS % 8 >= n[0] % 9 || (UNIT_POS % 8) ^ 1 >= n[0] % 9;
        vulkan if plane == 8 => v + shuffle_xor::call::<f32>(v, 1u32, target),
        default => v + portable::group_read::<f32>(v, (UNIT_POS % 8) ^ 1, 8u32),
    }
}

/// [`partial_shuffle_xor_w8`] on a 32-lane plane, partner `lane ^ 3`.
#[islands]
#[cube]
pub fn partial_shuffle_xor_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 64,
            dont_care = UNIT_POS % 32 >= n[0] % 33 || (UNIT_POS % 32) ^ 3 >= n[0] % 33;
        cuda | vulkan | metal | webgpu if plane == 32 => v + shuffle_xor::call::<f32>(v, 3u32, target),
        default => v + portable::group_read::<f32>(v, (UNIT_POS % 32) ^ 3, 32u32),
    }
}

#[islands]
#[cube]
pub fn broadcast_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => broadcast::call::<f32>(v, 3u32, target),
        default => portable::group_read::<f32>(v, 3u32, 8u32),
    }
}

#[islands]
#[cube]
pub fn broadcast_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan if plane == 32 => broadcast::call::<f32>(v, 17u32, target),
        default => portable::group_read::<f32>(v, 17u32, 32u32),
    }
}

// Measured divergences of these islands on devices (`island_runtime::quirks`): conformance
// declines the arm there, within the value groups measured, and launches take `default`.

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_SUBGROUP_SUBNORMALS,
    islands: &[
        concat!(module_path!(), "::plane_sum_f32_w32#0"),
        concat!(module_path!(), "::plane_max_f32_w32#0"),
        concat!(module_path!(), "::group_max_f32_g8#0"),
    ],
});

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::NVIDIA_VULKAN_SUM_OF_SHUFFLED_FLUSHES,
    islands: &[concat!(module_path!(), "::partial_shuffle_xor_w32#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::LAVAPIPE_SUBGROUP_ADD_ORDER,
    islands: &[concat!(module_path!(), "::plane_sum_f32_w8#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::LAVAPIPE_SUBGROUP_MAX_NANS_AND_ZEROS,
    islands: &[concat!(module_path!(), "::plane_max_f32_w8#0"), concat!(module_path!(), "::group_max_f32_g8#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::LAVAPIPE_WGSL_MAX_NANS_AND_ZEROS,
    islands: &[concat!(module_path!(), "::group_max_f32_g8#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Default,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_ARITHMETIC,
    islands: &[
        concat!(module_path!(), "::plane_sum_f32_w32#0"),
        concat!(module_path!(), "::plane_sum_f32_w64#0"),
        concat!(module_path!(), "::plane_sum_f32_w8#0"),
        concat!(module_path!(), "::plane_max_f32_w32#0"),
        concat!(module_path!(), "::plane_max_f32_w8#0"),
        concat!(module_path!(), "::group_max_f32_g8#0"),
        concat!(module_path!(), "::partial_shuffle_xor_w32#0"),
        concat!(module_path!(), "::partial_shuffle_xor_w8#0"),
    ],
});
