//! A device's view of the ledgers: its records, what is known of each arm there, and the
//! policy that reads them (`ISLANDS_POLICY`), deciding what a launch on it runs.
//!
//! Under the default policy, [`Policy::Trust`], an arm runs on a device only where something
//! shows it computes `default`'s bytes there:
//!
//! | the device's evidence for the arm | the arm runs? |
//! |---|---|
//! | a known divergence of the device (`crate::hardware::divergence`) | no |
//! | a `flipped` record of this exact device and driver, its code hashes the build's | yes |
//! | a declined or failed record of this device under any driver | no (a measured "no" survives driver updates) |
//! | an `unverified` record of this exact device whose bit-exact half passed (only the timing is missing), hashes current | yes |
//! | any other `unverified` record | no |
//! | no record, and every intrinsic the arm lowers natively is *defined* for its operands and the arm's contract is bit equality | yes: its CPU proof carries |
//! | no record, and the arm uses device-defined semantics (float subgroup reductions, tensor-core float accumulation), a tolerance contract, or has no proof | no |
//!
//! [`Policy::Strict`] runs only arms with a current `flipped` record of the exact device;
//! [`Policy::Off`] consults nothing. Every `default` taken for a reason of this table is logged
//! once per process with the reason.

use crate::hardware::divergence;
use crate::hardware::fingerprint::Fingerprint;
use crate::records::record::{Decision, Record};
use island_vocab::Profile;
use serde::Serialize;
use std::fmt;

/// How a launch consults the ledger (`ISLANDS_POLICY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The default: an arm runs where a record or its semantic class shows it exact (module docs).
    Trust,
    /// Only arms with a current `flipped` record of this exact device run.
    Strict,
    /// The ledger is not consulted: every arm whose guard holds runs.
    Off,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Trust => "trust",
            Policy::Strict => "strict",
            Policy::Off => "off",
        })
    }
}

/// What is known of one arm on the device of a [`DeviceLedger`] besides its records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArmFacts {
    /// Why the arm's CPU proof does not carry to this device without a record
    /// (`crate::launch::semantics::needs_device_evidence`), if it does not.
    pub needs_device_evidence: Option<String>,
    /// Why the record of this exact device no longer describes the build (a code hash
    /// changed), if it does not.
    pub stale: Option<String>,
}

/// The ledger as launches on one device see it.
#[derive(Debug)]
pub struct DeviceLedger {
    pub device: Fingerprint,
    pub profile: Profile,
    pub policy: Policy,
    /// The records of this device, under any driver.
    pub records: Vec<Record>,
    /// Per (island, arm label): what [`ArmFacts`] says. An arm missing here is treated as one
    /// that needs device evidence.
    pub facts: Vec<((String, String), ArmFacts)>,
}

impl DeviceLedger {
    /// A view of `device` (of `profile`) with `records` (those of other devices are dropped)
    /// and the facts of its arms, leaked: one per device and process.
    pub fn leak(
        device: Fingerprint,
        profile: Profile,
        policy: Policy,
        records: Vec<Record>,
        facts: Vec<((String, String), ArmFacts)>,
    ) -> &'static DeviceLedger {
        let records = records.into_iter().filter(|r| r.device.same_device(&device)).collect();
        Box::leak(Box::new(DeviceLedger { device, profile, policy, records, facts }))
    }

    /// The facts of (`island`, `arm`).
    pub fn facts(&self, island: &str, arm: &str) -> Option<&ArmFacts> {
        self.facts.iter().find(|((i, a), _)| i == island && a == arm).map(|(_, f)| f)
    }

    /// Why `default` runs instead of (`island`, `arm`) on this device, if it does (module docs).
    pub fn veto(&self, island: &str, arm: &str) -> Option<String> {
        if self.policy == Policy::Off {
            return None;
        }
        if let Some(d) = divergence::known(&self.profile, island) {
            return Some(format!("a measured divergence of this device: {} ({})", d.quirk.cause, d.quirk.measured));
        }
        let facts = self.facts(island, arm);
        let mine = |r: &&Record| r.island == island && r.arm == arm;
        let exact = self.records.iter().filter(mine).find(|r| r.device == self.device);
        let stale = facts.and_then(|f| f.stale.as_deref());
        match exact {
            Some(r) if r.decision.selects_arm() => match stale {
                None => return None,
                Some(why) => {
                    if self.policy == Policy::Strict {
                        return Some(format!("strict policy, and the `flipped` record of this device is stale: {why}"));
                    }
                }
            },
            Some(r) if r.decision == Decision::Unverified => {
                if self.policy == Policy::Strict {
                    return Some(format!("strict policy, and the record of this device is {}", r.why()));
                }
                if !r.exact_half_passed() {
                    return Some(format!(
                        "the record of this device is unverified and its bit-exact half did not pass ({})",
                        r.note.as_deref().unwrap_or("no note")
                    ));
                }
                // Current code hashes: the arm runs.
                stale.as_ref()?;
            }
            Some(r) => return Some(format!("the ledger's record on this device: {}", r.why())),
            None => {}
        }
        // A measured "no" under another driver of the same device still holds.
        if let Some(r) =
            self.records.iter().filter(mine).find(|r| !r.decision.selects_arm() && r.decision != Decision::Unverified)
        {
            return Some(format!("the ledger's record of this device under driver `{}`: {}", r.device.driver, r.why()));
        }
        if self.policy == Policy::Strict {
            return Some(match stale {
                Some(why) => format!("strict policy, and the record of this device is stale: {why}"),
                None => {
                    "strict policy, and the ledger has no `flipped` record of this arm on this device and driver".into()
                }
            });
        }
        match facts {
            None => Some("no record of this device, and the arm is not registered, so no proof covers it here".into()),
            Some(f) => match (&f.needs_device_evidence, stale) {
                (None, _) => None,
                (Some(why), Some(stale)) => Some(format!("the record of this device is stale ({stale}), and {why}")),
                (Some(why), None) => {
                    Some(format!("no record of this device shows it exact, and {why} (`islands gate` measures it)"))
                }
            },
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::record::{CodeHashes, ConformanceEvidence, ProofEvidence, SpeedEvidence, code_hash};
    use island_vocab::Backend;

    fn device(driver: &str) -> Fingerprint {
        Fingerprint {
            runtime: "cuda".into(),
            device: "NVIDIA H200".into(),
            identity: "ptx_sm90".into(),
            plane: 32,
            sm: 90,
            driver: driver.into(),
        }
    }

    fn record(decision: Decision, driver: &str) -> Record {
        Record {
            island: "k#0".into(),
            arm: "cuda".into(),
            device: device(driver),
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
                instructions: vec!["__dp4a(".into()],
                report: None,
                machine_code: None,
            },
            speed: Some(SpeedEvidence {
                arm_us: 2.0,
                default_us: 1.0,
                speedup: 0.5,
                threshold: 0.97,
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

    fn view(policy: Policy, records: Vec<Record>, facts: ArmFacts) -> &'static DeviceLedger {
        let profile = Profile::references(Backend::Cuda)[0];
        DeviceLedger::leak(device("nvidia 580"), profile, policy, records, vec![(("k#0".into(), "cuda".into()), facts)])
    }

    fn device_defined() -> ArmFacts {
        ArmFacts { needs_device_evidence: Some("it lowers `plane::sum<f32>`".into()), stale: None }
    }

    #[test]
    fn without_a_record_only_defined_arms_run() {
        assert_eq!(view(Policy::Trust, vec![], ArmFacts::default()).veto("k#0", "cuda"), None);
        let why = view(Policy::Trust, vec![], device_defined()).veto("k#0", "cuda").unwrap();
        assert!(why.contains("plane::sum<f32>"), "{why}");
        assert!(view(Policy::Trust, vec![], ArmFacts::default()).veto("k#1", "cuda").is_some(), "an unregistered arm");
        assert!(view(Policy::Strict, vec![], ArmFacts::default()).veto("k#0", "cuda").is_some());
        assert_eq!(view(Policy::Off, vec![], device_defined()).veto("k#0", "cuda"), None);
    }

    #[test]
    fn a_measured_no_survives_a_driver_update_and_a_flip_needs_the_exact_driver() {
        let declined = view(Policy::Trust, vec![record(Decision::DeclinedSlow, "nvidia 575")], ArmFacts::default());
        let why = declined.veto("k#0", "cuda").unwrap();
        assert!(why.contains("0.500×") && why.contains("nvidia 575"), "{why}");
        let flipped_elsewhere = view(Policy::Trust, vec![record(Decision::Flipped, "nvidia 575")], device_defined());
        assert!(flipped_elsewhere.veto("k#0", "cuda").is_some(), "a flip under another driver is no evidence here");
        let flipped = view(Policy::Strict, vec![record(Decision::Flipped, "nvidia 580")], device_defined());
        assert_eq!(flipped.veto("k#0", "cuda"), None);
        // The exact device's own record decides over an older driver's.
        let both = view(
            Policy::Trust,
            vec![record(Decision::Failed, "nvidia 575"), record(Decision::Flipped, "nvidia 580")],
            device_defined(),
        );
        assert_eq!(both.veto("k#0", "cuda"), None);
    }

    #[test]
    fn a_stale_flip_is_not_taken() {
        let stale = ArmFacts { stale: Some("the arm's code changed".into()), ..device_defined() };
        let why = view(Policy::Trust, vec![record(Decision::Flipped, "nvidia 580")], stale.clone())
            .veto("k#0", "cuda")
            .unwrap();
        assert!(why.contains("stale"), "{why}");
        assert!(
            view(Policy::Strict, vec![record(Decision::Flipped, "nvidia 580")], stale).veto("k#0", "cuda").is_some()
        );
        // A defined arm still runs on its CPU proof when its record went stale.
        let defined = ArmFacts { stale: Some("changed".into()), needs_device_evidence: None };
        assert_eq!(
            view(Policy::Trust, vec![record(Decision::Flipped, "nvidia 580")], defined).veto("k#0", "cuda"),
            None
        );
    }

    #[test]
    fn unverified_runs_only_when_just_the_timing_is_missing() {
        let timing_only = Record {
            speed: None,
            note: Some("bit-exact half only (no timing)".into()),
            ..record(Decision::Unverified, "nvidia 580")
        };
        assert_eq!(view(Policy::Trust, vec![timing_only.clone()], device_defined()).veto("k#0", "cuda"), None);
        assert!(view(Policy::Strict, vec![timing_only.clone()], device_defined()).veto("k#0", "cuda").is_some());
        let errored = Record {
            conformance: ConformanceEvidence {
                verdict: "ERROR".into(),
                native: false,
                instructions: vec![],
                report: None,
                machine_code: None,
            },
            ..timing_only.clone()
        };
        let why = view(Policy::Trust, vec![errored], ArmFacts::default()).veto("k#0", "cuda").unwrap();
        assert!(why.contains("unverified"), "{why}");
        let no_instruction = Record {
            conformance: ConformanceEvidence { instructions: vec![], ..timing_only.conformance.clone() },
            ..timing_only
        };
        assert!(view(Policy::Trust, vec![no_instruction], ArmFacts::default()).veto("k#0", "cuda").is_some());
    }
}
