//! Flushing a subnormal to a zero of its sign, as a definition: a device whose float arithmetic
//! reads subnormal operands as zero and writes subnormal results as zero (NVIDIA's Vulkan driver
//! declares no `DenormPreserve`) computes a `default` that flushes every value it could meet
//! subnormal, bit for bit, and so does every other device, with the flush written out.

use cubecl::prelude::*;

/// `v`, or a zero of its sign where `v` is subnormal. Integer operations only: no device's
/// float mode can change it.
#[cube]
pub fn flush(v: f32) -> f32 {
    let bits = u32::reinterpret(v);
    let mut out = bits;
    if (bits & 0x7f80_0000u32) == 0u32 {
        out = bits & 0x8000_0000u32;
    }
    f32::reinterpret(out)
}

/// [`flush`] in plain Rust, for references.
pub fn flush_host(v: f32) -> f32 {
    if v.to_bits() & 0x7f80_0000 == 0 { f32::from_bits(v.to_bits() & 0x8000_0000) } else { v }
}

/// `φa · φb` rounded to nearest even, a zero of its sign where the product is tiny (below 2⁻¹²⁶
/// once rounded to 24 bits with an unbounded exponent): [`crate::mul_flushed32`] in plain Rust,
/// for references.
pub fn mul_flushed_host(a: f32, b: f32) -> f32 {
    let (a, b) = (flush_host(a), flush_host(b));
    flushed_result(a * b, tiny(a, b, 0.0))
}

/// `φa·φb + φc` rounded once, a zero of its sign where the sum is tiny: [`crate::fma_flushed32`]
/// in plain Rust, for references.
pub fn fma_flushed_host(a: f32, b: f32, c: f32) -> f32 {
    let (a, b, c) = (flush_host(a), flush_host(b), flush_host(c));
    flushed_result(a.mul_add(b, c), tiny(a, b, c))
}

fn flushed_result(rounded: f32, tiny: bool) -> f32 {
    if tiny { f32::from_bits(rounded.to_bits() & 0x8000_0000) } else { rounded }
}

/// Whether `a·b + c` is tiny: below 2⁻¹²⁶ once rounded to 24 bits with an unbounded exponent,
/// i.e. below `2⁻¹²⁶ − 2⁻¹⁵¹` exactly (the midpoint rounds to even, up to 2⁻¹²⁶). The binary64
/// product is exact, and Knuth's two-sum gives the sum as `s + t` exactly, so `s` decides
/// unless it is the midpoint, where `t`'s sign does.
fn tiny(a: f32, b: f32, c: f32) -> bool {
    let (p, c) = (a as f64 * b as f64, c as f64);
    let s = p + c;
    let bp = s - p;
    let t = (p - (s - bp)) + (c - bp);
    let midpoint = f64::from_bits(0x380f_ffff_f000_0000);
    s.abs() < midpoint || (s.abs() == midpoint && t != 0.0 && (t < 0.0) != (s < 0.0))
}

#[cfg(test)]
mod tests {
    use super::{flush_host, fma_flushed_host, mul_flushed_host};

    /// The cases where the three tininess rules differ: a product just below 2⁻¹²⁶ that rounds
    /// up to it (kept), `2⁻¹²⁶ − 2⁻¹⁵⁰`, IEEE's tie (flushed), the midpoint `2⁻¹²⁶ − 2⁻¹⁵¹`
    /// (kept: it rounds to even, up), and a fused sum a residue below 2⁻¹²⁶.
    #[test]
    fn flushes_what_rounds_below_the_smallest_normal() {
        let min = f32::MIN_POSITIVE;
        let (x, y) = (f32::from_bits(0x0080_0001), f32::from_bits(0x3f7f_fffe)); // 2⁻¹²⁶(1 + 2⁻²³), 1 − 2⁻²³
        assert_eq!((x * y).to_bits(), min.to_bits());
        assert_eq!(mul_flushed_host(x, y).to_bits(), min.to_bits(), "a residue below 2⁻¹²⁶ is kept");
        assert_eq!(mul_flushed_host(f32::from_bits(0x00ff_ffff), 0.5).to_bits(), 0, "IEEE's tie");
        assert_eq!(mul_flushed_host(-f32::from_bits(0x00ff_ffff), 0.5).to_bits(), 0x8000_0000);
        // 1801·2¹³·2⁻¹⁴⁸ (normal) · 18631·2⁹·2⁻²⁵ = (2²⁵ − 1)·2⁻¹⁵¹, the midpoint.
        let (m, n) = (1801.0f32 * 8192.0 * 2f32.powi(-100) * 2f32.powi(-48), 18631.0f32 * 512.0 * 2f32.powi(-25));
        assert!(m.is_normal());
        assert_eq!((m as f64 * n as f64), f64::from_bits(0x380f_ffff_f000_0000));
        assert_eq!(mul_flushed_host(m, n), min, "the midpoint rounds up");
        assert_eq!(mul_flushed_host(f32::from_bits(0x00ff_fffe), 0.5).to_bits(), 0);
        assert_eq!(mul_flushed_host(f32::from_bits(1), 1e30).to_bits(), 0, "a subnormal operand is zero");
        assert!(mul_flushed_host(f32::NAN, 1.0).is_nan());
        // 2⁻¹²⁴(1 + 2⁻²³)(1 − 2⁻²³) − 3·2⁻¹²⁶ = 2⁻¹²⁶ − 2⁻¹⁷¹: kept; minus 2⁻¹⁴⁹ more: flushed.
        let (a, c) = (f32::from_bits(0x0180_0001), -f32::from_bits(0x0140_0000));
        assert_eq!(fma_flushed_host(a, y, c).to_bits(), min.to_bits());
        let below = f32::from_bits(0x0180_0000);
        assert_eq!(fma_flushed_host(below, f32::from_bits(0x3f7f_ffff), -f32::from_bits(0x0140_0000)).to_bits(), 0);
        assert_eq!(fma_flushed_host(2.0, 3.0, -6.0).to_bits(), 0, "an exact zero is +0");
        assert_eq!(fma_flushed_host(min, 2.0, -min), min);
    }

    #[test]
    fn flushes_subnormals_only() {
        assert_eq!(flush_host(f32::from_bits(1)).to_bits(), 0);
        assert_eq!(flush_host(-f32::from_bits(0x007f_ffff)).to_bits(), 0x8000_0000);
        assert_eq!(flush_host(f32::MIN_POSITIVE), f32::MIN_POSITIVE);
        assert_eq!(flush_host(-0.0).to_bits(), 0x8000_0000);
        assert!(flush_host(f32::NAN).is_nan());
        assert_eq!(flush_host(f32::NEG_INFINITY), f32::NEG_INFINITY);
    }
}
