//! The ledger as launches and CI use it: a declined, failed or (under the strict policy)
//! missing record makes a launch take `default` and say why once; the gate declines a slow arm.
//! (That the committed records are current is `proofs::ledger`, run for every crate.)

use island_runtime::fingerprint::Fingerprint;
use island_runtime::gate::{self, GateOptions};
use island_runtime::ledger::{self, CodeHashes, ConformanceEvidence, Decision, DeviceLedger, Policy, ProofEvidence, Record};
use island_runtime::lifted::ProofSpec;
use island_runtime::proof;
use island_runtime::runtimes::RuntimeName;
use island_runtime::{ArmEntry, Backend, Profile, Selection, Target, registry};
use libtest_mimic::{Failed, Trial};

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        Trial::test("ledger::a_record_goes_stale_when_only_the_emulation_changes", emulation_is_hashed),
        Trial::test("ledger::a_declined_record_runs_default_and_says_why_once", || {
            launches_default(Decision::DeclinedSlow, Policy::Trust, true)
        }),
        Trial::test("ledger::a_failed_record_runs_default", || launches_default(Decision::Failed, Policy::Trust, true)),
        Trial::test("ledger::the_strict_policy_runs_default_without_a_passing_record", || {
            launches_default(Decision::Unverified, Policy::Strict, true)
        }),
        Trial::test("ledger::the_trust_policy_runs_an_arm_without_a_verdict", || {
            launches_default(Decision::Unverified, Policy::Trust, false)
        }),
        Trial::test("ledger::the_off_policy_ignores_records", || launches_default(Decision::Failed, Policy::Off, false)),
        Trial::test("ledger::a_flipped_record_runs_the_arm_under_strict", || {
            launches_default(Decision::Flipped, Policy::Strict, false)
        }),
    ];
    if RuntimeName::Device(island_runtime::Backend::Vulkan).built() {
        trials.push(Trial::test("ledger::gate_declines_a_slow_arm", gate_declines_a_slow_arm));
    }
    trials.into_iter().map(|t| t.with_kind("ledger")).collect()
}

/// A fixture whose `cuda` arm computes other bytes than `default` (a planted bug), so the
/// output tells which of the two ran.
fn fixture() -> Result<&'static ArmEntry, Failed> {
    registry::arms()
        .iter()
        .copied()
        .find(|e| e.site.id.ends_with("negative::sign_extension_slip#0"))
        .ok_or_else(|| "the fixture `sign_extension_slip` is not registered".into())
}

fn h200() -> Fingerprint {
    Fingerprint {
        runtime: "cuda".into(),
        device: "NVIDIA H200".into(),
        identity: "ptx_sm90".into(),
        plane: 32,
        sm: 90,
        driver: "nvidia 580.95.05".into(),
    }
}

fn record(entry: &ArmEntry, decision: Decision) -> Record {
    Record {
        island: entry.site.id.into(),
        arm: entry.spec().label.into(),
        device: h200(),
        code: CodeHashes { codegen: "CUDA C++".into(), arm: "-".into(), default: "-".into(), emulation: "-".into() },
        proof: ProofEvidence { verdict: "proven".into(), seed: "0x0".into(), depth: 1, inputs: 0, contract: "bit-exact".into() },
        conformance: ConformanceEvidence { verdict: "proven".into(), native: true, instructions: vec![], report: None },
        speed: None,
        decision,
        note: None,
        date: "2026-12-01".into(),
        sdk: "test".into(),
    }
}

/// Runs the fixture's lifted kernel on the CPU with `target`, and returns its output bytes.
fn output(entry: &'static ArmEntry, target: Target) -> Result<Vec<u8>, Failed> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return Err("the fixture has no proof kernel".into()) };
    let cpu = proofs::cpu()?;
    let inputs = proof::recipe_inputs(lifted, 4, 7);
    let args = proof::launch_args(&cpu, lifted, 4, &inputs, target, 0);
    (lifted.launch)(&args);
    let out = args.buffers.last().ok_or("no output buffer")?.0.clone();
    Ok(island_runtime::readback::read(&cpu, out)?)
}

/// With a record of `decision` for the fixture on a forced H200 fingerprint under `policy`,
/// a launch of the fixture takes `default` exactly when `expect_default`; when it does, the
/// reason is logged once over two launches (two tags, so the kernel is expanded twice).
fn launches_default(decision: Decision, policy: Policy, expect_default: bool) -> Result<(), Failed> {
    let entry = fixture()?;
    let cpu = proofs::cpu()?;
    let profile = Profile::references(Backend::Cuda)[0];
    let records = if decision == Decision::Unverified && policy == Policy::Strict { vec![] } else { vec![record(entry, decision)] };
    let arm = output(entry, Target::forced(profile, &cpu))?;
    let default = output(entry, Target::default_arms(&cpu))?;
    if arm == default {
        return Err("the fixture's arm and `default` computed the same bytes: this test could not tell them apart".into());
    }
    let tag = |records: Vec<Record>| Target::forced(profile, &cpu).with_ledger(DeviceLedger::leak(h200(), policy, records));
    let first = tag(records.clone());
    let selection = first.explain(entry.site);
    let got = output(entry, first)?;
    let again = output(entry, tag(records))?;
    let took_default = got == default && again == default;
    let took_arm = got == arm && again == arm;
    match (expect_default, took_default, took_arm) {
        (true, true, _) => {
            let Selection::Default(reason) = selection else { return Err(format!("explain says {selection:?}").into()) };
            let reason = reason.to_string();
            if policy != Policy::Strict && !reason.contains(decision.word().split(' ').next().unwrap_or("")) {
                return Err(format!("the reason does not name the record's decision: {reason}").into());
            }
            let logged: Vec<String> = ledger::logged().into_iter().filter(|m| m.contains(entry.site.id) && m.contains(&reason)).collect();
            if logged.len() != 1 {
                return Err(format!("the reason was logged {} times, not once: {logged:?}", logged.len()).into());
            }
            Ok(())
        }
        (false, _, true) => Ok(()),
        _ => Err(format!(
            "{decision:?} under {policy}: expected the {} to run; the output matched the arm: {took_arm}, `default`: {took_default} ({selection:?})",
            if expect_default { "default" } else { "arm" }
        )
        .into()),
    }
}

/// The gate, on lavapipe, declines the slow fixture arm (bit-exact, far slower than `default`).
fn gate_declines_a_slow_arm() -> Result<(), Failed> {
    let device = RuntimeName::Device(island_runtime::Backend::Vulkan).client()?;
    let cpu = proofs::cpu()?;
    let entry = registry::arms()
        .iter()
        .copied()
        .find(|e| e.site.id.ends_with("slow::slow_arm#0"))
        .ok_or("the fixture `slow_arm` is not registered")?;
    let options = GateOptions { lanes: 1 << 12, dispatches: 3, rounds: 3, ..GateOptions::default() };
    let record = gate::gate(entry, &device, &cpu, &options).ok_or("the device does not select the slow arm")?;
    match (record.decision, &record.speed) {
        (Decision::DeclinedSlow, Some(s)) if s.speedup < 0.5 => Ok(()),
        _ => Err(format!("the gate did not decline the slow arm: {}", serde_json::to_string_pretty(&record).unwrap_or_default()).into()),
    }
}

/// Two fixtures whose native code and `default` are the same and whose emulations differ (the
/// sm_90 model with one detail wrong, and the `k`-order sum): their records' arm and `default`
/// hashes agree and their emulation hashes do not, so a record made with one emulation is stale
/// for the other. Without the emulation's hash, a changed emulation left every record current.
fn emulation_is_hashed() -> Result<(), Failed> {
    let cpu = proofs::cpu()?;
    let find = |id: &str| {
        registry::arms().iter().copied().find(|e| e.site.id.ends_with(id)).ok_or_else(|| format!("no arm `{id}`"))
    };
    let a = gate::code_hashes(find("::tile_rounding_at_alignment#0")?, &h200(), &cpu)?;
    let b = gate::code_hashes(find("::tile_in_k_order#0")?, &h200(), &cpu)?;
    if a.arm != b.arm || a.default != b.default {
        return Err(format!("the fixtures' native code or default differ ({a:?}, {b:?}): the test needs twins").into());
    }
    match a.changed(&b) {
        Some(("the arm's emulation", _, _)) => {}
        other => return Err(format!("a changed emulation is not seen: {other:?}").into()),
    }
    // An old record without the emulation's hash is held to the rest alone.
    let old = CodeHashes { emulation: String::new(), ..a.clone() };
    if old.changed(&b).is_some() {
        return Err("a record without an emulation hash is stale although its arm and default are unchanged".into());
    }
    Ok(())
}
