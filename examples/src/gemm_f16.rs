//! f16 GEMM on 16×16 tiles: `c[m×n] += a[m×k] · b[k×n]`, f16 inputs, f32 accumulation,
//! everything row-major. One 32-unit cube per output tile, one tensor-core step per 16 of `k`.
//!
//! The tile product is an island: tensor cores (`cmma`) where the device has the f16 shape,
//! and in `default` the same arithmetic written portably ([`portable::tile_f16_fused`]: the
//! measured model of sm_90's tensor cores). On sm_90 the arm is held to bit equality; on devices
//! whose tensor-core arithmetic has no measured model the contract is a tolerance, and the gate
//! keeps `default` there (every backend then computes sm_90's bytes).

use crate::error::ShapeError;
use cubecl::prelude::*;
use half::f16;
use island_intrinsics::tensor_core::{Format, FusedDot};
use island_intrinsics::{mma, portable};
use island_runtime::prelude::*;

pub use crate::tile_shape::{TILE, UNITS};

#[islands]
#[cube(launch)]
pub fn gemm_f16(a: &[f16], b: &[f16], c: &mut [f32], #[comptime] k: u32, #[comptime] n: u32) {
    let lda = k;
    let ldb = n;
    let ldc = n;
    let k_tiles = comptime!(k / TILE);
    let a_tile = &a[(CUBE_POS_Y * TILE * k) as usize..];
    let b_tile = &b[(CUBE_POS_X * TILE) as usize..];
    let c_tile = &mut c[(CUBE_POS_Y * TILE * n + CUBE_POS_X * TILE) as usize..];
    island! {
        proof(a_tile: &[f16; crate::tile_shape::PROOF_TILE_VALUES], b_tile: &[f16; crate::tile_shape::PROOF_TILE_VALUES],
              c_tile: &mut [f32; crate::tile_shape::PROOF_OUT_VALUES],
              lda: u32 = TILE * crate::tile_shape::PROOF_K_TILES, ldb: u32 = TILE, ldc: u32 = TILE,
              k_tiles: u32 = crate::tile_shape::PROOF_K_TILES), cube_dim = UNITS,
            contract = accumulation(80, "tensor-core f16 accumulation without a measured model of the device",
                                    exact_where = mma::f16_modelled);
        cuda if cmma(f16, f16, f32, 16, 16, 16) => mma::tile_f16::call(a_tile, lda, b_tile, ldb, c_tile, ldc, k_tiles, target),
        default => portable::tile_f16_fused(a_tile, lda, b_tile, ldb, c_tile, ldc, k_tiles),
    }
}

/// Checks a shape before launch: every dimension a positive multiple of 16.
pub fn check(m: usize, k: usize, n: usize) -> Result<(), ShapeError> {
    crate::tile_shape::check("f16", m, k, n)
}

/// Launches the GEMM (`c` must hold the initial accumulator) with the given tag.
///
/// # Safety
/// `a` must hold m·k f16, `b` k·n f16 and `c` m·n f32 values.
pub unsafe fn launch(
    client: &Client,
    (a, b, c): (&cubecl::server::Handle, &cubecl::server::Handle, &cubecl::server::Handle),
    (m, k, n): (usize, usize, usize),
    target: Target,
) {
    unsafe {
        gemm_f16::launch_with(
            client,
            crate::tile_shape::cube_count(m, n),
            CubeDim::new_1d(UNITS),
            BufferArg::from_raw_parts(a.clone(), m * k),
            BufferArg::from_raw_parts(b.clone(), k * n),
            BufferArg::from_raw_parts(c.clone(), m * n),
            k as u32,
            n as u32,
            target,
        );
    }
}

/// The plain-Rust reference: the sm_90 model ([`FusedDot::SM90`]), one step per 16 of `k`.
pub fn reference(m: usize, k: usize, n: usize, a: &[f16], b: &[f16], c: &[f32]) -> Vec<f32> {
    let mut out = c.to_vec();
    for i in 0..m {
        for j in 0..n {
            let mut d = c[i * n + j].to_bits();
            for step in 0..k / 16 {
                let av: [u16; 16] = std::array::from_fn(|p| a[i * k + step * 16 + p].to_bits());
                let bv: [u16; 16] = std::array::from_fn(|p| b[(step * 16 + p) * n + j].to_bits());
                d = FusedDot::SM90.dot(Format::F16, &av, &bv, d);
            }
            out[i * n + j] = f32::from_bits(d);
        }
    }
    out
}
