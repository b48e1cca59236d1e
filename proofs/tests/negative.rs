//! Negative fixtures: arms with planted bugs. Each is marked `expect_mismatch`, so its test
//! passes only when the generated proof catches the bug; a proof that could not fail would
//! turn these red.

// Planted bugs are written the way the bug is: a literal past f32's precision (MIN_POSITIVE as
// typed), a NaN test spelled `m == m`.
#![allow(clippy::excessive_precision, clippy::eq_op)]

use cubecl::prelude::*;
use half::f16;
use island_intrinsics::{
    cp_async, dp4a, flushed, mbarrier, mma, mma_sync, plane, portable, tma, wgmma, wgmma_consume, wgmma_loop,
};
use island_runtime::prelude::*;
use island_runtime::tensor_map::TmaTile;

/// A dp4a arm that forgets to sign-extend the bytes it unpacks.
#[cube]
fn dot4_zero_extended(a: i32, b: i32, c: i32) -> i32 {
    let mut acc = c;
    #[unroll]
    for byte in 0..4i32 {
        let x = (a >> (8 * byte)) & 0xff;
        let y = (b >> (8 * byte)) & 0xff;
        acc += x * y;
    }
    acc
}

#[islands(expect_mismatch)]
#[cube]
pub fn sign_extension_slip(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        cuda => dot4_zero_extended(a, b, c),
        default => portable::dot4_i8(a, b, c),
    }
}

/// A flushing product whose flush is decided before rounding: a product a residue below `2⁻¹²⁶`
/// that rounds up to it is flushed (the binary64 product is exact).
#[cube]
fn mul_flushed_before_rounding(a: f32, b: f32) -> f32 {
    let (x, y) = (portable::flush(a), portable::flush(b));
    let exact = f64::cast_from(x) * f64::cast_from(y);
    let mut out = x * y;
    if exact.abs() < 1.1754943508222875e-38f64 {
        out = f32::reinterpret(u32::reinterpret(out) & 0x8000_0000u32);
    }
    out
}

#[islands(expect_mismatch)]
#[cube]
pub fn ftz_mul_tiny_before_rounding(a: f32, b: f32, i: u32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, i: u32) -> f32;
        cuda => mul_flushed_before_rounding(flushed::window_x(a, i), flushed::window_y(b, i, false)),
        default => flushed::mul_defined(flushed::window_x(a, i), flushed::window_y(b, i, false)),
    }
}

/// A flushing `fma` whose flush is decided before rounding: a sum a residue below `2⁻¹²⁶` that
/// rounds up to it is flushed (the sum in binary64, exact for the check's operands).
#[cube]
fn fma_flushed_before_rounding(a: f32, b: f32, c: f32) -> f32 {
    let (x, y, z) = (portable::flush(a), portable::flush(b), portable::flush(c));
    let exact = f64::cast_from(x) * f64::cast_from(y) + f64::cast_from(z);
    let mut out = fma(x, y, z);
    if exact.abs() < 1.1754943508222875e-38f64 {
        out = f32::reinterpret(u32::reinterpret(out) & 0x8000_0000u32);
    }
    out
}

#[islands(expect_mismatch)]
#[cube]
pub fn ftz_fma_tiny_before_rounding(a: f32, b: f32, c: f32, i: u32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32, i: u32) -> f32;
        cuda => fma_flushed_before_rounding(
            flushed::window_x(a, i), flushed::window_y(b, i, true), flushed::window_z(c, i)),
        default => flushed::fma_defined(flushed::window_x(a, i), flushed::window_y(b, i, true), flushed::window_z(c, i)),
    }
}

/// A flushing product whose flush is decided once rounded, as IEEE 754 rounds with gradual
/// underflow: the tie `2⁻¹²⁶ − 2⁻¹⁵⁰`, which it rounds up to `2⁻¹²⁶`, is kept.
#[cube]
fn mul_flushed_after_rounding(a: f32, b: f32) -> f32 {
    portable::flush(portable::flush(a) * portable::flush(b))
}

#[islands(expect_mismatch)]
#[cube]
pub fn ftz_mul_tiny_after_rounding(a: f32, b: f32, i: u32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, i: u32) -> f32;
        cuda => mul_flushed_after_rounding(flushed::window_x(a, i), flushed::window_y(b, i, false)),
        default => flushed::mul_defined(flushed::window_x(a, i), flushed::window_y(b, i, false)),
    }
}

/// A flushing `fma` whose flush is decided once rounded with gradual underflow: a sum between
/// IEEE's tie `2⁻¹²⁶ − 2⁻¹⁵⁰` and the midpoint `2⁻¹²⁶ − 2⁻¹⁵¹` is kept.
#[cube]
fn fma_flushed_after_rounding(a: f32, b: f32, c: f32) -> f32 {
    portable::flush(fma(portable::flush(a), portable::flush(b), portable::flush(c)))
}

#[islands(expect_mismatch)]
#[cube]
pub fn ftz_fma_tiny_after_rounding(a: f32, b: f32, c: f32, i: u32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32, i: u32) -> f32;
        cuda => fma_flushed_after_rounding(
            flushed::window_x(a, i), flushed::window_y(b, i, true), flushed::window_z(c, i)),
        default => flushed::fma_defined(flushed::window_x(a, i), flushed::window_y(b, i, true), flushed::window_z(c, i)),
    }
}

/// A plane sum whose butterfly pairs lanes in the wrong order (xor 16 first, then 8, …).
#[cube]
fn reversed_butterfly(value: f32, #[comptime] target: Target) -> f32 {
    let mut v = value;
    #[unroll]
    for level in 0..5u32 {
        let offset = 16u32 >> level;
        v += plane::shuffle_xor::call::<f32>(v, offset, target);
    }
    v
}

#[islands(expect_mismatch)]
#[cube]
pub fn wrong_lane_pairing(value: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(value: f32) -> f32, cube_dim = 64;
        cuda => reversed_butterfly(value, target),
        default => portable::tree_sum::<f32>(value, 32u32),
    }
}

#[cube]
fn gemm_tile_scalar(a: &[i8], b: &[i8], c: &mut [i32]) {
    island_examples::gemm_i8::tile_scalar(a, 16u32, b, 16u32, c, 16u32, 1u32);
}

#[islands(expect_mismatch)]
#[cube]
pub fn transposed_tile(a: &[i8], b: &[i8], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[i8; 256], b: &[i8; 256], c: &mut [i32; 256]), cube_dim = 32;
        cuda if cmma(i8, i8, i32, 16, 16, 16) => mma::tile_i8::call(a, 16u32, b, 16u32, mma::Layout::ColMajor, c, 16u32, 1u32, target),
        default => gemm_tile_scalar(a, b, c),
    }
}

/// An `mma.sync` arm that loads `b`'s fragment with its two registers swapped (the two 16-byte
/// halves of `k`): the warp-fragment layout slip the PTX tables invite.
#[islands(expect_mismatch)]
#[cube]
pub fn swapped_b_fragment(a: &[i32], b: &[i32], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[i32; 128], b: &[i32; 64], c: &mut [i32; 128]), cube_dim = 32;
        cuda if sm >= 80 => {
            let (g, t) = (UNIT_POS / 4, UNIT_POS % 4);
            let mut fa = Vector::<i32, Const<4>>::empty();
            let mut fc = Vector::<i32, Const<4>>::empty();
            #[unroll]
            for r in 0..4u32 {
                fa.insert(r as usize, a[((g + 8 * (r % 2)) * 8 + 4 * (r / 2) + t) as usize]);
                fc.insert(r as usize, c[((g + 8 * (r / 2)) * 8 + 2 * t + r % 2) as usize]);
            }
            let mut fb = Vector::<i32, Const<2>>::empty();
            #[unroll]
            for r in 0..2u32 {
                fb.insert(r as usize, b[(g * 8 + 4 * (1 - r) + t) as usize]);
            }
            let d = mma_sync::m16n8k32_s8::call(fa, fb, fc, target);
            #[unroll]
            for r in 0..4u32 {
                c[((g + 8 * (r / 2)) * 8 + 2 * t + r % 2) as usize] = d.extract(r as usize);
            }
        },
        default => {
            #[unroll]
            for j in 0..4u32 {
                let e = UNIT_POS * 4 + j;
                let mut sum = c[e as usize];
                for w in 0..8u32 {
                    sum = portable::dot4_i8(a[(e / 8 * 8 + w) as usize], b[(e % 8 * 8 + w) as usize], sum);
                }
                c[e as usize] = sum;
            }
        },
    }
}

/// The lane-breaking edit from the acceptance list, kept: one lane of the dp4a arm is wrong.
#[islands(expect_mismatch)]
#[cube]
pub fn one_broken_lane(w: i32, x: i32, acc: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(w: i32, x: i32, acc: i32) -> i32;
        cuda if dp4a => broken_lane(dp4a::call(w, x, acc, target), target),
        default => portable::dot4_i8(w, x, acc),
    }
}

#[cube]
fn broken_lane(v: i32, #[comptime] target: Target) -> i32 {
    let mut r = v;
    if plane::lane(target) == 17 {
        r += 1;
    }
    r
}

/// A 16-byte load that reads the neighbouring vector: a vector-valued proof must catch it.
#[islands(expect_mismatch)]
#[cube]
pub fn off_by_one_vector(
    src: &[Vector<i32, Const<4>>],
    index: usize,
    #[comptime] target: Target,
) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 64], index: usize = UNIT_POS as usize) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda => island_intrinsics::stream::load_x4::call(src, (index + 1) % 64, target),
        default => src[index],
    }
}

// ---- Planted bugs of every class the proofs must catch. Each arm is wrong in one way a real
// ---- arm, emulation or default could be; the edge groups and random groups decide each one.

/// A plane sum that flushes a subnormal result to zero (what a GPU's FTZ mode does).
#[cube]
fn flushing_sum(v: f32, #[comptime] target: Target) -> f32 {
    let s = plane::sum::call::<f32>(v, target);
    if s.abs() < 1.17549435e-38f32 { 0.0f32 } else { s }
}

#[islands(expect_mismatch)]
#[cube]
pub fn flush_to_zero(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda if plane == 32 => flushing_sum(v, target),
        default => portable::tree_sum::<f32>(v, 32u32),
    }
}

/// A plane sum that "normalises" a zero result to +0.0: the sign of a zero sum is lost.
#[cube]
fn zero_normalising_sum(v: f32, #[comptime] target: Target) -> f32 {
    let s = plane::sum::call::<f32>(v, target);
    if s == 0.0f32 { 0.0f32 } else { s }
}

/// An arm equal to `default` at every output but the proof run's last: a comparison that
/// stopped one element short (or skipped the last cube) would pass it.
#[islands(expect_mismatch)]
#[cube]
pub fn last_output_only(a: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32) -> i32, cube_dim = 64;
        cuda => {
            let last = CUBE_COUNT * (CUBE_DIM as usize) - 1;
            let d = a ^ 0x5a5a;
            select(ABSOLUTE_POS == last, d ^ 1, d)
        },
        default => a ^ 0x5a5a,
    }
}

/// An arm equal to `default` at every output but the proof run's first: a comparison that
/// started one element late would pass it.
#[islands(expect_mismatch)]
#[cube]
pub fn first_output_only(a: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32) -> i32, cube_dim = 64;
        cuda => {
            let d = a ^ 0x5a5a;
            select(ABSOLUTE_POS == 0, d ^ 1, d)
        },
        default => a ^ 0x5a5a,
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn lost_negative_zero(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda if plane == 32 => zero_normalising_sum(v, target),
        default => portable::tree_sum::<f32>(v, 32u32),
    }
}

/// An emulation that reduces its gathered plane left to right: a valid order, not the
/// butterfly the hardware has.
#[cube]
fn left_fold_emulation(value: f32, #[comptime] width: u32) -> f32 {
    let lanes = island_runtime::emulation::gather::<f32>(value, width);
    let mut s = lanes[0];
    #[unroll]
    for i in 1..width as usize {
        s += lanes[i];
    }
    s
}

#[islands(expect_mismatch)]
#[cube]
pub fn emulation_in_another_order(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda if plane == 32 => left_fold_emulation(v, 32u32),
        default => portable::tree_sum::<f32>(v, 32u32),
    }
}

/// A `default` that sums its group left to right while the arm is the butterfly: a default in
/// another valid order.
#[cube]
fn left_fold_default(value: f32) -> f32 {
    let mut slots = Shared::<[f32]>::new_slice(1024usize);
    slots[UNIT_POS as usize] = value;
    sync_cube();
    let first = (UNIT_POS / 32 * 32) as usize;
    let mut s = slots[first];
    for i in 1..32usize {
        s += slots[first + i];
    }
    sync_cube();
    s
}

#[islands(expect_mismatch)]
#[cube]
pub fn default_in_another_order(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda if plane == 32 => plane::sum::call::<f32>(v, target),
        default => left_fold_default(v),
    }
}

/// A plane maximum whose NaN becomes a number (an ordered comparison that drops it).
#[cube]
fn nan_dropping_max(v: f32, #[comptime] target: Target) -> f32 {
    let m = plane::max::call::<f32>(v, target);
    if m == m { m } else { 0.0f32 }
}

#[islands(expect_mismatch)]
#[cube]
pub fn nan_becomes_number(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda if plane == 32 => nan_dropping_max(v, target),
        default => portable::tree_max::<f32>(v, 32u32),
    }
}

/// An accumulator update that skips one element of each cube.
#[islands(expect_mismatch)]
#[cube]
pub fn unwritten_lane(acc: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(acc: &mut [i32; 64]), cube_dim = 64;
        cuda => {
            // Every unit reaches the plane sum (it synchronises); one does not store it.
            let s = plane::sum::call::<i32>(acc[UNIT_POS as usize], target);
            if UNIT_POS != 37 {
                acc[UNIT_POS as usize] = s;
            }
        },
        default => {
            acc[UNIT_POS as usize] = portable::tree_sum::<i32>(acc[UNIT_POS as usize], 32u32);
        },
    }
}

/// The integer tile, with the incoming accumulator dropped (`c = a·b` instead of `c += a·b`).
#[cube]
fn tile_dropping_acc(a: &[i8], b: &[i8], c: &mut [i32]) {
    let lane = UNIT_POS % 32;
    #[unroll]
    for j in 0..8u32 {
        let e = lane * 8 + j;
        let (row, col) = (e / 16, e % 16);
        let mut sum = 0i32;
        for k in 0..16u32 {
            sum += i32::cast_from(a[(row * 16 + k) as usize]) * i32::cast_from(b[(k * 16 + col) as usize]);
        }
        c[e as usize] = sum;
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn dropped_accumulator(a: &[i8], b: &[i8], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[i8; 256], b: &[i8; 256], c: &mut [i32; 256]), cube_dim = 32;
        cuda if cmma(i8, i8, i32, 16, 16, 16) => tile_dropping_acc(a, b, c),
        default => gemm_tile_scalar(a, b, c),
    }
}

/// The f16 tile accumulated in f16: within the tensor-core tolerance on small integers, far
/// outside it on real data.
#[cube]
fn tile_f16_accumulating_in_f16(a: &[half::f16], b: &[half::f16], c: &mut [f32]) {
    let lane = UNIT_POS % 32;
    #[unroll]
    for j in 0..8u32 {
        let e = lane * 8 + j;
        let (row, col) = (e / 16, e % 16);
        let mut sum = c[e as usize];
        for k in 0..16u32 {
            let product = f32::cast_from(a[(row * 16 + k) as usize]) * f32::cast_from(b[(k * 16 + col) as usize]);
            // Every partial sum rounded to f16, as an f16 accumulator holds it.
            sum = f32::cast_from(half::f16::cast_from(sum + product));
        }
        c[e as usize] = sum;
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn f16_accumulating_tile(a: &[half::f16], b: &[half::f16], c: &mut [f32], #[comptime] target: Target) {
    island! {
        proof(a: &[half::f16; 256], b: &[half::f16; 256], c: &mut [f32; 256]), cube_dim = 32,
            contract = accumulation(32, "the f16 tile's contract, as in island_intrinsics::mma::mma_f16");
        cuda if cmma(f16, f16, f32, 16, 16, 16) => tile_f16_accumulating_in_f16(a, b, c),
        default => mma::tile_f16::call(a, 16u32, b, 16u32, c, 16u32, 1u32, target),
    }
}

/// A native plane sum in the reverse butterfly order (xor width/2 first) behind a correct
/// emulation: the CPU proof holds, and conformance on a device must catch the native code.
#[cube]
fn reversed_native_sum(v: f32, #[comptime] target: Target) -> f32 {
    if target.is_native() {
        let mut s = v;
        #[unroll]
        for level in 0..comptime!(target.plane().trailing_zeros()) {
            s += plane_shuffle_xor(s, comptime!(target.plane() >> (level + 1)));
        }
        s
    } else {
        plane::sum::call::<f32>(v, target)
    }
}

#[islands(expect_native_mismatch)]
#[cube]
pub fn wrong_native_lowering_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => reversed_native_sum(v, target),
        default => portable::tree_sum::<f32>(v, 8u32),
    }
}

#[islands(expect_native_mismatch)]
#[cube]
pub fn wrong_native_lowering_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan if plane == 32 => reversed_native_sum(v, target),
        default => portable::tree_sum::<f32>(v, 32u32),
    }
}

// ---- The tensor-core model: an f16 tile emulated with one modelling detail wrong must be
// ---- caught against the portable definition (and, by `islands tensor-core`, on the device).

#[islands(expect_mismatch)]
#[cube]
pub fn tile_rounding_at_alignment(a: &[f16], b: &[f16], c: &mut [f32], #[comptime] target: Target) {
    island! {
        proof(a: &[f16; 256], b: &[f16; 256], c: &mut [f32; 256]), cube_dim = 32,
            contract = accumulation(32, "tensor-core accumulation", exact_where = mma::f16_modelled);
        cuda if cmma(f16, f16, f32, 16, 16, 16) => mma::tile_f16_with(a, 16u32, b, 16u32, c, 16u32, 1u32,
            comptime!(Some(island_intrinsics::tensor_core::FusedDot::SM90_ROUNDING_AT_ALIGNMENT)), target),
        default => portable::tile_f16_fused(a, 16u32, b, 16u32, c, 16u32, 1u32),
    }
}

/// The emulation that adds exact products in `k` order (the tolerance model of devices without
/// a measured one): on sm_90, whose contract is bit equality, it must be caught.
#[islands(expect_mismatch)]
#[cube]
pub fn tile_in_k_order(a: &[f16], b: &[f16], c: &mut [f32], #[comptime] target: Target) {
    island! {
        proof(a: &[f16; 256], b: &[f16; 256], c: &mut [f32; 256]), cube_dim = 32,
            contract = accumulation(32, "tensor-core accumulation", exact_where = mma::f16_modelled);
        cuda if cmma(f16, f16, f32, 16, 16, 16) => mma::tile_f16_with(a, 16u32, b, 16u32, c, 16u32, 1u32, comptime!(None), target),
        default => portable::tile_f16_fused(a, 16u32, b, 16u32, c, 16u32, 1u32),
    }
}

/// A bf16 tensor-core step emulated as a naive port would: products added in `k` order in f32.
/// On sm_90, whose contract is bit equality with the measured model, it must be caught.
#[islands(expect_mismatch)]
#[cube]
pub fn bf16_step_in_k_order(a: &[half::bf16], b: &[half::bf16], c: &mut [f32], #[comptime] target: Target) {
    island! {
        proof(a: &[half::bf16; 256], b: &[half::bf16; 256], c: &mut [f32; 256]), cube_dim = 32,
            contract = accumulation(16, "tensor-core accumulation", exact_where = mma::f16_modelled);
        cuda if sm == 90 => {
            for j in 0..8u32 {
                let e = UNIT_POS * 8 + j;
                let (row, col) = (e / 16, e % 16);
                let mut sum = c[e as usize];
                for i in 0..16u32 {
                    sum += f32::cast_from(a[(row * 16 + i) as usize]) * f32::cast_from(b[(i * 16 + col) as usize]);
                }
                c[e as usize] = sum;
            }
        },
        default => {
            for j in 0..8u32 {
                let e = UNIT_POS * 8 + j;
                let (row, col) = (e / 16, e % 16);
                c[e as usize] = portable::fused_step_bf16(a, row * 16, 1u32, b, col, 16u32, c[e as usize]);
            }
        },
    }
}

// ---- wgmma: tiles stored in one layout and described to the tensor cores as another.

/// A `wgmma` arm that stores its tiles row after row (128 bytes each) without the XOR the
/// 128-byte swizzle its descriptors name: the layout slip TMA-less kernels invite. `N = 16`,
/// four `k` steps.
#[islands(expect_mismatch)]
#[cube]
pub fn unswizzled_wgmma_tile(
    a: &[Vector<i32, Const<4>>],
    bt: &[Vector<i32, Const<4>>],
    c: &mut [i32],
    #[comptime] target: Target,
) {
    island! {
        proof(a: &[Vector<i32, Const<4>>; 512], bt: &[Vector<i32, Const<4>>; 128], c: &mut [i32; 1024]), cube_dim = 128;
        cuda if sm == 90 => {
            let layout = comptime!(wgmma::Layout { swizzle: wgmma::Swizzle::B128, leading: 16, stride: 1024 });
            let mut sa = Shared::<[Vector<i32, Const<4>>]>::new_aligned_slice(512usize, 1024usize);
            let mut sb = Shared::<[Vector<i32, Const<4>>]>::new_aligned_slice(128usize, 1024usize);
            for i in 0..4u32 {
                sa[(UNIT_POS + 128 * i) as usize] = a[(UNIT_POS + 128 * i) as usize];
            }
            sb[UNIT_POS as usize] = bt[UNIT_POS as usize];
            wgmma::fence_shared::call(target);
            sync_cube();
            let (warp, g, t) = (UNIT_POS / 32, (UNIT_POS % 32) / 4, UNIT_POS % 4);
            let mut fc = Vector::<i32, Const<8>>::empty();
            #[unroll]
            for r in 0..8usize {
                fc.insert(r, c[((16 * warp + g + 8 * ((r as u32 / 2) % 2)) * 16 + 8 * (r as u32 / 4) + 2 * t + r as u32 % 2) as usize]);
            }
            let d = wgmma::m64n_k32_s8::call::<Const<8>>(&sa, 0u32, &sb, 0u32, fc, 4u32, layout, layout, target);
            #[unroll]
            for r in 0..8usize {
                c[((16 * warp + g + 8 * ((r as u32 / 2) % 2)) * 16 + 8 * (r as u32 / 4) + 2 * t + r as u32 % 2) as usize] = d.extract(r);
            }
        },
        default => {
            for j in 0..8u32 {
                let e = UNIT_POS * 8 + j;
                let mut sum = c[e as usize];
                for w in 0..32u32 {
                    let x = a[(e / 16 * 8 + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    let y = bt[(e % 16 * 8 + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    sum = portable::dot4_i8(x, y, sum);
                }
                c[e as usize] = sum;
            }
        },
    }
}

/// A two-slot `mbarrier` pipeline whose refill lands in the slot the next stage is about to
/// read, not in the slot just read: every other stage reads the bytes of the stage after it.
/// (Natively the refill also races with that read; the emulation, whose waits are cube
/// barriers, makes the slip deterministic.)
#[islands(expect_mismatch)]
#[cube]
pub fn mbarrier_refill_into_next_slot(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 256], out: &mut [Vector<i32, Const<4>>; 256]), cube_dim = 64;
        cuda if sm >= 90 => {
            let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_slice(128usize);
            let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(4, 64, &target)), 8usize);
            if UNIT_POS == 0 {
                for i in 0..4u32 {
                    mbarrier::init::call(&mut bars, i, 64u32, target);
                }
            }
            sync_cube();
            for t in 0..2u32 {
                cp_async::copy16::call(&mut tile, t * 64 + UNIT_POS, src, t * 64 + UNIT_POS, target);
                mbarrier::arrive_on_copies::call(&mut bars, t, target);
            }
            for t in 0..4u32 {
                let (slot, parity) = (t % 2, (t / 2) % 2);
                mbarrier::wait::call(&mut bars, slot, parity, target);
                out[(t * 64 + UNIT_POS) as usize] = tile[(slot * 64 + (UNIT_POS + 9) % 64) as usize];
                mbarrier::arrive::call(&mut bars, 2 + slot, target);
                mbarrier::wait::call(&mut bars, 2 + slot, parity, target);
                if t + 2 < 4 {
                    let wrong = (t + 1) % 2;
                    cp_async::copy16::call(&mut tile, wrong * 64 + UNIT_POS, src, (t + 2) * 64 + UNIT_POS, target);
                    mbarrier::arrive_on_copies::call(&mut bars, wrong, target);
                }
            }
        },
        default => {
            for t in 0..4u32 {
                out[(t * 64 + UNIT_POS) as usize] = src[(t * 64 + (UNIT_POS + 9) % 64) as usize];
            }
        },
    }
}

/// The synchronization bugs a two-slot `mbarrier` pipeline can have (four stages of 64 units'
/// `cp.async` copies, the pipeline of [`mbarrier_refill_into_next_slot`] without its slot slip),
/// one per variant. Natively each reads a stage before its copies land or waits for a phase that
/// never completes (then traps); on the CPU, where copies land at their issue, the emulated
/// barriers' books catch each at a wait (`island_intrinsics::mbarrier`'s emulation).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum SyncSlip {
    /// The "full" waits ask for the other parity: the first returns before the copies land.
    WrongParity,
    /// Stage 1 is read without waiting for its slot's "full" phase.
    ReadBeforeFull,
    /// Slot 0 is refilled without waiting for its "empty" phase (every unit done reading).
    RefillBeforeEmpty,
    /// Unit 5 never arrives on slot 0's first "empty" phase.
    MissingArrival,
}

#[cube]
fn slipped_pipeline(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] slip: SyncSlip,
    #[comptime] target: Target,
) {
    let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_slice(128usize);
    let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(4, 64, &target)), 8usize);
    if UNIT_POS == 0 {
        for i in 0..4u32 {
            mbarrier::init::call(&mut bars, i, 64u32, target);
        }
    }
    sync_cube();
    for t in 0..2u32 {
        cp_async::copy16::call(&mut tile, t * 64 + UNIT_POS, src, t * 64 + UNIT_POS, target);
        mbarrier::arrive_on_copies::call(&mut bars, t, target);
    }
    for t in 0..4u32 {
        let (slot, parity) = (t % 2, (t / 2) % 2);
        if comptime!(slip == SyncSlip::WrongParity) {
            mbarrier::wait::call(&mut bars, slot, 1 - parity, target);
        } else if comptime!(slip == SyncSlip::ReadBeforeFull) {
            if t != 1 {
                mbarrier::wait::call(&mut bars, slot, parity, target);
            }
        } else {
            mbarrier::wait::call(&mut bars, slot, parity, target);
        }
        out[(t * 64 + UNIT_POS) as usize] = tile[(slot * 64 + (UNIT_POS + 9) % 64) as usize];
        if comptime!(slip == SyncSlip::MissingArrival) {
            if t != 0 || UNIT_POS != 5 {
                mbarrier::arrive::call(&mut bars, 2 + slot, target);
            }
        } else {
            mbarrier::arrive::call(&mut bars, 2 + slot, target);
        }
        if comptime!(slip == SyncSlip::RefillBeforeEmpty) {
            if t != 0 {
                mbarrier::wait::call(&mut bars, 2 + slot, parity, target);
            }
        } else {
            mbarrier::wait::call(&mut bars, 2 + slot, parity, target);
        }
        if t + 2 < 4 {
            cp_async::copy16::call(&mut tile, slot * 64 + UNIT_POS, src, (t + 2) * 64 + UNIT_POS, target);
            mbarrier::arrive_on_copies::call(&mut bars, slot, target);
        }
    }
}

/// What [`slipped_pipeline`] computes when it has no slip.
#[cube]
fn pipeline_default(src: &[Vector<i32, Const<4>>], out: &mut [Vector<i32, Const<4>>]) {
    for t in 0..4u32 {
        out[(t * 64 + UNIT_POS) as usize] = src[(t * 64 + (UNIT_POS + 9) % 64) as usize];
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn mbarrier_wait_with_the_wrong_parity(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 256], out: &mut [Vector<i32, Const<4>>; 256]), cube_dim = 64;
        cuda if sm >= 90 => slipped_pipeline(src, out, SyncSlip::WrongParity, target),
        default => pipeline_default(src, out),
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn mbarrier_stage_read_before_its_full_wait(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 256], out: &mut [Vector<i32, Const<4>>; 256]), cube_dim = 64;
        cuda if sm >= 90 => slipped_pipeline(src, out, SyncSlip::ReadBeforeFull, target),
        default => pipeline_default(src, out),
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn mbarrier_slot_refilled_before_its_empty_wait(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 256], out: &mut [Vector<i32, Const<4>>; 256]), cube_dim = 64;
        cuda if sm >= 90 => slipped_pipeline(src, out, SyncSlip::RefillBeforeEmpty, target),
        default => pipeline_default(src, out),
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn mbarrier_arrival_missing(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 256], out: &mut [Vector<i32, Const<4>>; 256]), cube_dim = 64;
        cuda if sm >= 90 => slipped_pipeline(src, out, SyncSlip::MissingArrival, target),
        default => pipeline_default(src, out),
    }
}

/// A bug of a producer/consumer pipeline whose roles wait at different points
/// (`island_intrinsics::mbarrier::mbarrier_roles`, two slots, six stages).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum RoleSlip {
    /// No bug: the control, which must be proven.
    None,
    /// The producer refills slot 0 for stage 2 without waiting for its release.
    RefillBeforeRelease,
    /// The consumers read stage 1 without waiting for its copies.
    ReadBeforeCopies,
}

#[cube]
fn slipped_roles(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] slip: RoleSlip,
    #[comptime] target: Target,
) {
    let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_slice(64usize);
    let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(4, 64, &target)), 8usize);
    if UNIT_POS == 0 {
        for i in 0..2u32 {
            mbarrier::init::call(&mut bars, i, 32u32, target);
            mbarrier::init::call(&mut bars, 2 + i, 32u32, target);
        }
    }
    sync_cube();
    if UNIT_POS < 32 {
        for t in 0..6u32 {
            let slot = t % 2;
            if t >= 2 && (comptime!(slip != RoleSlip::RefillBeforeRelease) || t != 2) {
                mbarrier::wait::call(&mut bars, 2 + slot, (t / 2 - 1) % 2, target);
            }
            cp_async::copy16::call(&mut tile, slot * 32 + UNIT_POS, src, t * 32 + UNIT_POS, target);
            mbarrier::arrive_on_copies::call(&mut bars, slot, target);
        }
    } else {
        let c = UNIT_POS - 32;
        for t in 0..6u32 {
            let (slot, parity) = (t % 2, (t / 2) % 2);
            if comptime!(slip != RoleSlip::ReadBeforeCopies) || t != 1 {
                mbarrier::wait::call(&mut bars, slot, parity, target);
            }
            out[(t * 32 + c) as usize] = tile[(slot * 32 + (c + 5) % 32) as usize];
            mbarrier::arrive::call(&mut bars, 2 + slot, target);
        }
    }
    mbarrier::retire(&mut bars, target);
}

/// What [`slipped_roles`] computes when it has no slip.
#[cube]
fn roles_default(src: &[Vector<i32, Const<4>>], out: &mut [Vector<i32, Const<4>>]) {
    if UNIT_POS >= 32 {
        let c = UNIT_POS - 32;
        for t in 0..6u32 {
            out[(t * 32 + c) as usize] = src[(t * 32 + (c + 5) % 32) as usize];
        }
    }
}

/// The same pipeline without a slip, so that the fixtures below fail for their slip alone.
#[islands]
#[cube]
pub fn roles_without_a_slip(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 192], out: &mut [Vector<i32, Const<4>>; 192]), cube_dim = 64;
        cuda if sm >= 90 => slipped_roles(src, out, RoleSlip::None, target),
        default => roles_default(src, out),
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn roles_refill_before_release(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 192], out: &mut [Vector<i32, Const<4>>; 192]), cube_dim = 64;
        cuda if sm >= 90 => slipped_roles(src, out, RoleSlip::RefillBeforeRelease, target),
        default => roles_default(src, out),
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn roles_read_before_copies(
    src: &[Vector<i32, Const<4>>],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 192], out: &mut [Vector<i32, Const<4>>; 192]), cube_dim = 64;
        cuda if sm >= 90 => slipped_roles(src, out, RoleSlip::ReadBeforeCopies, target),
        default => roles_default(src, out),
    }
}

/// A bug of a warp-specialized pipeline on `wgmma_loop::consume` (a producer warpgroup, two
/// consumer warpgroups, two 128×8 tiles of `k` = 384 through two slots).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum WarpSlip {
    /// No bug: the control, which must be proven.
    None,
    /// The producer refills a slot without waiting for the consumers' release.
    RefillBeforeRelease,
    /// The producer waits for the release with the parity of the use it is about to fill (a
    /// fresh barrier's wait for parity 1 returns at once).
    ReleaseParityOfTheNextUse,
    /// The consumers start the ring again at each tile instead of carrying its position.
    RingRestartedPerTile,
}

/// The boxes of [`slipped_consumers`]: a tile's 128 rows of `a`, all 8 rows of `bᵀ`, 128 bytes.
pub const WARP_A: TmaTile = TmaTile { row_bytes: 384, box_rows: 128, box_bytes: 128, swizzle: 128 };
pub const WARP_B: TmaTile = TmaTile { row_bytes: 384, box_rows: 8, box_bytes: 128, swizzle: 128 };

#[cube]
fn slipped_consumers(
    a: &[Vector<i32, Const<4>>],
    map_a: &[u32],
    bt: &[Vector<i32, Const<4>>],
    map_b: &[u32],
    c: &mut [i32],
    #[comptime] slip: WarpSlip,
    #[comptime] target: Target,
) {
    let mut tiles = Shared::<[Vector<i32, Const<4>>]>::new_aligned_slice(2176usize, 1024usize);
    let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(4, 384, &target)), 8usize);
    if UNIT_POS == 0 {
        for i in 0..2u32 {
            mbarrier::init::call(&mut bars, i, 1u32, target);
            mbarrier::init::call(&mut bars, 2 + i, comptime!(2 * wgmma_consume::RELEASES_PER_GROUP), target);
        }
    }
    sync_cube();
    if UNIT_POS == 0 {
        tma::acquire_map::call(map_a, target);
        tma::acquire_map::call(map_b, target);
        for g in 0..6u32 {
            let slot = g % 2;
            if g >= 2 && comptime!(slip != WarpSlip::RefillBeforeRelease) {
                let mut parity = (g / 2 + 1) % 2;
                if comptime!(slip == WarpSlip::ReleaseParityOfTheNextUse) {
                    parity = (g / 2) % 2;
                }
                mbarrier::wait::call(&mut bars, 2 + slot, parity, target);
            }
            tma::arrive_expect_tx::call(&mut bars, slot, 17408u32, target);
            tma::load_2d::call(
                &mut tiles,
                slot * 1024,
                map_a,
                a,
                (g % 3) * 8,
                (g / 3) * 128,
                &mut bars,
                slot,
                WARP_A,
                target,
            );
            tma::load_2d::call(
                &mut tiles,
                2048 + slot * 64,
                map_b,
                bt,
                (g % 3) * 8,
                0u32,
                &mut bars,
                slot,
                WARP_B,
                target,
            );
        }
    } else if UNIT_POS >= 128 {
        let group = UNIT_POS / 128 - 1;
        let unit = UNIT_POS % 128;
        let (warp, g, t) = (unit / 32, (unit % 32) / 4, unit % 4);
        for tile in 0..2u32 {
            let mut first = tile * 3;
            if comptime!(slip == WarpSlip::RingRestartedPerTile) {
                first = 0u32;
            }
            let d = wgmma_consume::consume_s8::call::<Const<4>>(
                &tiles,
                &mut bars,
                Vector::<i32, Const<4>>::new(0i32),
                first,
                3u32,
                group,
                2u32,
                WARP_A,
                WARP_B,
                target,
            );
            #[unroll]
            for r in 0..4u32 {
                let row = tile * 128 + group * 64 + 16 * warp + g + 8 * ((r / 2) % 2);
                c[(row * 8 + 2 * t + r % 2) as usize] = d.extract(r as usize);
            }
        }
    }
    mbarrier::retire(&mut bars, target);
}

/// What [`slipped_consumers`] computes when it has no slip: `c = a · b`, 256×8.
#[cube]
fn consumers_default(a: &[Vector<i32, Const<4>>], bt: &[Vector<i32, Const<4>>], c: &mut [i32]) {
    let mut e = UNIT_POS;
    while e < 2048u32 {
        let (row, col) = (e / 8, e % 8);
        let mut sum = 0i32;
        for w in 0..96u32 {
            let x = a[(row * 24 + w / 4) as usize].extract_dynamic((w % 4) as usize);
            let y = bt[(col * 24 + w / 4) as usize].extract_dynamic((w % 4) as usize);
            sum = portable::dot4_i8(x, y, sum);
        }
        c[e as usize] = sum;
        e += 384u32;
    }
}

/// One entry point of [`slipped_consumers`] per slip; `$expect` is `expect_mismatch` for a bug.
macro_rules! warp_fixture {
    ($(#[$doc:meta])* $name:ident, $slip:ident $(, $expect:ident)?) => {
        $(#[$doc])*
        #[islands$(($expect))?]
        #[cube]
        pub fn $name(
            a: &[Vector<i32, Const<4>>],
            map_a: &[u32],
            bt: &[Vector<i32, Const<4>>],
            map_b: &[u32],
            c: &mut [i32],
            #[comptime] target: Target,
        ) {
            island! {
                proof(
                    a: &[Vector<i32, Const<4>>; 6144],
                    map_a: tensor_map(a, crate::negative::WARP_A),
                    bt: &[Vector<i32, Const<4>>; 192],
                    map_b: tensor_map(bt, crate::negative::WARP_B),
                    c: &mut [i32; 2048],
                ), cube_dim = 384;
                cuda if sm == 90 => slipped_consumers(a, map_a, bt, map_b, c, WarpSlip::$slip, target),
                default => consumers_default(a, bt, c),
            }
        }
    };
}

warp_fixture!(
    /// The warp-specialized pipeline without a slip, so that the fixtures below fail for their
    /// slip alone.
    consumers_without_a_slip, None
);
warp_fixture!(
    /// The producer never waits for a release: it refills both slots while the consumers still
    /// read them (natively a race; emulated, a wait that passes over phases).
    consumers_refill_before_release, RefillBeforeRelease, expect_mismatch
);
warp_fixture!(
    /// The producer waits for the release of a slot's next use instead of its previous one.
    consumers_release_parity_of_the_next_use, ReleaseParityOfTheNextUse, expect_mismatch
);
warp_fixture!(
    /// The consumers begin the second tile at the ring's first stage: the wrong slot and parity.
    consumers_ring_restarted_per_tile, RingRestartedPerTile, expect_mismatch
);

/// One TMA box whose arrival expects 16 bytes fewer than the box holds: natively the phase
/// completes before the copy's last bytes land (or, with more bytes, never); the emulated
/// barrier's books catch it at the wait.
#[islands(expect_mismatch)]
#[cube]
pub fn tma_expects_the_wrong_bytes(
    src: &[Vector<i32, Const<4>>],
    map: &[u32],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(
            src: &[Vector<i32, Const<4>>; 512],
            map: tensor_map(src, island_intrinsics::tma::BOX_PLAIN),
            out: &mut [Vector<i32, Const<4>>; 64],
        ), cube_dim = 64;
        cuda if sm >= 90 => {
            let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_aligned_slice(64usize, 1024usize);
            let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(1, 64, &target)), 8usize);
            if UNIT_POS == 0 {
                mbarrier::init::call(&mut bars, 0, 1u32, target);
                tma::acquire_map::call(map, target);
            }
            sync_cube();
            if UNIT_POS == 0 {
                tma::arrive_expect_tx::call(&mut bars, 0, 1008u32, target);
                tma::load_2d::call(&mut tile, 0, map, src, 2u32, 3u32, &mut bars, 0, tma::BOX_PLAIN, target);
            }
            mbarrier::wait::call(&mut bars, 0, 0u32, target);
            out[UNIT_POS as usize] = tile[UNIT_POS as usize];
        },
        default => {
            // Box word `UNIT_POS`: row `UNIT_POS / 16`, word `UNIT_POS % 16` of the 4 × 256-byte
            // box at (2 words, 3 rows) of a tensor with 16 words a row: its last 2 words of
            // each row lie past the tensor's columns, zeros.
            let (row, word) = (3 + UNIT_POS / 16, 2 + UNIT_POS % 16);
            let mut value = Vector::<i32, Const<4>>::new(0i32);
            if word < 16 {
                value = src[(row * 16 + word) as usize];
            }
            out[UNIT_POS as usize] = value;
        },
    }
}

/// A TMA box read as if it lay row after row in shared memory: the 128-byte swizzle the copy
/// applied is not undone, so every row but each eighth reads its chunks in another order.
#[islands(expect_mismatch)]
#[cube]
pub fn tma_box_read_unswizzled(
    src: &[Vector<i32, Const<4>>],
    map: &[u32],
    out: &mut [Vector<i32, Const<4>>],
    #[comptime] target: Target,
) {
    island! {
        proof(
            src: &[Vector<i32, Const<4>>; 512],
            map: tensor_map(src, island_intrinsics::tma::BOX_128),
            out: &mut [Vector<i32, Const<4>>; 64],
        ), cube_dim = 64;
        cuda if sm >= 90 => {
            let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_aligned_slice(64usize, 1024usize);
            let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(1, 64, &target)), 8usize);
            if UNIT_POS == 0 {
                mbarrier::init::call(&mut bars, 0, 1u32, target);
                tma::acquire_map::call(map, target);
            }
            sync_cube();
            if UNIT_POS == 0 {
                tma::arrive_expect_tx::call(&mut bars, 0, 1024u32, target);
                tma::load_2d::call(&mut tile, 0, map, src, 2u32, 3u32, &mut bars, 0, tma::BOX_128, target);
            }
            mbarrier::wait::call(&mut bars, 0, 0u32, target);
            out[UNIT_POS as usize] = tile[UNIT_POS as usize];
        },
        default => {
            // Box word `UNIT_POS`: row `UNIT_POS / 8`, chunk `UNIT_POS % 8`, of the box at
            // (2 words, 3 rows) of a tensor with 16 words a row.
            out[UNIT_POS as usize] = src[((3 + UNIT_POS / 8) * 16 + 2 + UNIT_POS % 8) as usize];
        },
    }
}

/// The boxes of [`wgmma_loop_one_stage_short`]: 64 rows of `a`, 8 of `bᵀ`, 384 bytes of `k`.
pub const SHORT_A: TmaTile = TmaTile { row_bytes: 384, box_rows: 64, box_bytes: 128, swizzle: 128 };
pub const SHORT_B: TmaTile = TmaTile { row_bytes: 384, box_rows: 8, box_bytes: 128, swizzle: 128 };

/// A TMA-fed `wgmma` loop told one stage fewer than `k` holds: the last 128 bytes of every row
/// never reach the products.
#[islands(expect_mismatch)]
#[cube]
pub fn wgmma_loop_one_stage_short(
    a: &[Vector<i32, Const<4>>],
    map_a: &[u32],
    bt: &[Vector<i32, Const<4>>],
    map_b: &[u32],
    c: &mut [i32],
    #[comptime] target: Target,
) {
    island! {
        proof(
            a: &[Vector<i32, Const<4>>; 1536],
            map_a: tensor_map(a, crate::negative::SHORT_A),
            bt: &[Vector<i32, Const<4>>; 192],
            map_b: tensor_map(bt, crate::negative::SHORT_B),
            c: &mut [i32; 512],
        ), cube_dim = 128;
        cuda if sm == 90 => {
            let mut tiles = Shared::<[Vector<i32, Const<4>>]>::new_aligned_slice(1152usize, 1024usize);
            let mut bars = Shared::<[u64]>::new_aligned_slice(4usize, 8usize);
            let d = wgmma_loop::tma_s8::call::<Const<4>>(
                &mut tiles, &mut bars, a, map_a, 0u32, bt, map_b, 0u32, Vector::<i32, Const<4>>::new(0i32),
                2u32, 2u32, SHORT_A, SHORT_B, target,
            );
            let (warp, g, t) = (UNIT_POS / 32, (UNIT_POS % 32) / 4, UNIT_POS % 4);
            #[unroll]
            for r in 0..4u32 {
                let (row, col) = (16 * warp + g + 8 * ((r / 2) % 2), 2 * t + r % 2);
                c[(row * 8 + col) as usize] = d.extract(r as usize);
            }
        },
        default => {
            for j in 0..4u32 {
                let e = UNIT_POS * 4 + j;
                let (row, col) = (e / 8, e % 8);
                let mut sum = 0i32;
                for w in 0..96u32 {
                    let x = a[(row * 24 + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    let y = bt[(col * 24 + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    sum = portable::dot4_i8(x, y, sum);
                }
                c[e as usize] = sum;
            }
        },
    }
}

/// The binary32 formulations without binary64 (`portable::fma_rn32`), each with one planted
/// rounding bug, against the binary64 definition: a fused multiply-add rounded twice (the
/// product first), one that flushes subnormal results to zero (what NVIDIA's Vulkan driver does
/// to ordinary arithmetic), and one that rounds halfway cases away from zero.
#[islands(expect_mismatch)]
#[cube]
pub fn fma32_rounded_twice(a: f32, b: f32, c: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32) -> f32;
        webgpu | metal => portable::mul_add_rounded32(a, b, c),
        default => portable::fma_rn(a, b, c),
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn fma32_flushing_subnormals(a: f32, b: f32, c: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32) -> f32;
        webgpu | metal => {
            let r = portable::fma_rn32(a, b, c);
            let bits = u32::reinterpret(r);
            select((bits & 0x7f80_0000u32) == 0u32, f32::reinterpret(bits & 0x8000_0000u32), r)
        },
        default => portable::fma_rn(a, b, c),
    }
}

#[islands(expect_mismatch)]
#[cube]
pub fn fma32_ties_away(a: f32, b: f32, c: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32) -> f32;
        webgpu | metal => portable::fma_ties_away32(a, b, c),
        default => portable::fma_rn(a, b, c),
    }
}
