//! A device's view of the ledgers: its records, what is known of each arm there, and the
//! policy that reads them (`ISLANDS_POLICY`), deciding what a launch on it runs.
//!
//! Under the default policy, [`Policy::Evidence`], an arm runs natively on a device only where
//! something shows it computes `default`'s bytes there:
//!
//! | the evidence for the arm | the arm runs? |
//! |---|---|
//! | a known divergence of the device (`crate::hardware::divergence`) | no |
//! | a `failed` record of any device of the same runtime (the same generated code) | no, on every such device, until that record is re-gated |
//! | a `flipped` record of this exact device and driver, its code hashes the build's | yes |
//! | a declined record of this device under any driver | no (a measured "no" survives driver updates) |
//! | an `unverified` record of this exact device whose bit-exact half passed (only the timing is missing), hashes current | yes |
//! | any other `unverified` record | no |
//! | no record of this device; every intrinsic the arm lowers natively is *defined* for its operands, its expansion holds no float arithmetic, its plane operations run at the one width the driver allows, its contract is bit equality, and some device of its runtime has run an island natively | yes: its CPU proof carries |
//! | the same, but no device of its runtime (HIP, Metal, WGSL today) has run an island natively | only under [`Policy::Trust`], said once |
//! | no record of this device, and the arm uses semantics the device decides (float arithmetic, float subgroup reductions, tensor-core float accumulation) or synchronizes (async copies, barriers, fences, non-coherent loads), has a tolerance contract, or has no proof | no |
//!
//! An arm that lowers no intrinsic natively on the device ([`Carry::AsDefault`]: a formulation
//! for a language that lacks a type `default` uses) is portable code like `default`, compiled by
//! the same code generator: it runs wherever `default` would, unless a record or a divergence
//! of the device says no.
//!
//! [`Policy::Strict`] runs only arms with a current `flipped` record of the exact device;
//! [`Policy::Off`] consults nothing. Every `default` taken for a reason of this table is logged
//! once per process with the reason.

use crate::hardware::divergence;
use crate::hardware::fingerprint::Fingerprint;
use crate::records::record::{Decision, Record};
use crate::records::ruling::{Followed, Why};
use island_vocab::Profile;
use serde::Serialize;
use std::fmt;

/// How a launch consults the ledger (`ISLANDS_POLICY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The default: an arm runs where a record, or its semantic class on a runtime that has run
    /// natively, shows it exact (module docs).
    Evidence,
    /// As [`Policy::Evidence`], and an arm whose semantic class carries its CPU proof also runs
    /// on a runtime no device has run an island on (its code generator's output unchecked).
    Trust,
    /// Only arms with a current `flipped` record of this exact device run (and arms that lower
    /// no intrinsic there, which stand where `default` stands).
    Strict,
    /// The ledger is not consulted: every arm whose guard holds runs.
    Off,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Evidence => "evidence",
            Policy::Trust => "trust",
            Policy::Strict => "strict",
            Policy::Off => "off",
        })
    }
}

/// What is known of one arm on the device of a [`DeviceLedger`] besides its records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArmFacts {
    /// Whether the arm's CPU proof carries to this device without a record
    /// (`crate::launch::semantics::carry`).
    pub carry: Carry,
    /// Why the record of this exact device no longer describes the build (a code hash
    /// changed), if it does not.
    pub stale: Option<String>,
}

/// How far an arm's CPU proof carries to a device no record covers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Carry {
    /// The arm lowers no intrinsic natively there: portable code, compiled by the same code
    /// generator as `default`, so it stands where `default` stands (a formulation for a
    /// language that lacks a type `default` uses, as WGSL lacks binary64).
    AsDefault,
    /// Its CPU proof decides its bytes (defined intrinsics, no float arithmetic, one plane
    /// width), once some device has shown its runtime's code generator exact.
    #[default]
    Proof,
    /// It needs a record of the device: why.
    Record(String),
}

impl ArmFacts {
    /// Why the arm needs a record of the device, if it does.
    pub fn needs_device_evidence(&self) -> Option<&str> {
        match &self.carry {
            Carry::Record(why) => Some(why),
            Carry::AsDefault | Carry::Proof => None,
        }
    }
}

/// The ledger as launches on one device see it.
#[derive(Debug)]
pub struct DeviceLedger {
    pub device: Fingerprint,
    pub profile: Profile,
    pub policy: Policy,
    /// The records of this device, under any driver.
    pub records: Vec<Record>,
    /// The `failed` records of other devices of this runtime (`cuda`, `wgpu<spirv>`: the same
    /// generated code): each blocks its arm here too.
    pub failed_elsewhere: Vec<Record>,
    /// A record of the ledgers (any device) whose conformance ran natively on this device's
    /// runtime (`cuda`, `wgpu<spirv>`, …), if one does: its code generator has run on a device.
    pub runtime_witness: Option<String>,
    /// Per (island, arm label): what [`ArmFacts`] says. An arm missing here is treated as one
    /// that needs device evidence.
    pub facts: Vec<((String, String), ArmFacts)>,
}

impl DeviceLedger {
    /// A view of `device` (of `profile`) from `records`, the records of every device (kept:
    /// those of this device, the failed ones of other devices of its runtime, and whether any
    /// ran natively on its runtime), and the facts of its arms, leaked: one per device and
    /// process.
    pub fn leak(
        device: Fingerprint,
        profile: Profile,
        policy: Policy,
        records: Vec<Record>,
        facts: Vec<((String, String), ArmFacts)>,
    ) -> &'static DeviceLedger {
        let runtime_witness = records
            .iter()
            .find(|r| r.device.runtime == device.runtime && r.conformance.native)
            .map(|r| format!("{} on {}", r.island, r.device.device));
        let (records, others): (Vec<Record>, Vec<Record>) =
            records.into_iter().partition(|r| r.device.same_device(&device));
        let failed_elsewhere = others
            .into_iter()
            .filter(|r| r.decision == Decision::Failed && r.device.runtime == device.runtime)
            .collect();
        Box::leak(Box::new(DeviceLedger { device, profile, policy, records, failed_elsewhere, runtime_witness, facts }))
    }

    /// The facts of (`island`, `arm`).
    pub fn facts(&self, island: &str, arm: &str) -> Option<&ArmFacts> {
        self.facts.iter().find(|((i, a), _)| i == island && a == arm).map(|(_, f)| f)
    }

    /// Why `default` runs instead of (`island`, `arm`) on this device, if it does (module docs).
    pub fn veto(&self, island: &str, arm: &str) -> Option<Why> {
        if self.policy == Policy::Off {
            return None;
        }
        if let Some(d) = divergence::known(&self.profile, island) {
            return Some(Why::Divergence { cause: d.quirk.cause, measured: d.quirk.measured });
        }
        let facts = self.facts(island, arm);
        let mine = |r: &&Record| r.island == island && r.arm == arm;
        if let Some(r) = self.failed_elsewhere.iter().find(mine) {
            return Some(Why::FailedElsewhere(Followed::arm(r)));
        }
        let exact = self.records.iter().filter(mine).find(|r| r.device == self.device);
        let stale = facts.and_then(|f| f.stale.clone());
        if let Some(r) = exact
            && let Some(why) = r.machine_code_unchecked()
        {
            return Some(Why::MachineCodeUnchecked { record: Followed::arm(r), why });
        }
        let strict = self.policy == Policy::Strict;
        match exact {
            Some(r) if r.decision.selects_arm() => match stale {
                None => return None,
                Some(why) if strict => return Some(Why::Strict { record: Some(Followed::arm(r)), stale: Some(why) }),
                Some(_) => {}
            },
            Some(r) if r.decision == Decision::Unverified => {
                if strict {
                    return Some(Why::Strict { record: Some(Followed::arm(r)), stale: None });
                }
                if !r.exact_half_passed() {
                    let note = r.note.clone().unwrap_or_else(|| "no note".into());
                    return Some(Why::UnverifiedInexact { record: Followed::arm(r), note });
                }
                // Current code hashes: the arm runs.
                stale.as_ref()?;
            }
            Some(r) => return Some(Why::Recorded(Followed::arm(r))),
            None => {}
        }
        // A measured "no" under another driver of the same device still holds.
        if let Some(r) =
            self.records.iter().filter(mine).find(|r| !r.decision.selects_arm() && r.decision != Decision::Unverified)
        {
            return Some(Why::OtherDriver(Followed::arm(r)));
        }
        // Portable code stands where `default` stands, under every policy.
        if facts.is_some_and(|f| f.carry == Carry::AsDefault) {
            return None;
        }
        if strict {
            return Some(Why::Strict { record: None, stale });
        }
        match facts {
            None => Some(Why::NotRegistered),
            Some(f) => match &f.carry {
                Carry::AsDefault => None,
                Carry::Proof if self.runtime_witness.is_some() || self.policy == Policy::Trust => None,
                Carry::Proof => Some(Why::Unwitnessed { runtime: self.device.runtime.clone() }),
                Carry::Record(why) => Some(Why::NeedsRecord { needs: why.clone(), stale }),
            },
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::record::{
        CodeHashes, ConformanceEvidence, MachineCodeEvidence, ProofEvidence, SpeedEvidence, code_hash,
    };
    use crate::records::ruling::Verdict;
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
                machine_code: Some(MachineCodeEvidence {
                    how: "NVRTC 13.0 CUBIN for sm_90a".into(),
                    ..Default::default()
                }),
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

    /// A view of the H200 under driver 580 with `records` and, unless `records` holds one, a
    /// record of another island on another CUDA device that ran natively.
    fn view(policy: Policy, mut records: Vec<Record>, facts: ArmFacts) -> &'static DeviceLedger {
        records.push(witness());
        unwitnessed(policy, records, facts)
    }

    fn unwitnessed(policy: Policy, records: Vec<Record>, facts: ArmFacts) -> &'static DeviceLedger {
        let profile = Profile::references(Backend::Cuda)[0];
        DeviceLedger::leak(device("nvidia 580"), profile, policy, records, vec![(("k#0".into(), "cuda".into()), facts)])
    }

    fn witness() -> Record {
        let mut r = record(Decision::Flipped, "nvidia 580");
        r.island = "other#0".into();
        r.device.device = "NVIDIA H100".into();
        r
    }

    fn device_defined() -> ArmFacts {
        ArmFacts { carry: Carry::Record("it lowers `plane::sum<f32>`".into()), stale: None }
    }

    #[test]
    fn without_a_record_only_defined_arms_run() {
        assert_eq!(view(Policy::Evidence, vec![], ArmFacts::default()).veto("k#0", "cuda"), None);
        let why = view(Policy::Evidence, vec![], device_defined()).veto("k#0", "cuda").unwrap();
        assert!(matches!(&why, Why::NeedsRecord { needs, stale: None } if needs.contains("plane::sum<f32>")), "{why}");
        assert_eq!(
            view(Policy::Evidence, vec![], ArmFacts::default()).veto("k#1", "cuda"),
            Some(Why::NotRegistered),
            "an unregistered arm"
        );
        assert_eq!(
            view(Policy::Strict, vec![], ArmFacts::default()).veto("k#0", "cuda"),
            Some(Why::Strict { record: None, stale: None })
        );
        assert_eq!(view(Policy::Off, vec![], device_defined()).veto("k#0", "cuda"), None);
    }

    #[test]
    fn a_runtime_nobody_ran_natively_runs_defined_arms_only_on_trust() {
        let why = unwitnessed(Policy::Evidence, vec![], ArmFacts::default()).veto("k#0", "cuda").unwrap();
        assert_eq!(why, Why::Unwitnessed { runtime: "cuda".into() });
        assert!(why.to_string().contains("ISLANDS_POLICY=trust"), "{why}");
        assert_eq!(unwitnessed(Policy::Trust, vec![], ArmFacts::default()).veto("k#0", "cuda"), None);
        // Trust carries only proofs that carry: a device-defined arm still needs a record.
        assert!(unwitnessed(Policy::Trust, vec![], device_defined()).veto("k#0", "cuda").is_some());
        // A record that did not run natively witnesses nothing.
        let mut emulated = witness();
        emulated.conformance.native = false;
        assert!(unwitnessed(Policy::Evidence, vec![emulated], ArmFacts::default()).veto("k#0", "cuda").is_some());
    }

    #[test]
    fn a_formulation_stands_where_default_stands() {
        let formulation = || ArmFacts { carry: Carry::AsDefault, stale: None };
        // No witness of the runtime and no record needed, under every policy.
        for policy in [Policy::Evidence, Policy::Trust, Policy::Strict, Policy::Off] {
            assert_eq!(unwitnessed(policy, vec![], formulation()).veto("k#0", "cuda"), None, "{policy}");
        }
        // A measured "no" still holds: a failure elsewhere, a decline here.
        let mut failed = record(Decision::Failed, "nvidia 570");
        failed.device.device = "NVIDIA H100".into();
        assert!(view(Policy::Evidence, vec![failed], formulation()).veto("k#0", "cuda").is_some());
        let declined = record(Decision::DeclinedSlow, "nvidia 575");
        assert!(view(Policy::Evidence, vec![declined], formulation()).veto("k#0", "cuda").is_some());
    }

    #[test]
    fn a_failed_record_blocks_the_arm_on_every_device_of_its_runtime() {
        let mut failed = record(Decision::Failed, "nvidia 570");
        failed.device.device = "NVIDIA H100".into();
        for policy in [Policy::Evidence, Policy::Trust, Policy::Strict] {
            let why = view(policy, vec![failed.clone()], ArmFacts::default()).veto("k#0", "cuda").unwrap();
            assert!(matches!(&why, Why::FailedElsewhere(f) if f.device == "NVIDIA H100"), "{policy}: {why}");
            assert!(why.to_string().contains("re-gated"), "{policy}: {why}");
            // Even beside a flip of this exact device.
            let both = vec![failed.clone(), record(Decision::Flipped, "nvidia 580")];
            assert!(view(policy, both, device_defined()).veto("k#0", "cuda").is_some(), "{policy}");
        }
        // Another runtime's failure (other generated code) blocks nothing here.
        let mut spirv = failed.clone();
        spirv.device.runtime = "wgpu<spirv>".into();
        assert_eq!(view(Policy::Evidence, vec![spirv], ArmFacts::default()).veto("k#0", "cuda"), None);
        // Another arm's failure blocks nothing, nor does a decline elsewhere.
        let mut other = failed.clone();
        other.island = "k#1".into();
        assert_eq!(view(Policy::Evidence, vec![other], ArmFacts::default()).veto("k#0", "cuda"), None);
        let mut slow = failed.clone();
        slow.decision = Decision::DeclinedSlow;
        assert_eq!(view(Policy::Evidence, vec![slow], ArmFacts::default()).veto("k#0", "cuda"), None);
        assert_eq!(view(Policy::Off, vec![failed], ArmFacts::default()).veto("k#0", "cuda"), None);
    }

    #[test]
    fn a_measured_no_survives_a_driver_update_and_a_flip_needs_the_exact_driver() {
        let declined = view(Policy::Evidence, vec![record(Decision::DeclinedSlow, "nvidia 575")], ArmFacts::default());
        let why = declined.veto("k#0", "cuda").unwrap();
        let decided = Verdict::Arm(Decision::DeclinedSlow);
        assert!(
            matches!(&why, Why::OtherDriver(f) if f.driver == "nvidia 575" && f.verdict == decided && f.said.contains("0.500×")),
            "{why}"
        );
        let flipped_elsewhere = view(Policy::Evidence, vec![record(Decision::Flipped, "nvidia 575")], device_defined());
        assert!(flipped_elsewhere.veto("k#0", "cuda").is_some(), "a flip under another driver is no evidence here");
        let flipped = view(Policy::Strict, vec![record(Decision::Flipped, "nvidia 580")], device_defined());
        assert_eq!(flipped.veto("k#0", "cuda"), None);
        // The exact device's own record decides over an older driver's.
        let both = view(
            Policy::Evidence,
            vec![record(Decision::Failed, "nvidia 575"), record(Decision::Flipped, "nvidia 580")],
            device_defined(),
        );
        assert_eq!(both.veto("k#0", "cuda"), None);
    }

    #[test]
    fn a_cuda_record_without_a_machine_code_listing_concludes_nothing() {
        for machine_code in [
            None,
            Some(MachineCodeEvidence { how: "not obtained: no CUDA toolkit found".into(), ..Default::default() }),
        ] {
            let mut flipped = record(Decision::Flipped, "nvidia 580");
            flipped.conformance.machine_code = machine_code;
            let why = view(Policy::Evidence, vec![flipped.clone()], device_defined()).veto("k#0", "cuda").unwrap();
            assert!(matches!(why, Why::MachineCodeUnchecked { .. }), "{why}");
            assert!(why.to_string().contains("fails closed"), "{why}");
            assert!(!flipped.exact_half_passed());
        }
    }

    #[test]
    fn a_stale_flip_is_not_taken() {
        let stale = ArmFacts { stale: Some("the arm's code changed".into()), ..device_defined() };
        let why = view(Policy::Evidence, vec![record(Decision::Flipped, "nvidia 580")], stale.clone())
            .veto("k#0", "cuda")
            .unwrap();
        assert!(matches!(&why, Why::NeedsRecord { stale: Some(s), .. } if s.contains("changed")), "{why}");
        assert!(
            view(Policy::Strict, vec![record(Decision::Flipped, "nvidia 580")], stale).veto("k#0", "cuda").is_some()
        );
        // A defined arm still runs on its CPU proof when its record went stale.
        let defined = ArmFacts { stale: Some("changed".into()), carry: Carry::Proof };
        assert_eq!(
            view(Policy::Evidence, vec![record(Decision::Flipped, "nvidia 580")], defined).veto("k#0", "cuda"),
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
        assert_eq!(view(Policy::Evidence, vec![timing_only.clone()], device_defined()).veto("k#0", "cuda"), None);
        assert!(view(Policy::Strict, vec![timing_only.clone()], device_defined()).veto("k#0", "cuda").is_some());
        let errored = Record {
            conformance: ConformanceEvidence {
                verdict: "ERROR".into(),
                native: false,
                instructions: vec![],
                report: None,
                machine_code: timing_only.conformance.machine_code.clone(),
            },
            ..timing_only.clone()
        };
        let why = view(Policy::Evidence, vec![errored], ArmFacts::default()).veto("k#0", "cuda").unwrap();
        assert!(matches!(why, Why::UnverifiedInexact { .. }), "{why}");
        let no_instruction = Record {
            conformance: ConformanceEvidence { instructions: vec![], ..timing_only.conformance.clone() },
            ..timing_only
        };
        assert!(view(Policy::Evidence, vec![no_instruction], ArmFacts::default()).veto("k#0", "cuda").is_some());
    }
}
