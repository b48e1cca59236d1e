//! int8 GEMM on 16×16 tiles: `c[m×n] += a[m×k] · b[k×n]`, i8 inputs, i32 accumulation,
//! everything row-major. One 32-unit cube per output tile.
//!
//! The tile product is an island: tensor cores (`cmma`) where the device has the i8 16×16×16
//! shape, scalar loops in `default`. Integer accumulation wraps modulo 2³² and is therefore
//! exact in any order: the arm is byte-equal to `default` by construction of its emulation,
//! and the on-device conformance check shows the tensor cores agree.

use crate::error::ShapeError;
use cubecl::prelude::*;
use island_intrinsics::mma;
use island_runtime::prelude::*;

pub use crate::tile_shape::{TILE, UNITS};

/// The `default` tile product: lane `l` computes the 8 consecutive elements `8l … 8l + 7`.
#[cube]
pub fn tile_scalar(a: &[i8], lda: u32, b: &[i8], ldb: u32, acc: &mut [i32], ldc: u32, #[comptime] k_tiles: u32) {
    let lane = UNIT_POS % UNITS;
    #[unroll]
    for j in 0..8u32 {
        let e = lane * 8 + j;
        let row = e / TILE;
        let col = e % TILE;
        let mut sum = 0i32;
        for k in 0..k_tiles * TILE {
            sum += i32::cast_from(a[(row * lda + k) as usize]) * i32::cast_from(b[(k * ldb + col) as usize]);
        }
        acc[(row * ldc + col) as usize] += sum;
    }
}

#[islands]
#[cube(launch)]
pub fn gemm_i8(a: &[i8], b: &[i8], c: &mut [i32], #[comptime] k: u32, #[comptime] n: u32) {
    let lda = k;
    let ldb = n;
    let ldc = n;
    let k_tiles = comptime!(k / TILE);
    let a_tile = &a[(CUBE_POS_Y * TILE * k) as usize..];
    let b_tile = &b[(CUBE_POS_X * TILE) as usize..];
    let c_tile = &mut c[(CUBE_POS_Y * TILE * n + CUBE_POS_X * TILE) as usize..];
    island! {
        proof(a_tile: &[i8; crate::tile_shape::PROOF_TILE_VALUES], b_tile: &[i8; crate::tile_shape::PROOF_TILE_VALUES],
              c_tile: &mut [i32; crate::tile_shape::PROOF_OUT_VALUES],
              lda: u32 = TILE * crate::tile_shape::PROOF_K_TILES, ldb: u32 = TILE, ldc: u32 = TILE,
              k_tiles: u32 = crate::tile_shape::PROOF_K_TILES), cube_dim = UNITS;
        cuda | hip if cmma(i8, i8, i32, 16, 16, 16) => mma::tile_i8::call(a_tile, lda, b_tile, ldb, mma::Layout::RowMajor, c_tile, ldc, k_tiles, target),
        default => tile_scalar(a_tile, lda, b_tile, ldb, c_tile, ldc, k_tiles),
    }
}

/// Checks a shape before launch: every dimension a positive multiple of 16.
pub fn check(m: usize, k: usize, n: usize) -> Result<(), ShapeError> {
    crate::tile_shape::check("int8", m, k, n)
}

/// Refuses, before launch, a runtime whose language has no `i8` (WGSL): the kernel reads i8
/// buffers.
pub fn check_runtime(client: &Client) -> Result<(), ShapeError> {
    match island_runtime::missing_types::lacked_by(client, &["i8"]).as_slice() {
        [] => Ok(()),
        lacked => Err(ShapeError(format!(
            "the int8 GEMM reads {} buffers, which the language of `{}` lacks",
            lacked.join(", "),
            island_runtime::device::runtime_name(client)
        ))),
    }
}

/// Launches the GEMM (`c` must hold the initial accumulator) with the given tag.
///
/// # Safety
/// `a` must hold m·k i8, `b` k·n i8 and `c` m·n i32 values.
pub unsafe fn launch(
    client: &Client,
    (a, b, c): (&cubecl::server::Handle, &cubecl::server::Handle, &cubecl::server::Handle),
    (m, k, n): (usize, usize, usize),
    target: Target,
) {
    unsafe {
        gemm_i8::launch_with(
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

/// The plain-Rust reference.
pub fn reference(m: usize, k: usize, n: usize, a: &[i8], b: &[i8], c: &[i32]) -> Vec<i32> {
    let mut out = c.to_vec();
    for i in 0..m {
        for j in 0..n {
            let dot = (0..k).fold(0i32, |s, p| s.wrapping_add(a[i * k + p] as i32 * b[p * n + j] as i32));
            out[i * n + j] = out[i * n + j].wrapping_add(dot);
        }
    }
    out
}
