//! What `islands gate --ops` found for one cell on one device: a [`CellRecord`], kept in the
//! ledger of the crate that registered the op (`crate::records::ledger`), beside the arm records.
//!
//! The decision is the seed's: **flipped** when the twin is bit-exact against the oracle and at
//! least 0.97× as fast as the fastest incumbent at every shape ("delete the incumbent"),
//! **declined** when it is bit-exact but slower at some shape (the incumbent stays, the twin is
//! the portable fallback), **failed** when it is not bit-exact. A cell without an incumbent on
//! the device has nothing to retire: **twin only**; one whose twin cannot run there keeps its
//! incumbent: **twin unsupported**.

use crate::hardware::fingerprint::Fingerprint;
use crate::records::record::DEFAULT_THRESHOLD;
use serde::{Deserialize, Serialize};

/// The gate's conclusion for one cell on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellDecision {
    /// The twin is bit-exact and ≥ the threshold × the fastest incumbent at every shape: the
    /// twin runs, the incumbent can be deleted.
    Flipped,
    /// The twin is bit-exact but slower at some shape: the fastest incumbent runs.
    Declined,
    /// The twin is not bit-exact: the fastest incumbent runs (the twin, with a warning, where
    /// there is none), and the twin is a bug.
    Failed,
    /// The twin cannot run on this device (its launch refuses it, e.g. a compiler defect the
    /// SDK knows of): the fastest incumbent runs.
    Unsupported,
    /// No incumbent runs on this device: the twin runs, nothing is retired.
    TwinOnly,
    /// A candidate could not run (compilation, launch): nothing is concluded, the twin runs.
    Unverified,
}

impl CellDecision {
    pub fn word(self) -> &'static str {
        match self {
            CellDecision::Flipped => "flipped",
            CellDecision::Declined => "declined",
            CellDecision::Failed => "failed",
            CellDecision::Unsupported => "twin unsupported",
            CellDecision::TwinOnly => "twin only",
            CellDecision::Unverified => "unverified",
        }
    }

    /// Whether an incumbent runs under this decision.
    pub fn keeps_incumbent(self) -> bool {
        matches!(self, CellDecision::Declined | CellDecision::Failed | CellDecision::Unsupported)
    }
}

/// What a candidate is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateKind {
    /// The island kernel, with the arms the device selects.
    Twin,
    /// The same kernel with `default` in every island.
    Default,
    /// A hand-written kernel (its language).
    Incumbent(String),
}

/// One candidate at one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateEvidence {
    /// `twin`, `default`, or the incumbent's name.
    pub name: String,
    pub kind: CandidateKind,
    /// Output values that differ from the reference's bits (0: bit-exact), and how many there are.
    pub differing: usize,
    pub values: usize,
    /// The largest distance of a differing value, in ulps.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_ulp: u64,
    /// Median time per dispatch and the fastest and slowest round, in microseconds (absent when
    /// the bit-exact half alone ran), measured as the shape's `timing` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us: Option<[f64; 3]>,
    /// The same with eager launches, where `us` is a graph replay: what the host's launch path
    /// adds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_us: Option<[f64; 3]>,
    /// Why the candidate has no figures, if it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl CandidateEvidence {
    pub fn exact(&self) -> bool {
        self.error.is_none() && self.differing == 0
    }
}

/// One shape of a cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeEvidence {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
    /// Rows on which the CPU runtime's `default` equalled the plain-Rust reference, bit for bit.
    pub oracle_rows: usize,
    pub candidates: Vec<CandidateEvidence>,
    /// How the times were taken: `graph replay` (each candidate's launches recorded once and
    /// replayed: the device's time, without the host's launch path) on CUDA, `eager` elsewhere.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub timing: String,
    /// The fastest incumbent's median time / the twin's: ≥ the threshold flips.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

/// What is known about one cell on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub op: String,
    pub quant: String,
    pub elems: String,
    pub device: Fingerprint,
    pub decision: CellDecision,
    /// The smallest ratio over the shapes (what decided), when timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    pub threshold: f64,
    /// The incumbent an engine runs where the cell is declined or failed: the fastest at the
    /// most shapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incumbent: Option<String>,
    /// Code hashes: `twin` and each incumbent by name (`crate::launch::cell::twin_hash`).
    pub code: Vec<(String, String)>,
    pub shapes: Vec<ShapeEvidence>,
    /// Seed of the inputs, dispatches per sample, alternating rounds.
    pub seed: String,
    pub dispatches: usize,
    pub rounds: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub date: String,
    pub sdk: String,
}

impl CellRecord {
    pub fn key(&self) -> (&str, &str, &str, &Fingerprint) {
        (&self.op, &self.quant, &self.elems, &self.device)
    }

    /// The code hash the record keeps for `candidate` (`twin` or an incumbent's name).
    pub fn hash_of(&self, candidate: &str) -> Option<&str> {
        self.code.iter().find(|(n, _)| n == candidate).map(|(_, h)| h.as_str())
    }

    /// Whether `name` was bit-exact at every shape of the record (and ran at one at least).
    pub fn exact(&self, name: &str) -> bool {
        let mine: Vec<_> = self.shapes.iter().filter_map(|s| s.candidates.iter().find(|c| c.name == name)).collect();
        !mine.is_empty() && mine.len() == self.shapes.len() && mine.iter().all(|c| c.exact())
    }

    /// The incumbent a launch runs by this record under the default `ISLANDS_CELLS=exact`: the
    /// fastest, where the decision keeps one and it was bit-exact at every shape.
    pub fn exact_incumbent(&self) -> Option<&str> {
        self.incumbent.as_deref().filter(|n| self.decision.keeps_incumbent() && self.exact(n))
    }

    /// One line for logs and the scoreboard.
    pub fn why(&self) -> String {
        let ratio = self.ratio.map(|r| format!(" at {r:.3}× the fastest incumbent")).unwrap_or_default();
        let inc = match (&self.incumbent, self.decision.keeps_incumbent()) {
            (Some(name), true) if self.exact(name) => format!("; `{name}` runs"),
            (Some(name), true) => {
                format!("; `{name}` is not bit-exact, so the twin runs (`ISLANDS_CELLS=fastest` would run it)")
            }
            _ => String::new(),
        };
        format!("{}{ratio}{inc}, gated {}", self.decision.word(), self.date)
    }
}

/// The decision over a cell's shapes: `twin_ran` whether the twin launched at every shape,
/// `twin_exact` whether it was bit-exact at every shape, `ratios` the fastest incumbent / twin at
/// each timed shape (none: no incumbent or untimed).
pub fn decide(twin_ran: bool, twin_exact: bool, has_incumbent: bool, ratios: &[f64], threshold: f64) -> CellDecision {
    if !twin_ran {
        return if has_incumbent { CellDecision::Unsupported } else { CellDecision::Unverified };
    }
    if !twin_exact {
        // A twin that is not bit-exact is a bug of the twin (or of the device) whether or not
        // an incumbent exists.
        return CellDecision::Failed;
    }
    if !has_incumbent {
        return CellDecision::TwinOnly;
    }
    if ratios.is_empty() {
        return CellDecision::Unverified;
    }
    if ratios.iter().all(|&r| r >= threshold) { CellDecision::Flipped } else { CellDecision::Declined }
}

/// The seed's threshold, shared with the arm gate.
pub const THRESHOLD: f64 = DEFAULT_THRESHOLD;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_says_yes_no_and_failed() {
        assert_eq!(decide(true, true, true, &[1.2, 0.98], 0.97), CellDecision::Flipped);
        assert_eq!(decide(true, true, true, &[1.2, 0.96], 0.97), CellDecision::Declined);
        assert_eq!(decide(true, true, true, &[0.97], 0.97), CellDecision::Flipped);
        assert_eq!(decide(true, false, true, &[2.0], 0.97), CellDecision::Failed);
        assert_eq!(decide(true, false, false, &[], 0.97), CellDecision::Failed);
        assert_eq!(decide(true, true, false, &[], 0.97), CellDecision::TwinOnly);
        assert_eq!(decide(true, true, true, &[], 0.97), CellDecision::Unverified);
        assert_eq!(decide(false, false, true, &[], 0.97), CellDecision::Unsupported);
        assert_eq!(decide(false, false, false, &[], 0.97), CellDecision::Unverified);
        assert!(CellDecision::Declined.keeps_incumbent() && CellDecision::Failed.keeps_incumbent());
        assert!(!CellDecision::Flipped.keeps_incumbent() && !CellDecision::TwinOnly.keeps_incumbent());
    }
}
