//! What the proofs of an island's arms must conclude: the marker of negative fixtures.

use serde::Serialize;

/// What a proof of an arm is expected to conclude (`#[islands(expect_mismatch)]`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// The arm equals `default`: the normal case.
    Equal,
    /// A negative fixture: the arm is deliberately wrong and its proof must find a mismatch.
    Mismatch,
    /// A negative fixture of a native lowering: the emulation is right, so the CPU proof must
    /// hold, and the native code is wrong, so device conformance must find a mismatch.
    NativeMismatch,
    /// A canary of a `default` that a contracting compiler changes (a product feeding an add):
    /// its arms must hold as usual, and on a backend known to contract
    /// ([`crate::Contraction::Contracts`]) the device's `default` must differ from the CPU's.
    /// Where the driver decides, the comparison is reported, not judged.
    DefaultMismatch,
}

impl Expect {
    /// Every expectation.
    pub const ALL: [Expect; 4] = [Expect::Equal, Expect::Mismatch, Expect::NativeMismatch, Expect::DefaultMismatch];

    /// The `#[islands(…)]` option that sets it; `None` for the normal case.
    pub const fn option(self) -> Option<&'static str> {
        match self {
            Expect::Equal => None,
            Expect::Mismatch => Some("expect_mismatch"),
            Expect::NativeMismatch => Some("expect_native_mismatch"),
            Expect::DefaultMismatch => Some("expect_default_mismatch"),
        }
    }

    /// The variant's name, as generated code spells it (`Expect::Mismatch`).
    pub const fn variant(self) -> &'static str {
        match self {
            Expect::Equal => "Equal",
            Expect::Mismatch => "Mismatch",
            Expect::NativeMismatch => "NativeMismatch",
            Expect::DefaultMismatch => "DefaultMismatch",
        }
    }
}
