//! Cooperative matrix multiply-accumulate on 16×16×16 tiles, executed by one plane.
//!
//! `acc[16×16] += a[16×k] · b[k×16]`, row-major everywhere, over `k_tiles` steps of 16.
//!
//! Native lowerings (the rows of `tile_i8` and `tile_f16`): CubeCL's cooperative matrices,
//! `wmma::mma_sync` on CUDA and `rocwmma::mma_sync` on HIP (i8 only). Other backends run the
//! emulation. Emulation: each lane computes the output elements `lane, lane + width, …` of the tile with
//! scalar code. For i8 → i32 the result is exact whatever the hardware's order (wrapping
//! integer addition is associative). For f16 → f32 the emulation reproduces the measured model
//! of the profile's tensor cores where there is one ([`f16_model`]: sm_90, bit for bit, see
//! [`crate::tensor_core`]); elsewhere it adds the exact products in `k` order, and the contract
//! there is a tolerance, not bit equality.

use cubecl::prelude::*;
use half::f16;
use island_portable as portable;
use island_runtime::prelude::*;
use island_runtime::{Backend, Profile, Target, intrinsic};

use crate::tensor_core::FusedDot;

/// The measured model of `profile`'s f16 × f16 + f32 tensor-core arithmetic, if there is one:
/// sm_90 (H100, H200), whose `HMMA.16816.F32` was fitted and checked bit for bit on an H200.
/// Other devices' tensor cores add in ways not measured here (A100's blocks of 8, per the
/// published models), so they have none.
pub fn f16_model(profile: &Profile) -> Option<FusedDot> {
    (profile.backend == Backend::Cuda && profile.sm == 90).then_some(FusedDot::SM90)
}

/// For `contract = accumulation(…, exact_where = mma::f16_modelled)`: the model's name on the
/// profiles [`f16_model`] knows.
pub fn f16_modelled(profile: &Profile) -> Option<&'static str> {
    f16_model(profile)
        .map(|_| "sm_90 HMMA.16816.F32: 16 exact products and c in a 27-bit window, truncated; rounded toward zero")
}

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
#[intrinsic(
    name = "mma::tile_i8",
    semantics = defined,
    summary = "16×16 i32 tile += 16×k i8 · k×16 i8, one plane",
    check = crate::mma::mma_i8,
    lowerings(cuda => "wmma::mma_sync" sass "IMMA", hip => "rocwmma::mma_sync"),
)]
pub mod tile_i8 {
    use crate::mma::Layout;
    use cubecl::prelude::*;
    use island_runtime::Target;

    /// Fragments and `cmma::execute`.
    #[allow(clippy::too_many_arguments)]
    #[cube]
    pub fn native(
        a: &[i8],
        lda: u32,
        b: &[i8],
        ldb: u32,
        #[comptime] b_layout: Layout,
        acc: &mut [i32],
        ldc: u32,
        #[comptime] k_tiles: u32,
    ) {
        crate::mma::cmma_tile::<i8, i32>(a, lda, b, ldb, b_layout, acc, ldc, k_tiles);
    }

    /// Each lane its outputs, the products added in `k` order: exact, as wrapping sums are.
    #[allow(clippy::too_many_arguments)]
    #[cube]
    pub fn emulate(
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
        crate::mma::k_order_tile::<i8, i32>(a, lda, b, ldb, b_layout, acc, ldc, k_tiles, target);
    }
}

/// `acc += a · b` for f16 tiles with f32 accumulation (row-major everywhere).
///
/// Emulated with the profile's measured tensor-core model where [`f16_model`] has one (sm_90:
/// bit for bit); elsewhere the products (exact in f32) are added in `k` order, which a native
/// result may differ from in the last bits: there the contract is a tolerance.
#[intrinsic(
    name = "mma::tile_f16",
    semantics = device_defined("the order and internal precision of tensor-core float accumulation"),
    summary = "16×16 f32 tile += 16×k f16 · k×16 f16, one plane (bit-exact on sm_90's measured model, a tolerance elsewhere)",
    check = crate::mma::mma_f16,
    lowerings(cuda => "wmma::mma_sync" sass "HMMA"),
)]
pub mod tile_f16 {
    use crate::mma::Layout;
    use cubecl::prelude::*;
    use half::f16;
    use island_runtime::Target;

    /// Fragments and `cmma::execute`.
    #[allow(clippy::too_many_arguments)]
    #[cube]
    pub fn native(a: &[f16], lda: u32, b: &[f16], ldb: u32, acc: &mut [f32], ldc: u32, #[comptime] k_tiles: u32) {
        crate::mma::cmma_tile::<f16, f32>(a, lda, b, ldb, Layout::RowMajor, acc, ldc, k_tiles);
    }

    /// The profile's measured model ([`super::f16_model`]), or the `k`-order sum.
    #[allow(clippy::too_many_arguments)]
    #[cube]
    pub fn emulate(
        a: &[f16],
        lda: u32,
        b: &[f16],
        ldb: u32,
        acc: &mut [f32],
        ldc: u32,
        #[comptime] k_tiles: u32,
        #[comptime] target: Target,
    ) {
        crate::mma::tile_f16_with(
            a,
            lda,
            b,
            ldb,
            acc,
            ldc,
            k_tiles,
            comptime!(target.arms().and_then(crate::mma::f16_model)),
            target,
        );
    }
}

/// [`tile_f16`] with the emulation's model given: `None` adds in `k` order. Natively the same
/// instruction; a wrong model here is how a fixture shows conformance catches one.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn tile_f16_with(
    a: &[f16],
    lda: u32,
    b: &[f16],
    ldb: u32,
    acc: &mut [f32],
    ldc: u32,
    #[comptime] k_tiles: u32,
    #[comptime] model: Option<FusedDot>,
    #[comptime] target: Target,
) {
    if comptime!(target.is_native() || model.is_none()) {
        tile::<f16, f32>(a, lda, b, ldb, Layout::RowMajor, acc, ldc, k_tiles, target);
    } else {
        let model = comptime!(model.unwrap());
        let width = comptime!(target.plane());
        let lane = UNIT_POS % width;
        #[unroll]
        for j in 0..comptime!(256 / width) {
            let e = lane + j * width;
            let row = e / 16;
            let col = e % 16;
            let mut d = acc[(row * ldc + col) as usize];
            for kt in 0..k_tiles {
                d = crate::tensor_core::emulation::fused_dot(
                    a,
                    row * lda + kt * 16,
                    b,
                    kt * 16 * ldb + col,
                    ldb,
                    d,
                    model,
                );
            }
            acc[(row * ldc + col) as usize] = d;
        }
    }
}

/// The tile product for inputs `I` and accumulator `O`: [`cmma_tile`] natively, [`k_order_tile`]
/// otherwise.
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
        cmma_tile::<I, O>(a, lda, b, ldb, b_layout, acc, ldc, k_tiles);
    } else {
        k_order_tile::<I, O>(a, lda, b, ldb, b_layout, acc, ldc, k_tiles, target);
    }
}

/// The tile product through CubeCL's cooperative matrices: fragments and `cmma::execute`.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn cmma_tile<I: Numeric, O: Numeric>(
    a: &[I],
    lda: u32,
    b: &[I],
    ldb: u32,
    #[comptime] b_layout: Layout,
    acc: &mut [O],
    ldc: u32,
    #[comptime] k_tiles: u32,
) {
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
}

/// The tile product with scalar code: each lane computes the outputs `lane, lane + width, …`,
/// adding the products (exact in `O`) to the accumulator in `k` order.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn k_order_tile<I: Numeric, O: Numeric>(
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
    let width = comptime!(target.plane());
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

// The checks: islands whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

/// The `default` of the i8 tile: a plain triple loop, each lane its 8 consecutive outputs.
#[cube]
fn tile_i8_scalar(a: &[i8], b: &[i8], c: &mut [i32]) {
    let lane = UNIT_POS % 32;
    #[unroll]
    for j in 0..8u32 {
        let e = lane * 8 + j;
        let (row, col) = (e / 16, e % 16);
        let mut sum = c[e as usize];
        for k in 0..32u32 {
            sum += i32::cast_from(a[(row * 32 + k) as usize]) * i32::cast_from(b[(k * 16 + col) as usize]);
        }
        c[e as usize] = sum;
    }
}

#[islands]
#[cube]
pub fn mma_i8(a: &[i8], b: &[i8], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[i8; 512], b: &[i8; 512], c: &mut [i32; 256]), cube_dim = 32;
        cuda | hip if cmma(i8, i8, i32, 16, 16, 16) => tile_i8::call(a, 32u32, b, 16u32, Layout::RowMajor, c, 16u32, 2u32, target),
        default => tile_i8_scalar(a, b, c),
    }
}

#[islands]
#[cube]
pub fn mma_f16(a: &[f16], b: &[f16], c: &mut [f32], #[comptime] target: Target) {
    island! {
        proof(a: &[f16; 256], b: &[f16; 256], c: &mut [f32; 256]), cube_dim = 32,
            contract = accumulation(32, "tensor cores add f16 products in an order and internal precision NVIDIA does not specify",
                                    exact_where = f16_modelled);
        cuda if cmma(f16, f16, f32, 16, 16, 16) => tile_f16::call(a, 16u32, b, 16u32, c, 16u32, 1u32, target),
        default => portable::tile_f16_fused(a, 16u32, b, 16u32, c, 16u32, 1u32),
    }
}
