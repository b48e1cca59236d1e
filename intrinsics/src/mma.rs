//! Cooperative matrix multiply-accumulate on 16×16×16 tiles, executed by one plane.
//!
//! `acc[16×16] += a[16×k] · b[k×16]`, row-major everywhere, over `k_tiles` steps of 16.
//!
//! Native lowering: `wmma::mma_sync` / `mma.sync` on CUDA, rocWMMA / `v_wmma_*` on HIP,
//! `OpCooperativeMatrixMulAddKHR` on Vulkan, `simdgroup_multiply_accumulate` on Metal (8×8).
//! Emulation: each lane computes the output elements `lane, lane + width, …` of the tile with
//! scalar code. For i8 → i32 the result is exact whatever the hardware's order (wrapping
//! integer addition is associative). For f16 → f32 the products are exact in f32 and the
//! emulation adds them in `k` order; tensor cores add in an unspecified order and internal
//! precision, so that variant's contract is a tolerance, not bit equality.

use cubecl::prelude::*;
use island_runtime::Target;
use half::f16;
use island_runtime::emulation;

/// Tile edge.
pub const TILE: usize = 16;

/// How a tile is laid out in memory.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Layout {
    /// Element `(r, c)` at `r * stride + c`.
    RowMajor,
    /// Element `(r, c)` at `c * stride + r`.
    ColMajor,
}

impl Layout {
    fn cmma(self) -> cmma::MatrixLayout {
        match self {
            Layout::RowMajor => cmma::MatrixLayout::RowMajor,
            Layout::ColMajor => cmma::MatrixLayout::ColMajor,
        }
    }
}

/// `acc += a · b` for i8 tiles with i32 accumulation; `a` is 16×(16·k_tiles) row-major with
/// stride `lda`, `b` is (16·k_tiles)×16 laid out as `b_layout` with stride `ldb`, `acc` is
/// 16×16 row-major with stride `ldc`. Exact on every backend (wrapping integer sums).
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn tile_i8(
    a: &[i8],
    lda: u32,
    b: &[i8],
    ldb: u32,
    #[comptime] b_layout: Layout,
    acc: &mut [i32],
    ldc: u32,
    #[comptime] k_tiles: u32,
    #[comptime] target: Target,
) {
    tile::<i8, i32>(a, lda, b, ldb, b_layout, acc, ldc, k_tiles, target);
}

/// `acc += a · b` for f16 tiles with f32 accumulation (row-major everywhere).
///
/// The emulation adds each product (exact in f32) to the accumulator in `k` order. Tensor cores
/// add in an order and internal precision NVIDIA does not specify, so a native result may
/// differ from the emulation in the last bits: this variant's contract is a tolerance.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn tile_f16(
    a: &[f16],
    lda: u32,
    b: &[f16],
    ldb: u32,
    acc: &mut [f32],
    ldc: u32,
    #[comptime] k_tiles: u32,
    #[comptime] target: Target,
) {
    tile::<f16, f32>(a, lda, b, ldb, Layout::RowMajor, acc, ldc, k_tiles, target);
}

/// The tile product for inputs `I` and accumulator `O`: fragments and `cmma::execute` natively;
/// otherwise each lane computes the outputs `lane, lane + width, …`, adding the products (exact
/// in `O`) to the accumulator in `k` order.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn tile<I: Numeric, O: Numeric>(
    a: &[I],
    lda: u32,
    b: &[I],
    ldb: u32,
    #[comptime] b_layout: Layout,
    acc: &mut [O],
    ldc: u32,
    #[comptime] k_tiles: u32,
    #[comptime] target: Target,
) {
    if target.is_native() {
        let c = cmma::Matrix::<O>::from_slice(
            cmma::MatrixIdent::Accumulator,
            TILE,
            TILE,
            TILE,
            cmma::MatrixLayout::RowMajor,
            &acc[0..acc.len()],
            ldc,
        );
        #[unroll]
        for kt in 0..k_tiles {
            let a_off = (kt * 16) as usize;
            // Where the k-th step of B starts: 16 rows down, or 16 columns right.
            let b_off = match b_layout {
                Layout::RowMajor => (kt * 16 * ldb) as usize,
                Layout::ColMajor => ((kt * 16) as usize).runtime(),
            };
            let fa = cmma::Matrix::<I>::from_slice(
                cmma::MatrixIdent::A,
                TILE,
                TILE,
                TILE,
                cmma::MatrixLayout::RowMajor,
                &a[a_off..a.len()],
                lda,
            );
            let fb = cmma::Matrix::<I>::from_slice(
                cmma::MatrixIdent::B,
                TILE,
                TILE,
                TILE,
                comptime!(b_layout.cmma()),
                &b[b_off..b.len()],
                ldb,
            );
            cmma::execute(&fa, &fb, &c, &c);
        }
        cmma::store(acc, &c, ldc, cmma::MatrixLayout::RowMajor);
    } else {
        let width = comptime!(emulation::width(&target));
        let lane = UNIT_POS % width;
        #[unroll]
        for j in 0..comptime!(256 / width) {
            let e = lane + j * width;
            let row = e / 16;
            let col = e % 16;
            let mut sum = acc[(row * ldc + col) as usize];
            for k in 0..k_tiles * 16 {
                let x = O::cast_from(a[(row * lda + k) as usize]);
                let y = match b_layout {
                    Layout::RowMajor => O::cast_from(b[(k * ldb + col) as usize]),
                    Layout::ColMajor => O::cast_from(b[(col * ldb + k) as usize]),
                };
                sum += x * y;
            }
            acc[(row * ldc + col) as usize] = sum;
        }
    }
}
