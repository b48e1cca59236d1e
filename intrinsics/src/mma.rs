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
use island_runtime::emulation;

/// Tile edge.
pub const TILE: usize = 16;

/// `acc += a · b` for i8 tiles with i32 accumulation; `a` is 16×(16·k_tiles) with row stride
/// `lda`, `b` is (16·k_tiles)×16 with row stride `ldb`, `acc` is 16×16 with row stride `ldc`.
#[cube]
pub fn tile_i8(
    a: &[i8],
    lda: u32,
    b: &[i8],
    ldb: u32,
    acc: &mut [i32],
    ldc: u32,
    #[comptime] k_tiles: u32,
    #[comptime] target: Target,
) {
    if target.is_native() {
        let c = cmma::Matrix::<i32>::from_slice(
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
            let b_off = (kt * 16 * ldb) as usize;
            let fa = cmma::Matrix::<i8>::from_slice(
                cmma::MatrixIdent::A,
                TILE,
                TILE,
                TILE,
                cmma::MatrixLayout::RowMajor,
                &a[a_off..a.len()],
                lda,
            );
            let fb = cmma::Matrix::<i8>::from_slice(
                cmma::MatrixIdent::B,
                TILE,
                TILE,
                TILE,
                cmma::MatrixLayout::RowMajor,
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
                let x = i32::cast_from(a[(row * lda + k) as usize]);
                let y = i32::cast_from(b[(k * ldb + col) as usize]);
                sum += x * y;
            }
            acc[(row * ldc + col) as usize] = sum;
        }
    }
}
