//! Scalar types a proof can generate, compare and print, with their edge values.

use half::{bf16, f16};
use serde::Serialize;
use std::fmt;

/// The element type of a proof input or output.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueKind {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

/// A type an island's proof signature may name (`proof(a: i32) -> f32`): a scalar, or a
/// vector of `WIDTH` scalars (`Vector<i32, Const<4>>`), generated and compared scalar by scalar.
pub trait ProofValue {
    const KIND: ValueKind;
    /// Scalars per value.
    const WIDTH: usize = 1;
}

impl<T: ProofValue + cubecl::prelude::Scalar, const N: usize> ProofValue for cubecl::prelude::Vector<T, cubecl::prelude::Const<N>> {
    const KIND: ValueKind = T::KIND;
    const WIDTH: usize = N;
}

macro_rules! proof_value {
    ($($ty:ty => $kind:ident),* $(,)?) => {
        $(impl ProofValue for $ty { const KIND: ValueKind = ValueKind::$kind; })*
    };
}

proof_value!(
    i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64,
    f16 => F16, bf16 => BF16, f32 => F32, f64 => F64,
);

/// A small, fixed, well-known generator (SplitMix64): a seed replays the same inputs on every
/// platform and every version of this crate.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Mixes a name into a seed, so every (island, arm) gets its own reproducible stream.
pub fn seed_for(base: u64, name: &str) -> u64 {
    // FNV-1a over the name, folded into the base through one SplitMix step.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    Rng::new(base ^ h).next_u64()
}

impl ValueKind {
    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            ValueKind::I8 | ValueKind::U8 => 1,
            ValueKind::I16 | ValueKind::U16 | ValueKind::F16 | ValueKind::BF16 => 2,
            ValueKind::I32 | ValueKind::U32 | ValueKind::F32 => 4,
            ValueKind::I64 | ValueKind::U64 | ValueKind::F64 => 8,
        }
    }

    /// Whether the kind is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, ValueKind::F16 | ValueKind::BF16 | ValueKind::F32 | ValueKind::F64)
    }

    /// The type's name as Rust spells it.
    pub const fn name(self) -> &'static str {
        match self {
            ValueKind::I8 => "i8",
            ValueKind::U8 => "u8",
            ValueKind::I16 => "i16",
            ValueKind::U16 => "u16",
            ValueKind::I32 => "i32",
            ValueKind::U32 => "u32",
            ValueKind::I64 => "i64",
            ValueKind::U64 => "u64",
            ValueKind::F16 => "f16",
            ValueKind::BF16 => "bf16",
            ValueKind::F32 => "f32",
            ValueKind::F64 => "f64",
        }
    }

    /// The edge values of the type, as raw bits: these come first in every proof.
    ///
    /// Integers: MIN, MAX, 0, ±1, and for 32-bit words the packed-byte patterns that break
    /// byte unpacking (every byte `i8::MIN`, every byte `i8::MAX`, mixed signs). Floats: ±0,
    /// ±inf, quiet and signalling NaNs with payloads, the smallest and largest subnormals,
    /// the smallest normal, MAX, ±1.
    pub fn edges(self) -> Vec<u64> {
        match self {
            ValueKind::I8 => [i8::MIN, i8::MAX, 0, -1, 1, -127].map(|v| v as u8 as u64).to_vec(),
            ValueKind::U8 => vec![0, 0xff, 1, 0x7f, 0x80],
            ValueKind::I16 => [i16::MIN, i16::MAX, 0, -1, 1].map(|v| v as u16 as u64).to_vec(),
            ValueKind::U16 => vec![0, 0xffff, 1, 0x7fff, 0x8000],
            ValueKind::I32 | ValueKind::U32 => vec![
                0x8000_0000, // i32::MIN
                0x7fff_ffff, // i32::MAX
                0,
                0xffff_ffff, // -1: every byte -1
                1,
                0x8080_8080, // every byte i8::MIN
                0x7f7f_7f7f, // every byte i8::MAX
                0x807f_80ff, // mixed signs
                0x0180_7f01,
            ],
            ValueKind::I64 | ValueKind::U64 => vec![1 << 63, (1 << 63) - 1, 0, u64::MAX, 1],
            ValueKind::F16 => vec![
                0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7e2a, 0xfd55, 0x0001, 0x03ff, 0x0400,
                0x7bff, 0x3c00, 0xbc00,
            ],
            ValueKind::BF16 => vec![
                0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7fc5, 0xff81, 0x0001, 0x007f, 0x0080,
                0x7f7f, 0x3f80, 0xbf80,
            ],
            ValueKind::F32 => vec![
                0x0000_0000, // +0
                0x8000_0000, // -0
                0x7f80_0000, // +inf
                0xff80_0000, // -inf
                0x7fc0_0000, // canonical quiet NaN
                0x7fc1_2345, // quiet NaN with payload
                0xffa0_0001, // negative signalling NaN with payload
                0x0000_0001, // smallest subnormal
                0x807f_ffff, // largest negative subnormal
                0x0080_0000, // smallest normal
                0x7f7f_ffff, // MAX
                0x3f80_0000, // 1
                0xbf80_0000, // -1
            ],
            ValueKind::F64 => vec![
                0,
                1 << 63,
                0x7ff0_0000_0000_0000,
                0xfff0_0000_0000_0000,
                0x7ff8_0000_0000_0000,
                0x7ff8_0000_dead_beef,
                1,
                0x000f_ffff_ffff_ffff,
                0x0010_0000_0000_0000,
                0x7fef_ffff_ffff_ffff,
                0x3ff0_0000_0000_0000,
            ],
        }
    }

    /// A random value as raw bits. Floats mix magnitudes (so rounding and order bugs show),
    /// and one draw in sixteen is an arbitrary bit pattern.
    pub fn random(self, rng: &mut Rng) -> u64 {
        let bits = rng.next_u64();
        let arbitrary = rng.below(16) == 0;
        match self {
            ValueKind::F16 if !arbitrary => f16::from_f32(mixed_f32(rng, 12)).to_bits() as u64,
            ValueKind::BF16 if !arbitrary => bf16::from_f32(mixed_f32(rng, 30)).to_bits() as u64,
            ValueKind::F32 if !arbitrary => mixed_f32(rng, 30).to_bits() as u64,
            ValueKind::F64 if !arbitrary => (mixed_f32(rng, 60) as f64 * 1.000_000_1).to_bits(),
            _ => bits & mask(self.size()),
        }
    }

    /// `n` values: the edge values first (cycled with a per-input phase so that different
    /// inputs pair different edges), then random values.
    pub fn generate(self, n: usize, phase: usize, rng: &mut Rng) -> Vec<u8> {
        let edges = self.edges();
        let edge_count = (edges.len() * 4).min(n / 2);
        let mut out = Vec::with_capacity(n * self.size());
        for i in 0..n {
            let bits = if i < edge_count {
                edges[(i + phase * (i / edges.len() + 1)) % edges.len()]
            } else {
                self.random(rng)
            };
            out.extend_from_slice(&bits.to_le_bytes()[..self.size()]);
        }
        out
    }

    /// `n` values that are small integers (-8..=8), as this kind: for floats, products and sums
    /// of these are exact in any order.
    pub fn generate_small_integers(self, n: usize, rng: &mut Rng) -> Vec<u8> {
        let mut out = Vec::with_capacity(n * self.size());
        for _ in 0..n {
            let v = rng.below(17) as i64 - 8;
            let bits = match self {
                ValueKind::F16 => f16::from_f32(v as f32).to_bits() as u64,
                ValueKind::BF16 => bf16::from_f32(v as f32).to_bits() as u64,
                ValueKind::F32 => (v as f32).to_bits() as u64,
                ValueKind::F64 => (v as f64).to_bits(),
                _ => v as u64 & mask(self.size()),
            };
            out.extend_from_slice(&bits.to_le_bytes()[..self.size()]);
        }
        out
    }

    /// The element at `index` of `bytes`, as raw bits.
    pub fn bits_at(self, bytes: &[u8], index: usize) -> u64 {
        let size = self.size();
        let mut le = [0u8; 8];
        le[..size].copy_from_slice(&bytes[index * size..(index + 1) * size]);
        u64::from_le_bytes(le)
    }

    /// Whether raw bits are a NaN of this kind.
    pub fn is_nan(self, bits: u64) -> bool {
        match self {
            ValueKind::F16 => f16::from_bits(bits as u16).is_nan(),
            ValueKind::BF16 => bf16::from_bits(bits as u16).is_nan(),
            ValueKind::F32 => f32::from_bits(bits as u32).is_nan(),
            ValueKind::F64 => f64::from_bits(bits).is_nan(),
            _ => false,
        }
    }

    /// The value as a float, for ULP and tolerance contracts (integers convert exactly up to
    /// 2^53).
    pub fn as_f64(self, bits: u64) -> f64 {
        match self {
            ValueKind::I8 => bits as u8 as i8 as f64,
            ValueKind::U8 => bits as u8 as f64,
            ValueKind::I16 => bits as u16 as i16 as f64,
            ValueKind::U16 => bits as u16 as f64,
            ValueKind::I32 => bits as u32 as i32 as f64,
            ValueKind::U32 => bits as u32 as f64,
            ValueKind::I64 => bits as i64 as f64,
            ValueKind::U64 => bits as f64,
            ValueKind::F16 => f16::from_bits(bits as u16).to_f64(),
            ValueKind::BF16 => bf16::from_bits(bits as u16).to_f64(),
            ValueKind::F32 => f32::from_bits(bits as u32) as f64,
            ValueKind::F64 => f64::from_bits(bits),
        }
    }

    /// Distance in units in the last place between two finite floats of this kind (0 for
    /// equal bits; `u64::MAX` across NaN or between a NaN and a number).
    pub fn ulp_distance(self, a: u64, b: u64) -> u64 {
        if self.is_nan(a) || self.is_nan(b) {
            return if self.is_nan(a) && self.is_nan(b) { 0 } else { u64::MAX };
        }
        let size_bits = self.size() * 8;
        let sign = 1u64 << (size_bits - 1);
        // Map sign-magnitude bits onto a monotonic integer line.
        let key = |x: u64| -> i128 {
            if x & sign != 0 { -((x & !sign) as i128) } else { x as i128 }
        };
        (key(a) - key(b)).unsigned_abs() as u64
    }

    /// `bits` printed as hex of the type's width, then the value.
    pub fn show(self, bits: u64) -> String {
        let hex = format!("0x{:0width$x}", bits, width = self.size() * 2);
        let value = match self {
            ValueKind::F16 | ValueKind::BF16 | ValueKind::F32 | ValueKind::F64 => {
                let v = self.as_f64(bits);
                if v.is_nan() { "NaN".to_string() } else { format!("{v:e}") }
            }
            _ => format!("{}", self.as_f64(bits)),
        };
        format!("{hex} ({value})")
    }
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn mask(size: usize) -> u64 {
    if size == 8 { u64::MAX } else { (1u64 << (size * 8)) - 1 }
}

/// A float with a random sign, a random full mantissa and an exponent in `-spread..spread`.
fn mixed_f32(rng: &mut Rng, spread: i32) -> f32 {
    let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
    let mantissa = 1.0 + (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
    let exp = rng.below((2 * spread) as u64) as i32 - spread;
    sign * mantissa * 2f32.powi(exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_come_first_and_replay() {
        let a = ValueKind::I32.generate(64, 0, &mut Rng::new(7));
        let b = ValueKind::I32.generate(64, 0, &mut Rng::new(7));
        assert_eq!(a, b);
        assert_eq!(ValueKind::I32.bits_at(&a, 0), 0x8000_0000);
        let c = ValueKind::I32.generate(64, 0, &mut Rng::new(8));
        assert_ne!(a, c, "a different seed must change the random tail");
    }

    #[test]
    fn ulp_distance_crosses_zero() {
        let k = ValueKind::F32;
        assert_eq!(k.ulp_distance(0x0000_0000, 0x8000_0000), 0);
        assert_eq!(k.ulp_distance(0x0000_0001, 0x8000_0001), 2);
        assert_eq!(k.ulp_distance(1.0f32.to_bits() as u64, 1.0000001f32.to_bits() as u64), 1);
    }

    #[test]
    fn show_prints_hex_and_value() {
        assert_eq!(ValueKind::I8.show(0x80), "0x80 (-128)");
        assert_eq!(ValueKind::F32.show(0x3f80_0000), "0x3f800000 (1e0)");
    }
}
