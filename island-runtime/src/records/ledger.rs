//! The evidence ledger: a crate's `ledger.json`, the [`crate::records::record::Record`]s of its islands
//! per (island, arm, device). `islands gate` runs both halves of the gate on the present device
//! and writes one record per arm; the file lives beside the crate that owns the islands, is
//! reviewed in pull requests, and is embedded in the crate at build time
//! (`crate::records::embedded`) so a launch can consult it (`crate::launch::policy`).

use crate::hardware::fingerprint::Fingerprint;
use crate::records::cell_record::CellRecord;
use crate::records::record::Record;
use serde::{Deserialize, Serialize};

/// The ledger of one crate: its arm records, sorted by island, arm and device, and its cell
/// records (`islands gate --ops`), sorted by cell and device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    pub records: Vec<Record>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellRecord>,
}

/// Why a ledger's text is not a ledger.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(#[from] serde_json::Error);

impl Ledger {
    pub fn parse(text: &str) -> Result<Ledger, ParseError> {
        if text.trim().is_empty() {
            return Ok(Ledger::default());
        }
        Ok(serde_json::from_str(text)?)
    }

    /// The file's text: pretty JSON, records sorted, a final newline (stable diffs).
    pub fn to_text(&self) -> String {
        let mut sorted = self.clone();
        sorted.sort();
        serde_json::to_string_pretty(&sorted).expect("a ledger serialises") + "\n"
    }

    fn sort(&mut self) {
        self.records.sort_by(|a, b| (&a.island, &a.arm, &a.device).cmp(&(&b.island, &b.arm, &b.device)));
        self.cells.sort_by(|a, b| a.key().cmp(&b.key()));
    }

    /// Inserts a cell record, replacing the record of the same cell and device.
    pub fn upsert_cell(&mut self, record: CellRecord) {
        self.cells.retain(|r| r.key() != record.key());
        self.cells.push(record);
        self.sort();
    }

    /// Inserts `record`, replacing the record of the same key.
    pub fn upsert(&mut self, record: Record) {
        self.records.retain(|r| r.key() != record.key());
        self.records.push(record);
        self.sort();
    }

    /// [`Ledger::upsert`] of a new gate's `record`, which keeps the date of the record it
    /// replaces where the decision and the code are unchanged: re-gating changes only timings.
    pub fn keep(&mut self, mut record: Record) {
        if let Some(old) = self.find(&record.island, &record.arm, &record.device)
            && old.decision == record.decision
            && old.code == record.code
        {
            record.date = old.date.clone();
        }
        self.upsert(record);
    }

    /// The record of (`island`, `arm`) on `device`, if any.
    pub fn find(&self, island: &str, arm: &str, device: &Fingerprint) -> Option<&Record> {
        self.records.iter().find(|r| r.island == island && r.arm == arm && r.device.matches(device))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::record::*;

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
