//! How an arm's result must relate to the reference it is compared with.

use crate::value::ValueKind;
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
}

impl Contract {
    /// Whether `got` is acceptable where `want` is the reference.
    pub fn accepts(&self, kind: ValueKind, got: u64, want: u64) -> bool {
        if got == want {
            return true;
        }
        if kind.is_nan(got) && kind.is_nan(want) {
            return true;
        }
        match *self {
            Contract::Exact => false,
            Contract::Ulp { ulps, .. } => kind.is_float() && kind.ulp_distance(got, want) <= ulps as u64,
        }
    }

    /// Whether this contract is byte equality.
    pub fn is_exact(&self) -> bool {
        matches!(self, Contract::Exact)
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contract::Exact => f.write_str("bit-exact"),
            Contract::Ulp { ulps, reason } => write!(f, "NOT bit-exact: within {ulps} ulp ({reason})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_rejects_zero_signs_and_nan_for_number_but_not_nan_payloads() {
        let k = ValueKind::F32;
        assert!(!Contract::Exact.accepts(k, 0x0000_0000, 0x8000_0000));
        assert!(!Contract::Exact.accepts(k, 0x7fc0_0000, 0x3f80_0000));
        assert!(!Contract::Exact.accepts(k, 0x3f80_0001, 0x3f80_0000));
        assert!(Contract::Exact.accepts(k, 0x7fc0_0000, 0xffc1_2345));
        // Integers have no NaN: every bit counts.
        assert!(!Contract::Exact.accepts(ValueKind::I32, 0x7fc0_0000, 0x7fc0_0001));
    }

    #[test]
    fn ulp_bound_holds_for_floats_only() {
        let c = Contract::Ulp { ulps: 1, reason: "test" };
        assert!(c.accepts(ValueKind::F32, 0x3f80_0000, 0x3f80_0001));
        assert!(!c.accepts(ValueKind::F32, 0x3f80_0000, 0x3f80_0002));
        assert!(!c.accepts(ValueKind::I32, 1, 2));
    }
}
