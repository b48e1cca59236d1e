//! The ledger's records in CI: every committed record, of every device, must hash as the build
//! generates its code (hashing needs no device), and the records of the present Vulkan device
//! (lavapipe on a machine without a GPU) must still hold: same verdicts of the bit-exact half,
//! and a record for every arm the device selects.

use crate::settings::cpu;
use island_runtime::embedded;
use island_runtime::gate::{self, GateOptions};
use island_runtime::record::Record;
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::{Completion, Failed, Trial};

/// The currency trial for the records of `crates` (when the build has the `vulkan` runtime).
pub fn trials(crates: &'static [&'static str]) -> Vec<Trial> {
    let mut trials = vec![
        Trial::test("ledger::every_committed_record_hashes_as_the_build", move || {
            every_record_hashes_as_the_build(crates)
        })
        .with_kind("ledger"),
    ];
    if RuntimeName::Device(island_runtime::Backend::Vulkan).built() {
        trials.push(
            Trial::ignorable_test("ledger::committed_vulkan_records_are_current", move || {
                committed_records_are_current(crates)
            })
            .with_kind("ledger"),
        );
    }
    trials
}

/// Every committed record of `crates`, for every device it names, against the code this build
/// generates for that device's profile: a record whose arm, `default` or emulation changed is
/// stale (launches no longer take it), and so is one whose arm is no longer registered. A
/// record of a code generator this build lacks (SPIR-V without the `spirv` feature) is an
/// error too: CI builds every generator.
fn every_record_hashes_as_the_build(crates: &[&str]) -> Result<(), Failed> {
    let cpu = cpu()?;
    let records = embedded::records().map_err(|e| e.to_string())?;
    let ours: Vec<&Record> = records
        .iter()
        .filter(|r| {
            crates.is_empty() || crates.iter().any(|k| r.island.starts_with(&format!("{}::", k.replace('-', "_"))))
        })
        .collect();
    let mut problems = Vec::new();
    for r in &ours {
        let Some(entry) = registry::arms().iter().copied().find(|e| e.site.id == r.island && e.label() == r.arm) else {
            problems.push(format!("{} `{}` on {}: no registered arm of that name", r.island, r.arm, r.device));
            continue;
        };
        if let Some(why) = island_runtime::staleness::arm(entry, r, &cpu) {
            problems.push(format!("{} `{}` on {}: {why}", r.island, r.arm, r.device));
        }
    }
    if ours.is_empty()
        && !crates.is_empty()
        && registry::arms().iter().any(|e| crates.contains(&e.krate) && e.expect == island_runtime::Expect::Equal)
    {
        eprintln!("islands: no committed record names an island of {crates:?}");
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {} committed records are stale (re-gate them on their device):\n{}",
            problems.len(),
            ours.len(),
            problems.join("\n")
        )
        .into())
    }
}

/// The committed records of the present Vulkan device: their code hashes are the build's, and
/// re-running the bit-exact half gives the same verdicts. Timings are not compared (a shared
/// 2-core machine's timings are noise). Ignored, with the reason, when no record names this
/// exact device (another machine's lavapipe names another LLVM or vector width).
fn committed_records_are_current(crates: &[&str]) -> Result<Completion, Failed> {
    let device = RuntimeName::Device(island_runtime::Backend::Vulkan).client()?;
    let cpu = cpu()?;
    let here = island_runtime::Device::of(&device).fingerprint.clone().ok_or("the Vulkan device has no fingerprint")?;
    let ours = |island: &str| registry::arms().iter().any(|e| e.site.id == island && crates.contains(&e.krate));
    let records: Vec<Record> = embedded::records()
        .map_err(|e| e.to_string())?
        .iter()
        .filter(|r| r.device == here && ours(&r.island))
        .cloned()
        .collect();
    if records.is_empty() {
        return Ok(Completion::ignored_with(format!("no committed record names {here}")));
    }
    // Each arm the device selects is gated once, then held against its record.
    let options = GateOptions { speed: false, ..GateOptions::default() };
    let mut problems = Vec::new();
    let mut matched = vec![false; records.len()];
    for entry in registry::arms().iter().filter(|e| crates.contains(&e.krate)) {
        let Some(now) = gate::gate(entry, &device, &cpu, &options) else { continue };
        let Some(i) = records.iter().position(|r| r.island == now.island && r.arm == now.arm) else {
            problems.push(format!("{} `{}`: selected on this device, but has no record", now.island, now.arm));
            continue;
        };
        matched[i] = true;
        let r = &records[i];
        if let Some((what, then, hash)) = r.code.changed(&now.code) {
            problems
                .push(format!("{} `{}`: {what} changed since the record (hash {then}, now {hash})", r.island, r.arm));
        }
        if now.proof.verdict != r.proof.verdict
            || now.conformance.verdict != r.conformance.verdict
            || now.conformance.instructions != r.conformance.instructions
        {
            problems.push(format!(
                "{} `{}`: recorded proof {}, conformance {} {:?}; now {}, {} {:?}",
                r.island,
                r.arm,
                r.proof.verdict,
                r.conformance.verdict,
                r.conformance.instructions,
                now.proof.verdict,
                now.conformance.verdict,
                now.conformance.instructions
            ));
        }
    }
    for (r, _) in records.iter().zip(&matched).filter(|(_, m)| !**m) {
        problems.push(format!(
            "{} `{}`: recorded, but no registered arm of that name is selected on this device",
            r.island, r.arm
        ));
    }
    if problems.is_empty() {
        Ok(Completion::Completed)
    } else {
        Err(format!(
            "{} records of {here} are not current (re-run `islands gate --runtime vulkan`):\n{}",
            problems.len(),
            problems.join("\n")
        )
        .into())
    }
}
