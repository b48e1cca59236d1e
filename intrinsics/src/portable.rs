//! Portable formulations an island's `default` arm can use: plain CubeCL that runs on every
//! runtime (shared memory and barriers, no plane operations), written to define the order of
//! operations the accelerated arms reproduce.
//!
//! Nothing here uses `island_runtime::emulation`, and no `default` arm may (a test in `proofs`
//! scans for it): a proof runs an arm through its emulation against `default`, so code the two
//! shared would cancel out of the comparison, bugs included.

use cubecl::prelude::*;

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

/// The values of this unit's group of `width` consecutive units, in unit order.
#[cube]
fn group_values<T: CubePrimitive>(value: T, #[comptime] width: u32) -> Array<T> {
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
/// independent of [`crate::dp4a::emulate`] (which sign-extends by shifting).
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

/// The significand of a finite non-zero binary32 with its implicit bit, normalised into
/// `[2^23, 2^24)` (subnormals shifted up).
#[cube]
fn significand(e: u32, f: u32) -> u32 {
    let mut m = f | 0x80_0000u32;
    if e == 0 {
        m = f << (f.leading_zeros() - 8);
    }
    m
}

/// The biased exponent that goes with [`significand`]: below 1 for subnormals.
#[cube]
fn exponent(e: u32, f: u32) -> i32 {
    let mut x = i32::cast_from(e);
    if e == 0 {
        x = 9 - i32::cast_from(f.leading_zeros());
    }
    x
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
