//! The evidence ledger: per (island, arm, device), what was verified there and whether the arm
//! pays, and the policy by which a launch consults it.
//!
//! "Verify, then delete": an accelerated arm earns its place on a device only when it is
//! bit-exact against the oracle there *and* at least 97 % as fast as `default` (within 3 %) on a
//! kernel-only bench, and the gate must be able to say no. `islands gate` runs both halves on
//! the present device and writes one [`Record`] per arm; the records live in `ledger.json`
//! beside the crate that owns the islands, are reviewed in pull requests, and are embedded in
//! the crate at build time ([`crate::ledger!`]) so a launch can consult them (`crate::policy`).

use crate::fingerprint::Fingerprint;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The speed gate's default threshold: the arm must run at ≥ 97 % of `default`'s speed.
pub const DEFAULT_THRESHOLD: f64 = 0.97;

/// The ledger of one crate: its records, sorted by island, arm and device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    pub records: Vec<Record>,
}

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
    /// found or missing, or why the code could not be inspected (`crate::machine_code`).
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
    /// round order: what decided, with its spread ([`crate::gate::speed_decision`]).
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
    /// A measured divergence of the device (`crate::divergence`): `default` runs.
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

impl Ledger {
    pub fn parse(text: &str) -> Result<Ledger, String> {
        if text.trim().is_empty() {
            return Ok(Ledger::default());
        }
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// The file's text: pretty JSON, records sorted, a final newline (stable diffs).
    pub fn to_text(&self) -> String {
        let mut sorted = self.clone();
        sorted.sort();
        serde_json::to_string_pretty(&sorted).expect("a ledger serialises") + "\n"
    }

    fn sort(&mut self) {
        self.records.sort_by(|a, b| (&a.island, &a.arm, &a.device).cmp(&(&b.island, &b.arm, &b.device)));
    }

    /// Inserts `record`, replacing the record of the same key.
    pub fn upsert(&mut self, record: Record) {
        self.records.retain(|r| r.key() != record.key());
        self.records.push(record);
        self.sort();
    }

    /// The record of (`island`, `arm`) on `device`, if any.
    pub fn find(&self, island: &str, arm: &str, device: &Fingerprint) -> Option<&Record> {
        self.records.iter().find(|r| r.island == island && r.arm == arm && r.device.matches(device))
    }
}

/// A stable 64-bit hash of generated code (FNV-1a), in hex: the same on every machine and Rust
/// version, which `std`'s hashers do not promise.
pub fn code_hash(code: &str) -> String {
    format!("{:016x}", crate::hash::fnv1a(code.as_bytes()))
}

/// A crate's ledger file, embedded at build time by [`crate::ledger!`].
#[derive(Debug)]
pub struct Embedded {
    pub krate: &'static str,
    /// Where the file was when the crate was built (`islands gate` updates it there).
    pub path: &'static str,
    pub text: &'static str,
}

inventory::collect!(Embedded);

/// Embeds the crate's `ledger.json` (beside its `Cargo.toml`) and registers it, so launches of
/// its islands consult its records and `islands gate` / `islands scoreboard` find it.
#[macro_export]
macro_rules! ledger {
    () => {
        $crate::__private::inventory::submit! {
            $crate::ledger::Embedded {
                krate: env!("CARGO_PKG_NAME"),
                path: concat!(env!("CARGO_MANIFEST_DIR"), "/ledger.json"),
                text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/ledger.json")),
            }
        }
    };
}

/// Every embedded ledger, by crate.
pub fn embedded() -> Vec<&'static Embedded> {
    let mut all: Vec<&'static Embedded> = inventory::iter::<Embedded>.into_iter().collect();
    all.sort_by_key(|e| e.krate);
    all
}

/// Why the ledger a process consults could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("the ledger of `{krate}` ({path}) does not parse: {reason}")]
    Embedded { krate: &'static str, path: &'static str, reason: String },
    #[error("ISLANDS_LEDGER names `{path}`, which cannot be read: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("ISLANDS_LEDGER names `{path}`, which does not parse as a ledger: {reason}")]
    Malformed { path: String, reason: String },
}

/// The records launches consult: every embedded ledger, then the files listed in
/// `ISLANDS_LEDGER` (separated by `:`), whose records replace embedded ones of the same island,
/// arm and device (a deployment's own gate results, without a rebuild). A ledger that cannot be
/// read or parsed is an error: its records may be the ones that decline an arm.
pub fn load(ledger_paths: Option<&str>) -> Result<Vec<Record>, LedgerError> {
    let mut all = Ledger::default();
    for e in embedded() {
        let l =
            Ledger::parse(e.text).map_err(|reason| LedgerError::Embedded { krate: e.krate, path: e.path, reason })?;
        l.records.into_iter().for_each(|r| all.upsert(r));
    }
    for path in ledger_paths.unwrap_or_default().split(':').filter(|p| !p.trim().is_empty()) {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LedgerError::Unreadable { path: path.into(), reason: e.to_string() })?;
        let l = Ledger::parse(&text).map_err(|reason| LedgerError::Malformed { path: path.into(), reason })?;
        l.records.into_iter().for_each(|r| all.upsert(r));
    }
    Ok(all.records)
}

/// [`load`] with this process's `ISLANDS_LEDGER`, once.
pub fn records() -> Result<&'static [Record], &'static LedgerError> {
    static ALL: OnceLock<Result<Vec<Record>, LedgerError>> = OnceLock::new();
    ALL.get_or_init(|| load(std::env::var("ISLANDS_LEDGER").ok().as_deref())).as_ref().map(Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> Fingerprint {
        Fingerprint {
            runtime: "cuda".into(),
            device: "NVIDIA H200".into(),
            identity: "ptx_sm90".into(),
            plane: 32,
            sm: 90,
            driver: "nvidia 580.95.05".into(),
        }
    }

    fn record(decision: Decision) -> Record {
        Record {
            island: "k#0".into(),
            arm: "cuda".into(),
            device: device(),
            code: CodeHashes {
                codegen: "CUDA C++".into(),
                arm: code_hash("a"),
                default: code_hash("d"),
                emulation: code_hash("e"),
            },
            proof: ProofEvidence {
                verdict: "proven".into(),
                seed: "0x1".into(),
                depth: 1,
                inputs: 64,
                contract: "bit-exact".into(),
            },
            conformance: ConformanceEvidence {
                verdict: "proven".into(),
                native: true,
                instructions: vec![],
                report: None,
                machine_code: None,
            },
            speed: Some(SpeedEvidence {
                arm_us: 2.0,
                default_us: 1.0,
                speedup: 0.5,
                threshold: DEFAULT_THRESHOLD,
                lanes: 1,
                dispatches: 1,
                rounds: 1,
                ratios: vec![0.5],
            }),
            decision,
            note: None,
            date: "2026-12-01".into(),
            sdk: "0.1.0".into(),
        }
    }

    #[test]
    fn the_file_round_trips_sorted() {
        let mut ledger = Ledger::default();
        ledger.upsert(record(Decision::Flipped));
        ledger.upsert(Record { island: "a#0".into(), ..record(Decision::Failed) });
        ledger.upsert(record(Decision::DeclinedSlow));
        assert_eq!(ledger.records.len(), 2);
        let text = ledger.to_text();
        assert_eq!(Ledger::parse(&text).unwrap(), ledger);
        assert!(text.find("a#0").unwrap() < text.find("k#0").unwrap());
        assert_eq!(Ledger::parse("").unwrap(), Ledger::default());
        assert_eq!(code_hash("abc"), code_hash("abc"));
        assert_ne!(code_hash("abc"), code_hash("abd"));
    }

    #[test]
    fn code_changes_are_named_and_old_records_are_held_to_what_they_hashed() {
        let h = |arm: &str, default: &str, emulation: &str| CodeHashes {
            codegen: "CUDA C++".into(),
            arm: arm.into(),
            default: default.into(),
            emulation: emulation.into(),
        };
        assert_eq!(h("a", "d", "e").changed(&h("a", "d", "e")), None);
        assert_eq!(h("a", "d", "e").changed(&h("x", "d", "e")).map(|c| c.0), Some("the arm's code"));
        assert_eq!(h("a", "d", "e").changed(&h("a", "x", "e")).map(|c| c.0), Some("`default`'s code"));
        assert_eq!(h("a", "d", "e").changed(&h("a", "d", "x")).map(|c| c.0), Some("the arm's emulation"));
        assert_eq!(h("a", "d", "").changed(&h("a", "d", "x")), None);
    }
}
