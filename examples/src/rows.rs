//! One 32-lane plane per row: the layout RMSNorm and the Q8_0 matvec share, and the island
//! that sums a row's 32 lane partials.

use cubecl::prelude::*;
use island_intrinsics::{plane, portable};
use island_runtime::divergence::{Divergence, Of};
use island_runtime::prelude::*;
use island_runtime::quirks;

/// Lanes per row: one 32-lane plane computes one output.
pub const LANES: u32 = 32;

/// Rows per cube: 4 on a GPU; 1 on the CPU runtime, which gives every unit of a cube with
/// barriers its own thread (the `default` row sum synchronises the cube).
pub fn rows_per_cube(client: &Client) -> u32 {
    if client.name() == "cpu" { 1 } else { 4 }
}

/// The sum of `value` over the 32 lanes of a row, received by every lane.
#[islands]
#[cube]
pub fn row_sum(value: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(value: f32) -> f32, cube_dim = 64;
        cuda | hip | vulkan | metal | webgpu if plane == 32 => plane::sum::call::<f32>(value, target),
        default => portable::tree_sum::<f32>(value, 32u32),
    }
}

/// `((x0 + x1) + (x2 + x3)) + …`: the butterfly order, for a power-of-two length.
pub fn pairwise_sum(values: &[f32]) -> f32 {
    if values.len() == 1 {
        return values[0];
    }
    let (lo, hi) = values.split_at(values.len() / 2);
    pairwise_sum(lo) + pairwise_sum(hi)
}

// Measured divergences of these islands on devices (`island_runtime::quirks`): conformance
// declines the arm there, within the value groups measured, and launches take `default`.

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_SUBGROUP_SUBNORMALS,
    islands: &[concat!(module_path!(), "::row_sum#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Default,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_ARITHMETIC,
    islands: &[concat!(module_path!(), "::row_sum#0"),],
});
