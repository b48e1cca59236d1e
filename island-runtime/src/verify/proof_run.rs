//! One proof run: its settings ([`ProofOptions`]), its conclusion ([`Verdict`]) and its row of
//! a report ([`ProofRun`]), shared by proofs, device conformance and the gate.

use crate::values::inputs::Group;
use island_vocab::Expect;
use island_vocab::settings::{self, SettingError};
use serde::Serialize;
use std::time::Duration;

/// Settings of a proof run.
#[derive(Clone, Debug)]
pub struct ProofOptions {
    /// Base seed; each (island, arm) derives its own from it.
    pub seed: u64,
    /// Lanes per run at least, rounded up to whole cubes; the groups of [`ProofOptions::depth`]
    /// may ask for more. `None` takes the island's own `lanes = N`.
    pub lanes: Option<u32>,
    /// Random groups per run: `8 · depth` realistic and `2 · depth` wide ones, after the edge
    /// groups (at least 1).
    pub depth: u32,
}

/// The base seed when none is given.
pub const DEFAULT_SEED: u64 = 0x15_1A_4D_5E_ED;

impl Default for ProofOptions {
    fn default() -> Self {
        ProofOptions { seed: DEFAULT_SEED, lanes: None, depth: 1 }
    }
}

impl ProofOptions {
    /// The defaults, overridden by `ISLANDS_SEED`, `ISLANDS_LANES` and `ISLANDS_DEPTH`
    /// ([`island_vocab::settings`]). A value that does not parse is an error that names it: a
    /// typo must not silently prove with the default.
    pub fn from_env() -> Result<ProofOptions, SettingError> {
        let default = ProofOptions::default();
        Ok(ProofOptions {
            seed: settings::seed()?.unwrap_or(default.seed),
            lanes: settings::lanes()?.or(default.lanes),
            depth: settings::depth()?.unwrap_or(default.depth),
        })
    }
}

/// The conclusion of one proof run (one arm, one reference profile).
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Byte-equal to `default` (or within the declared contract).
    Proven,
    /// Differs from `default`; `cubes` counts the differing cubes by the groups they hold.
    Mismatch {
        report: String,
        #[serde(skip)]
        cubes: std::collections::BTreeMap<Vec<Group>, usize>,
    },
    /// Could not be proven, and why. Never counted as passed.
    Unproven { reason: String },
    /// The arm and `default` compile to the same program on this runtime (an intrinsic whose
    /// emulation is the portable code itself): running both would compare a program with
    /// itself. Never counted as proven; the arm's evidence is its device conformance.
    DeviceEvidenceOnly { reason: String },
    /// Differs on this device in a way measured and recorded in [`crate::hardware::divergence`]: the
    /// arm is declined there. Never counted as proven.
    Declined { report: String },
    /// The run itself failed (compilation, launch).
    Error { reason: String },
}

/// One row of a proof report.
#[derive(Clone, Debug, Serialize)]
pub struct ProofRun {
    pub island: &'static str,
    pub arm: &'static str,
    /// The reference profile whose semantics the arm was run with.
    pub profile: String,
    /// The runtime that executed both runs (`client.name()`), and how the arm was lowered.
    pub executed_on: String,
    pub lowering: &'static str,
    pub contract: String,
    /// Whether that contract is byte equality (a tolerance contract never is).
    pub bit_exact: bool,
    pub inputs: usize,
    pub seed: String,
    #[serde(serialize_with = "ser_duration")]
    pub time: Duration,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub expect: Expect,
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

impl ProofRun {
    /// Whether this run meets its expectation: proven for a normal arm, a mismatch for a
    /// negative fixture. Unproven and errors never pass.
    pub fn passed(&self) -> bool {
        matches!(
            (&self.verdict, self.expect),
            (Verdict::Proven, Expect::Equal | Expect::NativeMismatch | Expect::DefaultMismatch)
                | (Verdict::Mismatch { .. }, Expect::Mismatch)
        )
    }

    /// A short verdict word for tables.
    pub fn verdict_word(&self) -> &'static str {
        match (&self.verdict, self.expect) {
            (Verdict::Proven, Expect::Equal | Expect::NativeMismatch | Expect::DefaultMismatch) => "proven",
            (Verdict::Mismatch { .. }, Expect::Mismatch) => "caught",
            (Verdict::Proven, Expect::Mismatch) => "MISSED",
            (Verdict::Mismatch { .. }, Expect::Equal | Expect::NativeMismatch | Expect::DefaultMismatch) => "MISMATCH",
            (Verdict::Unproven { .. }, _) => "unproven",
            (Verdict::DeviceEvidenceOnly { .. }, _) => "device evidence only",
            (Verdict::Declined { .. }, _) => "declined",
            (Verdict::Error { .. }, _) => "ERROR",
        }
    }

    /// The verdict's text (failure report, reason), if any.
    pub fn detail(&self) -> Option<&str> {
        match &self.verdict {
            Verdict::Proven => None,
            Verdict::Mismatch { report, .. } | Verdict::Declined { report } => Some(report),
            Verdict::Unproven { reason } | Verdict::DeviceEvidenceOnly { reason } | Verdict::Error { reason } => {
                Some(reason)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_settings_table_s() {
        assert_eq!(settings::parse_seed(settings::SEED.default), Some(DEFAULT_SEED));
        assert_eq!(settings::DEPTH.default.parse(), Ok(ProofOptions::default().depth));
    }
}
