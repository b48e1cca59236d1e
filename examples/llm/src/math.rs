//! `exp` as the engine defines it: the same operations on every backend, so the same bits.
//!
//! No backend's `exp` is used: CUDA's `expf`, Vulkan's `Exp` and LLVM's `llvm.exp` are each
//! accurate to a few ulp but not the same function. This one reduces `x = k·ln 2 + r` (Cody and
//! Waite's two-part `ln 2`), evaluates the degree-7 Taylor polynomial of `e^r` for
//! `|r| ≤ ln 2 / 2` by Horner's rule with [`exact::fma`] (relative error below 3·10⁻⁷), and
//! scales by `2^k` in two exact steps. Results below the smallest normal float are 0: the
//! H200's Vulkan driver flushes subnormal results of ordinary arithmetic, so a subnormal here
//! would make that backend differ; flushing in the definition makes every backend agree.
//! [`exp_host`] is the same function in plain Rust, operation for operation.

use cubecl::prelude::*;
use island_intrinsics::exact;
use island_runtime::Target;

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// `ln 2` split so that `k·LN2_HI` is exact for `|k| < 2^9`.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
/// `1/n!` for n = 7 … 2 (the last two coefficients are 1).
const T7: f32 = 1.0 / 5040.0;
const T6: f32 = 1.0 / 720.0;
const T5: f32 = 1.0 / 120.0;
const T4: f32 = 1.0 / 24.0;
const T3: f32 = 1.0 / 6.0;
const T2: f32 = 0.5;
/// Above it, `e^x` overflows to +∞ (the scaling does that itself between 88.72 and this).
const OVERFLOW: f32 = 88.8;
/// Below it, `e^x` is 0 (between this and −87.34 the flush below does it).
const UNDERFLOW: f32 = -88.0;
const MIN_NORMAL: f32 = f32::MIN_POSITIVE;

/// `e^x` as defined above: +∞ above 88.8, 0 where the result would be below the normal range,
/// the canonical quiet NaN for a NaN.
#[cube]
#[allow(clippy::eq_op)] // `x != x` is the NaN test every backend lowers alike
pub fn exp(x: f32, #[comptime] target: Target) -> f32 {
    let mut y = 0.0f32;
    if x != x {
        y = f32::reinterpret(0x7fc0_0000u32);
    } else if x > OVERFLOW {
        y = f32::reinterpret(0x7f80_0000u32);
    } else if x >= UNDERFLOW {
        let k = exact::fma(x, LOG2E, 0.5f32, target).floor();
        let r = exact::fma(-k, LN2_HI, x, target);
        let r = exact::fma(-k, LN2_LO, r, target);
        let mut p = exact::fma(T7, r, T6, target);
        p = exact::fma(p, r, T5, target);
        p = exact::fma(p, r, T4, target);
        p = exact::fma(p, r, T3, target);
        p = exact::fma(p, r, T2, target);
        p = exact::fma(p, r, 1.0f32, target);
        p = exact::fma(p, r, 1.0f32, target);
        let ki = i32::cast_from(k);
        let k1 = ki / 2;
        let k2 = ki - k1;
        let s1 = f32::reinterpret(u32::cast_from(k1 + 127) << 23u32);
        let s2 = f32::reinterpret(u32::cast_from(k2 + 127) << 23u32);
        y = p * s1 * s2;
        if y < MIN_NORMAL {
            y = 0.0f32;
        }
    }
    y
}

/// `v`, or a zero of its sign where `v` is subnormal: what a device that flushes subnormal
/// operands and results computes (the H200's Vulkan driver), made the definition.
#[cube]
pub fn flush(v: f32) -> f32 {
    let mut y = v;
    if v.abs() < MIN_NORMAL {
        // The sign bit alone (a compiler may fold `v · 0` to +0).
        y = f32::reinterpret(u32::reinterpret(v) & 0x8000_0000u32);
    }
    y
}

/// [`flush`] in plain Rust.
pub fn flush_host(v: f32) -> f32 {
    if v.abs() < MIN_NORMAL { f32::from_bits(v.to_bits() & 0x8000_0000) } else { v }
}

/// `y[i] = exp(x[i])`: the kernel the checks hold to [`exp_host`].
#[island_runtime::islands]
#[cube(launch)]
pub fn exp_each(x: &[f32], y: &mut [f32]) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        y[i] = exp(x[i], target);
    }
}

/// [`exp`] in plain Rust, operation for operation (`mul_add` is a fused multiply-add).
pub fn exp_host(x: f32) -> f32 {
    if x.is_nan() {
        return f32::from_bits(0x7fc0_0000);
    }
    if x > OVERFLOW {
        return f32::INFINITY;
    }
    if x < UNDERFLOW {
        return 0.0;
    }
    let k = x.mul_add(LOG2E, 0.5).floor();
    let r = (-k).mul_add(LN2_HI, x);
    let r = (-k).mul_add(LN2_LO, r);
    let p = [T6, T5, T4, T3, T2, 1.0, 1.0].iter().fold(T7, |p, &c| p.mul_add(r, c));
    let ki = k as i32;
    let (k1, k2) = (ki / 2, ki - ki / 2);
    let scale = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    let y = p * scale(k1) * scale(k2);
    if y < MIN_NORMAL { 0.0 } else { y }
}
