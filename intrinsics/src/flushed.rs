//! Float arithmetic that flushes subnormals: `φa · φb` and `fma(φa, φb, φc)`, each rounded once
//! to nearest even, a tiny result a zero of its sign, `φ` a subnormal flushed to a zero of its
//! sign ([`portable::flush`]); a result is tiny where, rounded to 24 bits with an unbounded
//! exponent, it is below 2⁻¹²⁶ in magnitude. Where a definition flushes, as the MMQ's does so
//! that a device that flushes computes it itself, these are one instruction each on CUDA
//! (`mul.rn.ftz.f32`, `fma.rn.ftz.f32`) against the three integer operations of every
//! written-out `φ`.
//!
//! Which results a hardware flush takes is the device's: a result may be tiny before rounding,
//! after rounding to 24 bits with an unbounded exponent, or once rounded as IEEE 754 rounds
//! with gradual underflow; the three differ within an ulp below 2⁻¹²⁶. On the H100 (driver
//! 580.159.04, 2026-12-07) `mul.rn.ftz.f32` and `fma.rn.ftz.f32` flushed `2⁻¹²⁶ − 2⁻¹⁵⁰`, which
//! IEEE rounds up to 2⁻¹²⁶ (a tie), and kept 2⁻¹²⁶ for products a residue below it: of 2²⁵
//! products and sums built near 2⁻¹²⁶, 1,200 and 2,896 came back unlike the other two rules
//! (`docs/results/h100/2026-12-07-f/ftz-rules.txt`). Each intrinsic is `device_defined`, and its
//! check builds, in three lanes of four, operands whose exact results lie on both sides of
//! 2⁻¹²⁶ within a few of its ulps, rounding ties among them, where the three rules give
//! different bits: a device runs the native lowering only where conformance showed it equal to
//! the emulation there. (No window holds the midpoint `2⁻¹²⁶ − 2⁻¹⁵¹` itself; the definition
//! rounds it to even, up to 2⁻¹²⁶.)

use cubecl::prelude::*;
use island_portable as portable;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

/// The definition of [`mul`] in 32-bit integer operations ([`portable::mul_flushed32`]), the
/// `default` of it and its check.
#[cube]
pub fn mul_defined(a: f32, b: f32) -> f32 {
    portable::mul_flushed32(a, b)
}

/// The definition of [`fma`] in 32-bit integer operations ([`portable::fma_flushed32`]), the
/// `default` of it and its check.
#[cube]
pub fn fma_defined(a: f32, b: f32, c: f32) -> f32 {
    portable::fma_flushed32(a, b, c)
}

/// `φa · φb` rounded once to nearest even, a tiny result zero, on every backend.
#[islands]
#[cube]
pub fn mul(a: f32, b: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32) -> f32;
        cuda => ftz_mul::call(a, b, target),
        default => mul_defined(a, b),
    }
}

/// `fma(φa, φb, φc)`, `a·b + c` rounded once to nearest even, a tiny result zero, on every
/// backend.
#[islands]
#[cube]
pub fn fma(a: f32, b: f32, c: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32) -> f32;
        cuda => ftz_fma::call(a, b, c, target),
        default => fma_defined(a, b, c),
    }
}

/// PTX `mul.rn.ftz.f32`: subnormal operands and results flushed to zeros of their signs.
#[intrinsic(
    name = "flushed::mul<f32>",
    semantics = device_defined("which results the flush takes: tiny after rounding with an unbounded exponent (the H100's), before rounding, or after IEEE rounding"),
    summary = "φa·φb in binary32, one rounding, subnormal operands and tiny results flushed (PTX mul.rn.ftz.f32)",
    check = crate::flushed::mul_check,
    lowerings(cuda => "mul.rn.ftz.f32" sass "FMUL.FTZ"),
)]
pub mod ftz_mul {
    use cubecl::prelude::*;
    use island_portable as portable;

    /// Operands and result cross the asm as their bits (`u32` registers), moved to and from
    /// `.f32` registers inside it: CubeCL 0.11 hands an operand that is a literal over as a
    /// float literal PTX does not take, and an earlier asm statement's output as its local's
    /// address (ptxas: "Arguments mismatch for instruction 'fma'", H100, 2026-12-07).
    #[cube]
    pub fn cuda(a: f32, b: f32) -> f32 {
        let (x, y) = (u32::reinterpret(a), u32::reinterpret(b));
        let d: u32;
        gpu_asm!(
            "{{ .reg .f32 a, b, p; mov.b32 a, {}; mov.b32 b, {}; mul.rn.ftz.f32 p, a, b; mov.b32 {}, p; }}",
            in(_) x, in(_) y, out(_) d,
            options(pure, nomem)
        );
        f32::reinterpret(d)
    }

    /// The executing runtime's IEEE product of the flushed operands, a zero of its sign where
    /// the product, formed in binary64, is tiny ([`crate::flushed::tiny`]).
    #[cube]
    pub fn emulate(a: f32, b: f32) -> f32 {
        let (x, y) = (portable::flush(a), portable::flush(b));
        crate::flushed::zero_where_tiny(x * y, crate::flushed::tiny(x, y, 0.0f32))
    }
}

/// PTX `fma.rn.ftz.f32`: subnormal operands and results flushed to zeros of their signs.
#[intrinsic(
    name = "flushed::fma<f32>",
    semantics = device_defined("which results the flush takes: tiny after rounding with an unbounded exponent (the H100's), before rounding, or after IEEE rounding"),
    summary = "fma(φa, φb, φc) in binary32, one rounding, subnormal operands and tiny results flushed (PTX fma.rn.ftz.f32)",
    check = crate::flushed::fma_check,
    lowerings(cuda => "fma.rn.ftz.f32" sass "FFMA.FTZ"),
)]
pub mod ftz_fma {
    use cubecl::prelude::*;
    use island_portable as portable;

    /// Operands and result as their bits, as [`super::ftz_mul`]'s.
    #[cube]
    pub fn cuda(a: f32, b: f32, c: f32) -> f32 {
        let (x, y, z) = (u32::reinterpret(a), u32::reinterpret(b), u32::reinterpret(c));
        let d: u32;
        gpu_asm!(
            "{{ .reg .f32 a, b, c, s; mov.b32 a, {}; mov.b32 b, {}; mov.b32 c, {}; fma.rn.ftz.f32 s, a, b, c; mov.b32 {}, s; }}",
            in(_) x, in(_) y, in(_) z, out(_) d,
            options(pure, nomem)
        );
        f32::reinterpret(d)
    }

    /// The executing runtime's fused multiply-add (LLVM's `llvm.fma` on the CPU runtime) of
    /// the flushed operands, a zero of its sign where the sum is tiny ([`crate::flushed::tiny`]).
    #[cube]
    pub fn emulate(a: f32, b: f32, c: f32) -> f32 {
        let (x, y, z) = (portable::flush(a), portable::flush(b), portable::flush(c));
        crate::flushed::zero_where_tiny(cubecl::prelude::fma(x, y, z), crate::flushed::tiny(x, y, z))
    }
}

/// Whether `a·b + c` is tiny, the emulations' rule: below `2⁻¹²⁶ − 2⁻¹⁵¹` exactly, the midpoint
/// below 2⁻¹²⁶ (which rounds to even, up). The binary64 product of two binary32 values is
/// exact, and Knuth's two-sum gives the sum as `s + t` exactly, so `s` decides unless it is the
/// midpoint, where `t`'s sign does. (A contraction of `p + z` into a binary64 `fma` gives the
/// same bits: `p` is exact.)
#[cube]
pub(crate) fn tiny(a: f32, b: f32, c: f32) -> bool {
    let p = f64::cast_from(a) * f64::cast_from(b);
    let z = f64::cast_from(c);
    let s = p + z;
    let bp = s - p;
    let t = (p - (s - bp)) + (z - bp);
    let midpoint = f64::reinterpret(0x380f_ffff_f000_0000u64);
    let magnitude = f64::abs(s);
    magnitude < midpoint || (magnitude == midpoint && ((t < 0.0f64 && s > 0.0f64) || (t > 0.0f64 && s < 0.0f64)))
}

/// `rounded`, or a zero of its sign where `tiny`.
#[cube]
pub(crate) fn zero_where_tiny(rounded: f32, tiny: bool) -> f32 {
    let bits = u32::reinterpret(rounded);
    f32::reinterpret(select(tiny, bits & 0x8000_0000u32, bits))
}

// The checks. Lane `i % 4 == 0` takes the proof's operands as drawn (every value group); the
// other three build theirs from the bits of `i`:
// - family A: x = 2⁻¹²⁶(1 + k·2⁻²³), y = 1 − j·2⁻²⁴ with j = 2k + e − 4, so that x·y lies within
//   a few ulps of 2⁻¹²⁶, above and below; at e = 4 it is just below 2⁻¹²⁶ and rounds up to it
//   (a flush decided before rounding gives 0 there);
// - family B (products): x = 2⁻¹²⁵(1 − k·2⁻²⁴), y = ½(1 − j·2⁻²⁴) with small k, j: at k + j = 1
//   x·y is exactly 2⁻¹²⁶ − 2⁻¹⁵⁰, the tie IEEE rounds up to 2⁻¹²⁶ (kept) and which rounding with
//   an unbounded exponent leaves subnormal (flushed);
// - family C (fused): family A's x·y minus 2⁻¹²⁵, whose magnitude lies just above that tie
//   (one ulp of 2⁻¹⁵⁰ minus a residue far below it) at j = 2k − 1;
// with the signs of both products and of the addend taken from higher bits of `i`, and `c` a
// subnormal (flushed as an operand) in one lane of family A in two.

/// Operand `x` of lane `i` (the proof's `a` in lanes `i % 4 == 0`).
#[cube]
pub fn window_x(a: f32, i: u32) -> f32 {
    let family = i % 4;
    let k = (i >> 2) & 0x7f;
    let mut x = a;
    if family == 1 || family == 3 {
        x = f32::reinterpret(0x0080_0000u32 + k + 1);
    } else if family == 2 {
        x = f32::reinterpret(0x0100_0000u32 - (k & 7));
    }
    if family != 0 && (i >> 20) & 1 == 1 {
        x = -x;
    }
    x
}

/// Operand `y` of lane `i` (the proof's `b` in lanes `i % 4 == 0`); `fused` selects family C.
#[cube]
pub fn window_y(b: f32, i: u32, #[comptime] fused: bool) -> f32 {
    let family = i % 4;
    let k = ((i >> 2) & 0x7f) + 1;
    let e = (i >> 9) & 7;
    let mut y = b;
    if family == 1 || (family == 3 && !fused) {
        y = f32::reinterpret(0x3f80_0000u32 + 4 - 2 * k - e);
    } else if family == 3 {
        // Family C: j = 2k − 1 in one lane of two, otherwise within two of it.
        let j = 2 * k - 1 + (e & 1) * ((e >> 1) & 3);
        y = f32::reinterpret(0x3f80_0000u32 - j);
    } else if family == 2 {
        y = f32::reinterpret(0x3f00_0000u32 - ((i >> 12) & 7));
    }
    if family != 0 && (i >> 21) & 1 == 1 {
        y = -y;
    }
    y
}

/// Operand `z` of lane `i` (the proof's `c` in lanes `i % 4 == 0`).
#[cube]
pub fn window_z(c: f32, i: u32) -> f32 {
    let family = i % 4;
    let mut z = c;
    if family == 3 {
        z = f32::reinterpret(0x8100_0000u32);
    } else if family == 2 {
        z = 0.0f32;
    } else if family == 1 {
        z = f32::reinterpret(((i >> 15) & 1) * (1 + ((i >> 16) & 0xf)));
    }
    if family != 0 && (i >> 22) & 1 == 1 {
        z = -z;
    }
    z
}

/// The check of `flushed::mul`: the proof's operands and the products near 2⁻¹²⁶ above.
#[islands]
#[cube]
pub fn mul_check(a: f32, b: f32, i: u32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, i: u32) -> f32;
        cuda => ftz_mul::call(window_x(a, i), window_y(b, i, false), target),
        default => mul_defined(window_x(a, i), window_y(b, i, false)),
    }
}

/// The check of `flushed::fma`: the proof's operands and the fused sums near 2⁻¹²⁶ above.
#[islands]
#[cube]
pub fn fma_check(a: f32, b: f32, c: f32, i: u32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32, i: u32) -> f32;
        cuda => ftz_fma::call(window_x(a, i), window_y(b, i, true), window_z(c, i), target),
        default => fma_defined(window_x(a, i), window_y(b, i, true), window_z(c, i)),
    }
}

/// The checks' operands in plain Rust, for the unit tests below: the windows they are built to
/// reach must be reached.
#[cfg(test)]
mod tests {
    fn x(i: u32) -> f32 {
        let (family, k) = (i % 4, (i >> 2) & 0x7f);
        let x = match family {
            1 | 3 => f32::from_bits(0x0080_0000 + k + 1),
            2 => f32::from_bits(0x0100_0000 - (k & 7)),
            _ => 1.0,
        };
        if (i >> 20) & 1 == 1 { -x } else { x }
    }

    fn y(i: u32, fused: bool) -> f32 {
        let (family, k, e) = (i % 4, ((i >> 2) & 0x7f) + 1, (i >> 9) & 7);
        let y = match family {
            1 => f32::from_bits(0x3f80_0000 + 4 - 2 * k - e),
            3 if !fused => f32::from_bits(0x3f80_0000 + 4 - 2 * k - e),
            3 => f32::from_bits(0x3f80_0000 - (2 * k - 1 + (e & 1) * ((e >> 1) & 3))),
            2 => f32::from_bits(0x3f00_0000 - ((i >> 12) & 7)),
            _ => 1.0,
        };
        if (i >> 21) & 1 == 1 { -y } else { y }
    }

    /// |x·y| or |x·y − 2⁻¹²⁵| exactly, in units of 2⁻¹⁵⁰ (binary64 holds the products exactly).
    fn exact(i: u32, fused: bool) -> f64 {
        let p = x(i).abs() as f64 * y(i, fused).abs() as f64;
        let r = if fused && i % 4 == 3 { (p - 2f64.powi(-125)).abs() } else { p };
        r / 2f64.powi(-150)
    }

    #[test]
    fn the_windows_are_reached() {
        let min = 2f64.powi(24); // 2⁻¹²⁶ in units of 2⁻¹⁵⁰
        let (mut rounds_up, mut tie, mut above_tie) = (false, false, false);
        for i in 0..(1u32 << 15) {
            let e = exact(i, false);
            rounds_up |= i % 4 == 1 && e < min && e > min - 0.5;
            tie |= i % 4 == 2 && e == min - 1.0;
            let f = exact(i, true);
            above_tie |= i % 4 == 3 && f > min - 1.0 && f < min - 0.5;
        }
        assert!(rounds_up, "no product just below 2⁻¹²⁶ that rounds up to it");
        assert!(tie, "no product at the tie 2⁻¹²⁶ − 2⁻¹⁵⁰");
        assert!(above_tie, "no fused sum between the tie and 2⁻¹²⁶ − 2⁻¹⁵¹");
    }
}
