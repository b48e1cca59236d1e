//! How an arm's result must relate to the reference it is compared with.

use crate::value::ValueKind;
use serde::Serialize;
use std::fmt;

/// A comparison contract. [`Contract::Exact`] is the default and the only one a proof of an
/// integer arm can have; the others must be declared, with their reason, and every report
/// shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Contract {
    /// Every byte equal.
    Exact,
    /// Every byte equal, except that any NaN equals any NaN: for hardware that canonicalises
    /// NaN results (NVIDIA returns `0x7fffffff` from arithmetic on NaNs; the CPU propagates
    /// payloads).
    ExactNanClass { reason: &'static str },
    /// Floats within `ulps` units in the last place, NaN matching NaN; integers exact.
    Ulp { ulps: u32, reason: &'static str },
}

impl Contract {
    /// Whether `got` is acceptable where `want` is the reference.
    pub fn accepts(&self, kind: ValueKind, got: u64, want: u64) -> bool {
        if got == want {
            return true;
        }
        match *self {
            Contract::Exact => false,
            Contract::ExactNanClass { .. } => kind.is_nan(got) && kind.is_nan(want),
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
            Contract::ExactNanClass { reason } => write!(f, "bit-exact, NaN payloads ignored ({reason})"),
            Contract::Ulp { ulps, reason } => write!(f, "NOT bit-exact: within {ulps} ulp ({reason})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_rejects_nan_payloads_and_zero_signs() {
        let k = ValueKind::F32;
        assert!(!Contract::Exact.accepts(k, 0x7fc0_0000, 0x7fc0_0001));
        assert!(!Contract::Exact.accepts(k, 0x0000_0000, 0x8000_0000));
        let nan = Contract::ExactNanClass { reason: "test" };
        assert!(nan.accepts(k, 0x7fc0_0000, 0xffc1_2345));
        assert!(!nan.accepts(k, 0x0000_0000, 0x8000_0000));
    }

    #[test]
    fn ulp_bound_holds_for_floats_only() {
        let c = Contract::Ulp { ulps: 1, reason: "test" };
        assert!(c.accepts(ValueKind::F32, 0x3f80_0000, 0x3f80_0001));
        assert!(!c.accepts(ValueKind::F32, 0x3f80_0000, 0x3f80_0002));
        assert!(!c.accepts(ValueKind::I32, 1, 2));
    }
}
