//! Portable formulations an island's `default` arm can use: plain CubeCL that runs on every
//! runtime (shared memory and barriers, no plane operations), written to define the order of
//! operations the accelerated arms reproduce.
//!
//! This crate depends on CubeCL alone: it cannot reach `island_runtime::emulation` or any
//! intrinsic's `emulate`, and the compiler enforces it. A proof runs an arm through its
//! emulation against `default`, so code the two shared would cancel out of the comparison,
//! bugs included. (`island!` also refuses a `default` that names an emulation, and a test in
//! `proofs` follows a default's calls through its crate.) `island_intrinsics::portable`
//! re-exports it.

use cubecl::prelude::*;
use fields::{exponent, significand};

mod binary32;
mod fields;
mod fused_bf16;
mod subnormals;
pub use binary32::{fma_flushed32, fma_rn32, fma_ties_away32, mul_add_rounded32, mul_flushed32, mul_rn32};
pub use fused_bf16::fused_step_bf16;
pub use subnormals::{flush, flush_host, fma_flushed_host, mul_flushed_host};

/// Units a cube may have at most: the length of the shared scratch of the group helpers.
const CUBE_UNITS: usize = 1024;

/// The sum of `value` over each group of `width` consecutive units (a power of two), received
/// by every unit of the group: a pairwise tree, neighbours first (`((x0 + x1) + (x2 + x3)) + …`),
/// the order of a plane butterfly. The group's values meet in shared memory once; each unit
/// then folds them level by level in registers, so the sum costs two cube barriers whatever the
/// width.
///
/// Every unit of the cube must call it (it synchronises the cube).
#[cube]
pub fn tree_sum<T: Numeric>(value: T, #[comptime] width: u32) -> T {
    let mut v = group_values::<T>(value, width);
    #[unroll]
    for level in 0..comptime!(width.trailing_zeros()) {
        #[unroll]
        for j in 0..comptime!((width >> (level + 1)) as usize) {
            v[j] = v[2 * j] + v[2 * j + 1];
        }
    }
    v[0]
}

/// The maximum of `value` over each group of `width` consecutive units, received by every
/// unit: the same exchange and tree as [`tree_sum`], each step [`max_signed_zero`].
#[cube]
pub fn tree_max<T: Numeric>(value: T, #[comptime] width: u32) -> T {
    let mut v = group_values::<T>(value, width);
    #[unroll]
    for level in 0..comptime!(width.trailing_zeros()) {
        #[unroll]
        for j in 0..comptime!((width >> (level + 1)) as usize) {
            v[j] = max_signed_zero::<T>(v[2 * j], v[2 * j + 1]);
        }
    }
    v[0]
}

/// `max(a, b)`, with +0.0 above −0.0 (IEEE 754-2019 `maximum` on zeros; what the plane maxima of
/// CUDA and NVIDIA's Vulkan driver return). Either NaN: CubeCL's `max`.
#[cube]
pub fn max_signed_zero<T: Numeric>(a: T, b: T) -> T {
    let mut m = max(a, b);
    if a == b {
        // Equal values differ at most in the sign of zero: (+0) + (−0) = +0, (−0) + (−0) = −0.
        m = select(a == T::from_int(0), a + b, a);
    }
    m
}

/// The values of this unit's group of `width` consecutive units, in unit order, through shared
/// memory (two cube barriers). Every unit of the cube must call it.
#[cube]
pub fn group_values<T: CubePrimitive>(value: T, #[comptime] width: u32) -> Array<T> {
    let mut slots = Shared::<[T]>::new_slice(CUBE_UNITS);
    slots[UNIT_POS as usize] = value;
    sync_cube();
    let first = (UNIT_POS / width * width) as usize;
    let mut v = Array::<T>::new(width as usize);
    #[unroll]
    for i in 0..width as usize {
        v[i] = slots[first + i];
    }
    sync_cube();
    v
}

/// The value unit `source` of this unit's `width`-unit group holds (`source` may be
/// `lane ^ mask` for a shuffle), through shared memory.
#[cube]
pub fn group_read<T: CubePrimitive>(value: T, source: u32, #[comptime] width: u32) -> T {
    let mut slots = Shared::<[T]>::new_slice(CUBE_UNITS);
    slots[UNIT_POS as usize] = value;
    sync_cube();
    let other = slots[(UNIT_POS / width * width + source) as usize];
    sync_cube();
    other
}

/// `c + Σ a[i]·b[i]` over four packed signed bytes, byte by byte with masks: a formulation
/// independent of `island_intrinsics::dp4a::emulate` (which sign-extends by shifting).
#[cube]
pub fn dot4_i8(a: i32, b: i32, c: i32) -> i32 {
    let mut acc = c;
    #[unroll]
    for byte in 0..4i32 {
        let x = ((a >> (8 * byte)) & 0xff ^ 0x80) - 0x80;
        let y = ((b >> (8 * byte)) & 0xff ^ 0x80) - 0x80;
        acc += x * y;
    }
    acc
}

/// `a / b` in IEEE 754 binary32, rounded to nearest even, with integer arithmetic only: the same
/// bits on every runtime, including those whose division is not correctly rounded (Vulkan
/// allows 2.5 ulp for `OpFDiv`). Subnormals in and out, signed zeros, infinities; a NaN result
/// is the canonical quiet NaN.
#[cube]
pub fn div_rn(a: f32, b: f32) -> f32 {
    let ua = u32::reinterpret(a);
    let ub = u32::reinterpret(b);
    let sign = (ua ^ ub) & 0x8000_0000u32;
    let (ea, fa) = ((ua >> 23) & 0xff, ua & 0x7f_ffff);
    let (eb, fb) = ((ub >> 23) & 0xff, ub & 0x7f_ffff);
    let a_nan = ea == 0xff && fa != 0;
    let b_nan = eb == 0xff && fb != 0;
    let a_inf = ea == 0xff && fa == 0;
    let b_inf = eb == 0xff && fb == 0;
    let a_zero = (ua & 0x7fff_ffff) == 0;
    let b_zero = (ub & 0x7fff_ffff) == 0;
    let bits = if a_nan || b_nan || (a_inf && b_inf) || (a_zero && b_zero) {
        0x7fc0_0000u32
    } else if a_inf || b_zero {
        sign | 0x7f80_0000u32
    } else if a_zero || b_inf {
        sign
    } else {
        let ma = significand(ea, fa);
        let mb = significand(eb, fb);
        // Long division: q = floor(ma / mb · 2^25), 26 bits, and the remainder.
        let mut r = ma;
        let mut q = 0u32;
        for _ in 0..26u32 {
            q <<= 1u32;
            if r >= mb {
                r -= mb;
                q |= 1u32;
            }
            r <<= 1u32;
        }
        // 24 significand bits and a guard bit; the rest is sticky.
        let big = q >> 25u32;
        let sticky = r != 0 || (big == 1 && (q & 1) == 1);
        let e = exponent(ea, fa) - exponent(eb, fb) + 126 + i32::cast_from(big);
        round_pack(sign, e, q >> big, sticky)
    };
    f32::reinterpret(bits)
}

/// `a·b + c` in IEEE 754 binary32 with two roundings: the product rounded to binary32, then the
/// sum, what Rust's `a * b + c` means. The product comes from [`mul_rn`], integer operations,
/// so no compiler sees a multiply feeding the add and none can fuse them. (Converting a
/// binary64 product would not do: NVRTC and NVIDIA's Vulkan compiler fold
/// `(float)((double)a * (double)b)` back into a binary32 product, which is exact, and then
/// contract it with the add, as measured on the H200, 2026-12-02.)
#[cube]
pub fn mul_add_rounded(a: f32, b: f32, c: f32) -> f32 {
    mul_rn(a, b) + c
}

/// `a · b` in IEEE 754 binary32, rounded to nearest even: the exact binary64 product (two
/// binary32 significands need 48 bits), rounded to binary32 with integer operations on its
/// bits, subnormal and overflowing results included. A NaN result is the canonical quiet NaN.
#[cube]
pub fn mul_rn(a: f32, b: f32) -> f32 {
    let bits = u64::reinterpret(f64::cast_from(a) * f64::cast_from(b));
    let sign = u32::cast_from(bits >> 32u64) & 0x8000_0000u32;
    let exp = i32::cast_from((bits >> 52u64) & 0x7ffu64);
    let fraction = bits & 0xf_ffff_ffff_ffffu64;
    // The binary32 exponent the product would have as a normal number.
    let e = exp - 1023 + 127;
    let out = if exp == 0x7ff {
        if fraction == 0u64 { sign | 0x7f80_0000u32 } else { 0x7fc0_0000u32 }
    } else if exp == 0 {
        // Zero: a product of two binary32 values is never a binary64 subnormal.
        sign
    } else if e >= 255 {
        sign | 0x7f80_0000u32
    } else {
        let m = fraction | 0x10_0000_0000_0000u64;
        // Bits to drop: 29 for a normal result, more for a subnormal one.
        let shift = if e >= 1 { 29 } else { 30 - e };
        if shift >= 54 {
            // Below half the smallest subnormal: rounds to zero.
            sign
        } else {
            let s = u64::cast_from(shift as u32);
            let kept = m >> s;
            let dropped = m & ((1u64 << s) - 1u64);
            let half = 1u64 << (s - 1u64);
            let up = dropped > half || (dropped == half && (kept & 1u64) == 1u64);
            let rounded = u32::cast_from(kept + select(up, 1u64, 0u64));
            // A normal significand carries its leading bit into the exponent field; a carry
            // out of it (or out of the subnormals) is the next binade, infinity at the top.
            let magnitude = if e >= 1 { (u32::cast_from(e) << 23u32) + rounded - 0x80_0000u32 } else { rounded };
            sign | magnitude
        }
    };
    f32::reinterpret(out)
}

/// `a·b + c` in IEEE 754 binary32 with one rounding (to nearest even): the fused multiply-add,
/// on every runtime with binary64 arithmetic, including Vulkan drivers whose `Fma` rounds the
/// product first (the Vulkan specification allows it; lavapipe does it). The binary64 product
/// of two binary32 values is exact, so `p + c` is one binary64 rounding whether or not a
/// compiler fuses it; Knuth's two-sum recovers that rounding's error, and the sum is rounded
/// to odd (its last bit set when inexact) so that the final rounding to binary32 is correct
/// (binary64 has more than twice binary32's precision plus two bits). Special values follow
/// IEEE through the binary64 operations.
#[cube]
pub fn fma_rn(a: f32, b: f32, c: f32) -> f32 {
    let p = f64::cast_from(a) * f64::cast_from(b);
    let c = f64::cast_from(c);
    let s = p + c;
    let bp = s - p;
    let e = (p - (s - bp)) + (c - bp);
    let mut bits = u64::reinterpret(s);
    // Only a finite, inexact sum with an even last bit moves: toward the exact value.
    if (bits & 0x7ff0_0000_0000_0000u64) != 0x7ff0_0000_0000_0000u64 && e != 0.0 && (bits & 1u64) == 0u64 {
        if (e > 0.0 && s > 0.0) || (e < 0.0 && s < 0.0) {
            bits += 1u64;
        } else {
            bits -= 1u64;
        }
    }
    f32::cast_from(f64::reinterpret(bits))
}

/// `sqrt(x)` in IEEE 754 binary32, rounded to nearest even, with integer arithmetic only (Vulkan
/// lets `sqrt` inherit the error of `inversesqrt`). `sqrt(-0) = -0`; negative inputs and NaNs give
/// the canonical quiet NaN.
#[cube]
pub fn sqrt_rn(x: f32) -> f32 {
    let u = u32::reinterpret(x);
    let (e, f) = ((u >> 23) & 0xff, u & 0x7f_ffff);
    let bits = if (u & 0x7fff_ffff) == 0 {
        u
    } else if (e == 0xff && f != 0) || (u >> 31) == 1 {
        0x7fc0_0000u32
    } else if e == 0xff {
        u
    } else {
        let mut m = significand(e, f);
        // x = m · 2^(p - 23) with p the unbiased exponent, made even.
        let mut p = exponent(e, f) - 127;
        if (p & 1) == 1 {
            m <<= 1u32;
            p -= 1;
        }
        // The root of m · 2^25 (< 2^50), digit by digit: 25 bits, 24 of them the significand.
        let mut stream = m << 7u32;
        let mut rem = 0u32;
        let mut root = 0u32;
        for _ in 0..25u32 {
            rem = (rem << 2u32) | (stream >> 30u32);
            stream <<= 2u32;
            let trial = (root << 2u32) | 1u32;
            if rem >= trial {
                rem -= trial;
                root = (root << 1u32) | 1u32;
            } else {
                root <<= 1u32;
            }
        }
        round_pack(0u32, p / 2 + 127, root, rem != 0)
    };
    f32::reinterpret(bits)
}

/// Rounds and packs a result: `g` holds 24 significand bits (implicit bit at 23 when normal) and
/// a guard bit below them, `sticky` whether anything non-zero lies below the guard, `e` the biased
/// exponent. Underflow shifts into a subnormal (collecting sticky bits), overflow gives infinity.
#[cube]
fn round_pack(sign: u32, e: i32, g: u32, sticky: bool) -> u32 {
    let mut g = g;
    let mut sticky = sticky;
    let mut field = e;
    if e <= 0 {
        let k = u32::cast_from(1 - e);
        if k >= 26 {
            sticky = sticky || g != 0;
            g = 0u32;
        } else {
            sticky = sticky || (g & ((1u32 << k) - 1)) != 0;
            g >>= k;
        }
        field = 0;
    }
    let m = g >> 1u32;
    let guard = (g & 1) == 1;
    let up = u32::cast_from(guard && (sticky || (m & 1) == 1));
    let mut bits = m + up;
    if field > 0 {
        bits = (u32::cast_from(field - 1) << 23u32) + m + up;
    }
    if field >= 255 {
        bits = 0x7f80_0000u32;
    }
    sign | bits
}

/// `acc (16×16) += a (16×16·k_tiles) · b (16·k_tiles×16)`, row-major everywhere, each 16 of `k`
/// one fused step as sm_90's tensor cores compute it: the 16 exact products and the accumulator
/// cut to a window 25 bits below the largest exponent (truncated), added exactly, rounded
/// toward zero (`island_intrinsics::tensor_core` has the model and its measurement). Lane `l` of a 32-unit
/// plane computes the outputs `8l … 8l + 7`.
///
/// Formulated apart from the emulation: every term is cut by scaling it with a power of two in
/// f32 (exact) and truncating to an integer; the products are added in two's complement; the
/// result is normalised by counting bits.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn tile_f16_fused(
    a: &[half::f16],
    lda: u32,
    b: &[half::f16],
    ldb: u32,
    acc: &mut [f32],
    ldc: u32,
    #[comptime] k_tiles: u32,
) {
    let lane = UNIT_POS % 32;
    #[unroll]
    for j in 0..8u32 {
        let e = lane * 8 + j;
        let (row, col) = (e / 16, e % 16);
        let mut d = acc[(row * ldc + col) as usize];
        for kt in 0..k_tiles {
            d = fused_step(a, row * lda + kt * 16, b, kt * 16 * ldb + col, ldb, d);
        }
        acc[(row * ldc + col) as usize] = d;
    }
}

/// The exponent an f16 (given as its exact f32 value's bits) has in its own format, subnormals
/// and zero at −14.
#[cube]
fn half_exponent(bits: u32) -> i32 {
    max(i32::cast_from((bits >> 23) & 0xff) - 127, -14i32)
}

/// `2^n` in binary32, for `n` in the normal range.
#[cube]
fn pow2(n: i32) -> f32 {
    f32::reinterpret(u32::cast_from(n + 127) << 23)
}

/// One fused step: `c + Σ_{i<16} a[a_at + i] · b[b_at + i·ldb]` (see [`tile_f16_fused`]).
#[cube]
pub fn fused_step(a: &[half::f16], a_at: u32, b: &[half::f16], b_at: u32, ldb: u32, c: f32) -> f32 {
    let cb = u32::reinterpret(c);
    let c_mag = cb & 0x7fff_ffff;
    // Specials, from the products' own IEEE results: a NaN anywhere (0 · ∞ included), or
    // infinities of both signs, make the canonical NaN.
    let mut nan = c_mag > 0x7f80_0000;
    let mut up = c_mag == 0x7f80_0000 && cb == c_mag;
    let mut down = c_mag == 0x7f80_0000 && cb != c_mag;
    // The largest exponent of a nonzero product (`live` once there is one).
    let mut live = false;
    let mut top = 0i32;
    for i in 0..16u32 {
        let x = f32::cast_from(a[(a_at + i) as usize]);
        let y = f32::cast_from(b[(b_at + i * ldb) as usize]);
        let p = u32::reinterpret(x * y);
        let pm = p & 0x7fff_ffff;
        nan = nan || pm > 0x7f80_0000;
        up = up || p == 0x7f80_0000;
        down = down || p == 0xff80_0000;
        if pm != 0 && pm < 0x7f80_0000 {
            let e = half_exponent(u32::reinterpret(x)) + half_exponent(u32::reinterpret(y));
            top = if live { max(top, e) } else { e };
            live = true;
        }
    }
    let mut bits = cb;
    if nan || (up && down) {
        bits = 0x7fff_ffffu32;
    } else if up || down {
        bits = if up { 0x7f80_0000u32 } else { 0xff80_0000u32 };
    } else if !live {
        // No nonzero product: the accumulator as it is; a zero sum is +0, even of −0 terms.
        if c_mag == 0 {
            bits = 0u32;
        }
    } else {
        // The window's last bit weighs 2^lsb; the accumulator joins the frame when it is larger.
        let c_field = (cb >> 23) & 0xff;
        let c_exp = max(i32::cast_from(c_field) - 127, -126i32);
        let e = if c_mag != 0 { max(top, c_exp) } else { top };
        let lsb = e - 25;
        // With a nonzero product e ≥ −28, so 2^-lsb is a normal f32 and every scaled term is
        // exact (or below 1, where truncation makes it 0 whatever a flush does).
        let scale = pow2(-lsb);
        let mut s = 0i32;
        for i in 0..16u32 {
            let p = f32::cast_from(a[(a_at + i) as usize]) * f32::cast_from(b[(b_at + i * ldb) as usize]);
            let t = i32::cast_from(u32::cast_from(p.abs() * scale));
            if u32::reinterpret(p) >> 31 == 1 {
                s -= t;
            } else {
                s += t;
            }
        }
        // |s| < 16 · 2^27 = 2^31: it fits. The accumulator's cut (< 2^26) joins in
        // sign and magnitude.
        let tc = u32::cast_from(c.abs() * scale);
        let c_negative = cb >> 31 == 1;
        let s_negative = s < 0;
        let s_mag = u32::cast_from(if s_negative { -s } else { s });
        let mut negative = s_negative;
        let mut mag = s_mag + tc;
        if (s_negative && !c_negative) || (c_negative && !s_negative) {
            if s_mag >= tc {
                mag = s_mag - tc;
            } else {
                mag = tc - s_mag;
                negative = c_negative;
            }
        }
        bits = 0u32;
        if mag != 0 {
            let mut width = 0u32;
            for i in 0..32u32 {
                if (mag >> i) != 0 {
                    width = i + 1;
                }
            }
            // A nonzero result is at least 2^lsb ≥ 2^-53: always normal; f16 inputs cannot
            // reach past f32's range.
            let exp = lsb + i32::cast_from(width) - 1;
            let sig = if width > 24 { mag >> (width - 24) } else { mag << (24 - width) };
            bits = (u32::cast_from(negative) << 31) | (u32::cast_from(exp + 127) << 23) | (sig & 0x7f_ffff);
        }
    }
    f32::reinterpret(bits)
}
