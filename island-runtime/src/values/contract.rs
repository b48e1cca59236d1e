//! How an arm's result must relate to the reference it is compared with.

use crate::values::value::ValueKind;
use serde::Serialize;
use std::fmt;

/// A comparison contract. [`Contract::Exact`] is the default; a looser one must be declared
/// with its reason, and every report shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Contract {
    /// Every byte equal. The one latitude is the payload of a NaN: IEEE 754 leaves which NaN
    /// an operation returns unspecified, LLVM may swap the operands of a commutative float
    /// operation (and with them the payload that propagates), and NVIDIA returns a canonical
    /// NaN. So a NaN equals any NaN; a NaN never equals a number, and `-0.0` never `+0.0`.
    Exact,
    /// Floats within `ulps` units in the last place (NaN matching NaN); integers exact. For
    /// results whose hardware order or internal precision is unspecified (tensor-core float
    /// accumulation): NOT bit-exact, and always shown as such.
    Ulp { ulps: u32, reason: &'static str },
    /// For sums of products whose order and internal precision the hardware does not specify
    /// (tensor-core float accumulation): `|got − want| ≤ terms · u · M`, where `u` is the
    /// output's unit roundoff (2^-24 for f32) and `M` is the same computation on the inputs'
    /// magnitudes (`Σ|aᵢ·bᵢ| + |c|`, from a third run of the reference). That is the classic
    /// bound of a recursive sum of `terms` addends; an arm that accumulates in a narrower type
    /// (f16: u = 2^-11) or truncates its products misses it by orders of magnitude. Infinities
    /// and NaNs must match as in [`Contract::Exact`]. NOT bit-exact, and always shown as such.
    Accumulation { terms: u32, reason: &'static str },
    /// Every byte equal, as [`Contract::Exact`], under a measured model of the hardware's
    /// arithmetic: what an island with a tolerance contract is held to on the profiles whose
    /// model its intrinsic has measured (`exact_where = …`; tensor-core accumulation on sm_90).
    Modelled { model: &'static str },
}

impl Contract {
    /// Whether `got` is acceptable where `want` is the reference; `magnitude` is the
    /// reference computed on the inputs' magnitudes (needed by [`Contract::Accumulation`]).
    pub fn accepts(&self, kind: ValueKind, got: u64, want: u64, magnitude: Option<u64>) -> bool {
        if got == want {
            return true;
        }
        if kind.is_nan(got) && kind.is_nan(want) {
            return true;
        }
        match *self {
            Contract::Exact | Contract::Modelled { .. } => false,
            Contract::Ulp { ulps, .. } => kind.is_float() && kind.ulp_distance(got, want) <= ulps as u64,
            Contract::Accumulation { terms, .. } => {
                let (g, w) = (kind.as_f64(got), kind.as_f64(want));
                let m = magnitude.map_or(f64::NAN, |m| kind.as_f64(m));
                kind.is_float()
                    && g.is_finite()
                    && w.is_finite()
                    && m.is_finite()
                    && (g - w).abs() <= terms as f64 * kind.unit_roundoff() * m
            }
        }
    }

    /// Whether checking the contract needs the magnitude run.
    pub fn needs_magnitudes(&self) -> bool {
        matches!(self, Contract::Accumulation { .. })
    }

    /// Whether this contract is byte equality.
    pub fn is_exact(&self) -> bool {
        matches!(self, Contract::Exact | Contract::Modelled { .. })
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contract::Exact => f.write_str("bit-exact"),
            Contract::Modelled { model } => write!(f, "bit-exact ({model})"),
            Contract::Ulp { ulps, reason } => write!(f, "NOT bit-exact: within {ulps} ulp ({reason})"),
            Contract::Accumulation { terms, reason } => {
                write!(f, "NOT bit-exact: |Δ| ≤ {terms}·u·Σ|terms| ({reason})")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_rejects_zero_signs_and_nan_for_number_but_not_nan_payloads() {
        let k = ValueKind::F32;
        assert!(!Contract::Exact.accepts(k, 0x0000_0000, 0x8000_0000, None));
        assert!(!Contract::Exact.accepts(k, 0x7fc0_0000, 0x3f80_0000, None));
        assert!(!Contract::Exact.accepts(k, 0x3f80_0001, 0x3f80_0000, None));
        assert!(Contract::Exact.accepts(k, 0x7fc0_0000, 0xffc1_2345, None));
        // Integers have no NaN: every bit counts.
        assert!(!Contract::Exact.accepts(ValueKind::I32, 0x7fc0_0000, 0x7fc0_0001, None));
    }

    #[test]
    fn ulp_bound_holds_for_floats_only() {
        let c = Contract::Ulp { ulps: 1, reason: "test" };
        assert!(c.accepts(ValueKind::F32, 0x3f80_0000, 0x3f80_0001, None));
        assert!(!c.accepts(ValueKind::F32, 0x3f80_0000, 0x3f80_0002, None));
        assert!(!c.accepts(ValueKind::I32, 1, 2, None));
    }

    #[test]
    fn accumulation_bound_scales_with_the_magnitudes() {
        let c = Contract::Accumulation { terms: 32, reason: "test" };
        let k = ValueKind::F32;
        let bits = |v: f32| v.to_bits() as u64;
        // Σ|terms| = 1000: the bound is 32 · 2^-24 · 1000 ≈ 1.9e-3.
        assert!(c.accepts(k, bits(1.0), bits(1.001), Some(bits(1000.0))));
        assert!(!c.accepts(k, bits(1.0), bits(1.01), Some(bits(1000.0))));
        // An f16 accumulator's error (2^-11 relative) is far outside it.
        assert!(!c.accepts(k, bits(1000.0), bits(1000.0 + 1000.0 / 2048.0), Some(bits(1000.0))));
        // Infinities and NaNs are not numbers to be near.
        assert!(!c.accepts(k, bits(f32::INFINITY), bits(1.0), Some(bits(1.0))));
        assert!(!c.accepts(k, bits(1.0), bits(1.0 + 1e-6), None));
    }
}
