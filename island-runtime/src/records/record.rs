//! What is known about one arm on one device: the [`Record`] `islands gate` writes, with the
//! evidence of each half of the gate and its [`Decision`]; the ledger files hold them
//! (`crate::records::ledger`).
//!
//! "Verify, then delete": an accelerated arm earns its place on a device only when it is
//! bit-exact against the oracle there *and* at least 97 % as fast as `default` (within 3 %) on a
//! kernel-only bench, and the gate must be able to say no.

use crate::hardware::fingerprint::Fingerprint;
use serde::{Deserialize, Serialize};

/// The speed gate's default threshold: the arm must run at ≥ 97 % of `default`'s speed.
pub const DEFAULT_THRESHOLD: f64 = 0.97;

/// What is known about one arm on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The island's id (`crate::module::kernel#n`).
    pub island: String,
    /// The arm's pattern, as written (`cuda | vulkan`).
    pub arm: String,
    pub device: Fingerprint,
    /// Hashes of the code the arm and `default` generate for the device (see [`code_hash`]): a
    /// record whose hashes differ from the build's is stale.
    pub code: CodeHashes,
    /// The CPU proof of the arm under the device's profile, run with the record.
    pub proof: ProofEvidence,
    /// The arm's native code on the device against its emulation on the CPU.
    pub conformance: ConformanceEvidence,
    /// The kernel-only timing of the arm against `default`, when the bit-exact half passed.
    pub speed: Option<SpeedEvidence>,
    pub decision: Decision,
    /// What the gate could not do, or did partly (no timing, no instruction found), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// UTC date of the run, `YYYY-MM-DD`.
    pub date: String,
    /// The SDK version that ran it.
    pub sdk: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeHashes {
    /// The code generator the hashes are of (`CUDA C++`, `SPIR-V`).
    pub codegen: String,
    pub arm: String,
    pub default: String,
    /// The arm under the device's profile with its intrinsics emulated (what the CPU proof of the
    /// record ran), through the same generator. Empty in records written before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub emulation: String,
}

impl CodeHashes {
    /// The first part of the code that differs between this record's hashes and `now`'s, with
    /// both hashes: the arm, `default`, or the emulation (when the record has its hash).
    pub fn changed<'a>(&'a self, now: &'a CodeHashes) -> Option<(&'static str, &'a str, &'a str)> {
        if self.codegen != now.codegen {
            return Some(("the code generator", &self.codegen, &now.codegen));
        }
        if self.arm != now.arm {
            return Some(("the arm's code", &self.arm, &now.arm));
        }
        if self.default != now.default {
            return Some(("`default`'s code", &self.default, &now.default));
        }
        if !self.emulation.is_empty() && self.emulation != now.emulation {
            return Some(("the arm's emulation", &self.emulation, &now.emulation));
        }
        None
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProofEvidence {
    /// `proven`, `mismatch`, `device evidence only`, …
    pub verdict: String,
    pub seed: String,
    pub depth: u32,
    /// Lanes per run.
    pub inputs: usize,
    /// The contract the proof held the arm to on this device (`bit-exact`, a tolerance, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub contract: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConformanceEvidence {
    /// `proven`, `MISMATCH`, `declined`, `ERROR`, …
    pub verdict: String,
    /// The native side ran natively on the device (asserted by the run; `false` means it did not).
    pub native: bool,
    /// Instructions of the intrinsic table found in the code CubeCL generated for this device
    /// (with its own properties), and absent from `default`'s.
    pub instructions: Vec<String>,
    /// The first lines of the mismatch report (first differing index, both values), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// What the GPU runs: the machine instructions the table promises for those instructions,
    /// found or missing, or why the code could not be inspected (`crate::codegen::machine_code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_code: Option<MachineCodeEvidence>,
}

/// The machine-code half of the conformance evidence.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineCodeEvidence {
    /// How the listing was obtained, or why there is none.
    pub how: String,
    /// Each table instruction of the arm with the machine instructions it must become
    /// (`__dp4a( → IDP.4A`); one of them must be in the listing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<String>,
    /// Those of `expected` whose machine instructions the listing lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The opcodes of the listing that satisfy `expected` (`IDP.4A.S8.S8` for `IDP.4A`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<String>,
    /// The opcodes of the arm's listing that `default`'s lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arm_only: Vec<String>,
}

impl MachineCodeEvidence {
    /// How a listing that could not be read begins (`not obtained: no CUDA toolkit found …`).
    pub const NOT_OBTAINED: &'static str = "not obtained";
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpeedEvidence {
    /// Median time per dispatch, in microseconds.
    pub arm_us: f64,
    pub default_us: f64,
    /// `default_us / arm_us`: above 1, the arm is faster.
    pub speedup: f64,
    /// The arm passes when `speedup ≥ threshold`.
    pub threshold: f64,
    /// Lanes per dispatch (the proof recipe's cubes, repeated), dispatches per round, rounds.
    pub lanes: u64,
    pub dispatches: usize,
    pub rounds: usize,
    /// `default`'s time / the arm's in each round (samples taken next to each other), in
    /// round order: what decided, with its spread ([`crate::verify::gate::speed_decision`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ratios: Vec<f64>,
}

/// The gate's conclusion for one arm on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Bit-exact and at least the threshold's fraction of `default`'s speed (0.97: within 3 %):
    /// the arm runs on this device.
    Flipped,
    /// Bit-exact, but slower than the threshold: `default` runs.
    DeclinedSlow,
    /// A measured divergence of the device (`crate::hardware::divergence`): `default` runs.
    DeclinedDivergence,
    /// Not bit-exact: `default` runs.
    Failed,
    /// Within its declared tolerance, but not bit-exact on this device (no measured model of
    /// its arithmetic): `default` runs.
    DeclinedTolerance,
    /// Bit-exact, but the machine code the GPU runs lacks the instruction the table promises
    /// (the compiler folded or replaced it): not accelerated here, `default` runs.
    DeclinedMachineCode,
    /// The gate could not run one of its halves (compilation, launch): nothing is concluded.
    Unverified,
}

impl Decision {
    /// Whether the arm may run under this decision.
    pub fn selects_arm(self) -> bool {
        self == Decision::Flipped
    }

    pub fn word(self) -> &'static str {
        match self {
            Decision::Flipped => "flipped",
            Decision::DeclinedSlow => "declined (slow)",
            Decision::DeclinedDivergence => "declined (divergence)",
            Decision::Failed => "failed",
            Decision::DeclinedTolerance => "declined (tolerance only)",
            Decision::DeclinedMachineCode => "declined (machine code)",
            Decision::Unverified => "unverified",
        }
    }
}

impl Record {
    /// The record's key.
    pub fn key(&self) -> (&str, &str, &Fingerprint) {
        (&self.island, &self.arm, &self.device)
    }

    /// Whether the bit-exact half of the gate passed on the record's device: the CPU proof under
    /// its profile and native conformance held bit for bit, and the device's code has the table's
    /// instruction. A record left `unverified` only because no timing was taken has it.
    pub fn exact_half_passed(&self) -> bool {
        let proof = matches!(self.proof.verdict.as_str(), "proven" | "device evidence only");
        let exact = self.proof.contract.is_empty() || self.proof.contract.starts_with("bit-exact");
        proof
            && exact
            && self.conformance.verdict == "proven"
            && self.conformance.native
            && !self.conformance.instructions.is_empty()
            && self.machine_code_unchecked().is_none()
    }

    /// Why the record does not show what the GPU runs where its runtime lets a gate read it
    /// (CUDA: no listing, or one that could not be obtained), if so. Such a record concludes
    /// nothing: the machine-code check fails closed.
    pub fn machine_code_unchecked(&self) -> Option<String> {
        if self.device.runtime != "cuda" {
            return None;
        }
        match &self.conformance.machine_code {
            None => Some("it holds no machine-code evidence".into()),
            Some(m) if m.how.starts_with(MachineCodeEvidence::NOT_OBTAINED) => {
                Some(format!("its machine code was {}", m.how))
            }
            Some(_) => None,
        }
    }

    /// One line for logs: the decision and its figure.
    pub fn why(&self) -> String {
        match (self.decision, &self.speed) {
            (Decision::DeclinedSlow | Decision::Flipped, Some(s)) => {
                format!(
                    "{} at {:.3}× `default` (threshold {:.2}), gated {}",
                    self.decision.word(),
                    s.speedup,
                    s.threshold,
                    self.date
                )
            }
            (Decision::Failed, _) => format!(
                "failed on this device ({}), gated {}",
                self.conformance
                    .report
                    .as_deref()
                    .and_then(|r| r.lines().find(|l| l.contains("first differing")))
                    .unwrap_or("not bit-exact")
                    .trim(),
                self.date
            ),
            _ => format!("{}, gated {}", self.decision.word(), self.date),
        }
    }
}

/// A stable 64-bit hash of generated code (FNV-1a), in hex: the same on every machine and Rust
/// version, which `std`'s hashers do not promise.
pub fn code_hash(code: &str) -> String {
    format!("{:016x}", crate::values::hash::fnv1a(code.as_bytes()))
}
