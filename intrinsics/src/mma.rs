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
use island_runtime::{Backend, Profile, Target, intrinsic};

use crate::tensor_core::{Cut, FusedDot};

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
    check = crate::checks::mma_i8,
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
    check = crate::checks::mma_f16,
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
                d = fused_dot(a, row * lda + kt * 16, b, kt * 16 * ldb + col, ldb, d, model);
            }
            acc[(row * ldc + col) as usize] = d;
        }
    }
}

/// The f16-frame exponent of an f16 given as the bits of its (exact) f32 value: subnormals
/// and zero count at −14, as the hardware's exponent field does.
#[cube]
fn f16_exponent(bits: u32) -> i32 {
    let e = i32::cast_from((bits >> 23) & 0xff) - 127;
    if e < -14 { -14i32 } else { e }
}

/// The 11-bit significand of an f16 given as the bits of its f32 value (0 for zero).
#[cube]
fn f16_significand(bits: u32) -> u32 {
    let field = (bits >> 23) & 0xff;
    let mut sig = 0u32;
    if field != 0 {
        let full = (bits & 0x7f_ffff) | 0x80_0000;
        let e = i32::cast_from(field) - 127;
        if e >= -14 {
            sig = full >> 13;
        } else {
            sig = full >> u32::cast_from(-1i32 - e);
        }
    }
    sig
}

/// `sig >> shift` (shift ≥ 1), the dropped bits cut as `model` says.
#[cube]
fn cut(sig: u32, shift: u32, #[comptime] model: FusedDot) -> u32 {
    let mut q = 0u32;
    if shift < 32 {
        q = sig >> shift;
        if comptime!(model.cut == Cut::NearestEven) {
            let r = sig & ((1u32 << shift) - 1);
            let half = 1u32 << (shift - 1);
            if r > half || (r == half && (q & 1) == 1) {
                q += 1;
            }
        }
    }
    q
}

/// One fused step of the model: `c + Σ_{i<16} a[a_at + i] · b[b_at + i·ldb]`, as sm_90's tensor
/// cores add it ([`crate::tensor_core`]): exact products; the largest exponent `E` of the
/// nonzero terms fixes a window whose last bit weighs `2^(E − window)`; each term is cut to it;
/// the cut terms are added exactly (here as separate sums of the positive and the negative
/// ones, each below 2^32) and the sum rounded toward zero.
#[cube]
#[allow(clippy::manual_abs_diff)] // CubeCL lowers no `abs_diff`
fn fused_dot(a: &[f16], a_at: u32, b: &[f16], b_at: u32, ldb: u32, c: f32, #[comptime] model: FusedDot) -> f32 {
    let cb = u32::reinterpret(c);
    let c_field = (cb >> 23) & 0xff;
    let c_frac = cb & 0x7f_ffff;
    let c_special = c_field == 0xff;
    let mut nan = c_special && c_frac != 0;
    let mut pos_inf = c_special && c_frac == 0 && (cb >> 31) == 0;
    let mut neg_inf = c_special && c_frac == 0 && (cb >> 31) == 1;
    let c_sig = if c_field == 0 { c_frac } else { c_frac | 0x80_0000 };
    let c_exp = i32::cast_from(if c_field == 0 { 1u32 } else { c_field }) - 127;
    let c_live = !c_special && c_sig != 0;
    let mut e_max = if c_live { c_exp } else { -1000i32 };

    // Pass 1: specials and the largest exponent.
    for i in 0..16u32 {
        let x = u32::reinterpret(f32::cast_from(a[(a_at + i) as usize]));
        let y = u32::reinterpret(f32::cast_from(b[(b_at + i * ldb) as usize]));
        let x_special = ((x >> 23) & 0xff) == 0xff;
        let y_special = ((y >> 23) & 0xff) == 0xff;
        let x_zero = (x & 0x7fff_ffff) == 0;
        let y_zero = (y & 0x7fff_ffff) == 0;
        let negative = ((x ^ y) >> 31) == 1;
        if (x_special && (x & 0x7f_ffff) != 0) || (y_special && (y & 0x7f_ffff) != 0) {
            nan = true;
        } else if x_special || y_special {
            if x_zero || y_zero {
                nan = true;
            } else if negative {
                neg_inf = true;
            } else {
                pos_inf = true;
            }
        } else if !(x_zero || y_zero) {
            e_max = max(e_max, f16_exponent(x) + f16_exponent(y));
        }
    }

    let mut bits = 0u32;
    if nan || (pos_inf && neg_inf) {
        bits = 0x7fff_ffffu32;
    } else if pos_inf {
        bits = 0x7f80_0000u32;
    } else if neg_inf {
        bits = 0xff80_0000u32;
    } else if e_max != -1000i32 {
        // Pass 2: cut every term to the window [2^(E − window), …) and add.
        let lsb = e_max - comptime!(model.window as i32);
        let mut pos = 0u32;
        let mut neg = 0u32;
        if c_live {
            // c's last bit weighs 2^(ec − 23).
            let shift = c_exp - 23 - lsb;
            let v = if shift >= 0 { c_sig << u32::cast_from(shift) } else { cut(c_sig, u32::cast_from(-shift), model) };
            if (cb >> 31) == 1 {
                neg += v;
            } else {
                pos += v;
            }
        }
        for i in 0..16u32 {
            let x = u32::reinterpret(f32::cast_from(a[(a_at + i) as usize]));
            let y = u32::reinterpret(f32::cast_from(b[(b_at + i * ldb) as usize]));
            let sig = f16_significand(x) * f16_significand(y);
            if sig != 0 {
                // The product's last bit weighs 2^(ea + eb − 20).
                let shift = f16_exponent(x) + f16_exponent(y) - 20 - lsb;
                let v = if shift >= 0 { sig << u32::cast_from(shift) } else { cut(sig, u32::cast_from(-shift), model) };
                if ((x ^ y) >> 31) == 1 {
                    neg += v;
                } else {
                    pos += v;
                }
            }
        }
        let sign = if neg > pos { 0x8000_0000u32 } else { 0u32 };
        let m = if neg > pos { neg - pos } else { pos - neg };
        if m != 0 {
            // Round toward zero to 24 bits (or to 2^-149 below the normal range).
            let lead = lsb + 31 - i32::cast_from(m.leading_zeros());
            let keep = max(lead - 23, -149i32);
            let sig = if keep >= lsb { m >> u32::cast_from(keep - lsb) } else { m << u32::cast_from(lsb - keep) };
            if lead > 127 {
                bits = sign | 0x7f80_0000u32;
            } else if lead < -126 {
                bits = sign | sig;
            } else {
                bits = sign | (u32::cast_from(lead + 127) << 23) | (sig & 0x7f_ffff);
            }
        }
    }
    f32::reinterpret(bits)
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
