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

#[cfg(test)]
mod tests {
    use super::flush_host;

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
