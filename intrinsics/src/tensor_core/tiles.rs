//! Kernels that run one 16×16×16 tile MMA per cube over many tiles: how a model is measured
//! against a device (`islands tensor-core`) and its CubeCL emulation against the plain-Rust one.
//! Tile `t` is cube `CUBE_POS_X + CUBE_POS_Y · CUBE_COUNT_X`, at element `256 · t` of every buffer.

use crate::mma;
use cubecl::prelude::*;
use half::{bf16, f16};
use island_runtime::Target;

use super::FusedDot;

/// `c[t] += a[t] · b[t]` for every tile `t`, f16 → f32: natively the tensor cores, emulated
/// with `model` ([`mma::tile_f16_with`]).
#[cube(launch)]
pub fn tiles_f16(a: &[f16], b: &[f16], c: &mut [f32], #[comptime] model: Option<FusedDot>, #[comptime] target: Target) {
    let base = ((CUBE_POS_X + CUBE_POS_Y * CUBE_COUNT_X) * 256) as usize;
    mma::tile_f16_with(&a[base..], 16u32, &b[base..], 16u32, &mut c[base..], 16u32, 1u32, model, target);
}

/// The same for bf16 inputs. Natively only: there is no bf16 emulation of the model in CubeCL
/// (the plain-Rust [`FusedDot`] covers bf16), so off the device this adds in `k` order.
#[cube(launch)]
pub fn tiles_bf16(a: &[bf16], b: &[bf16], c: &mut [f32], #[comptime] target: Target) {
    let base = ((CUBE_POS_X + CUBE_POS_Y * CUBE_COUNT_X) * 256) as usize;
    mma::tile::<bf16, f32>(
        &a[base..],
        16u32,
        &b[base..],
        16u32,
        mma::Layout::RowMajor,
        &mut c[base..],
        16u32,
        1u32,
        target,
    );
}
