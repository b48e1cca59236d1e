//! The proof harness: one named test per registered (island, arm), generated from the
//! registry, on the CPU runtime. No crate writes a test per island.
//!
//! A crate with islands gets its proofs by adding `proofs` as a dev-dependency and one test
//! target with `harness = false` whose `main` is [`main`]:
//!
//! ```toml
//! [[test]]
//! name = "islands"
//! harness = false
//! ```
//! ```ignore
//! // tests/islands.rs
//! use my_kernels as _; // link the crate, so its registrations are seen
//! fn main() {
//!     proofs::main(env!("CARGO_PKG_NAME"), concat!(env!("CARGO_MANIFEST_DIR"), "/src").to_string())
//! }
//! ```

pub mod conformance;
pub mod lowering;
pub mod registry_scan;

use island_runtime::ArmEntry;
use island_runtime::proof::{self, ProofOptions, ProofRun, Verdict};
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::{Arguments, Failed, Trial};
use std::sync::{Arc, OnceLock};

/// The CPU client every proof runs on, opened once.
pub fn cpu() -> Result<cubecl::prelude::Client, String> {
    static CLIENT: OnceLock<Result<cubecl::prelude::Client, String>> = OnceLock::new();
    CLIENT.get_or_init(|| RuntimeName::Cpu.client()).clone()
}

use island_runtime::__private::cubecl;

/// Whether an unproven arm may pass as ignored (`ISLANDS_ALLOW_UNPROVEN=1`) rather than fail.
fn allow_unproven() -> bool {
    std::env::var_os("ISLANDS_ALLOW_UNPROVEN").is_some_and(|v| v == "1")
}

/// One trial per registered arm of the crates named (every crate when `crates` is empty).
pub fn proof_trials(crates: &[&str]) -> Vec<Trial> {
    let options = Arc::new(ProofOptions::default());
    registry::arms()
        .iter()
        .filter(|e| crates.is_empty() || crates.contains(&e.krate))
        .map(|&entry| {
            let options = options.clone();
            let kind = if entry.expect == island_runtime::Expect::Mismatch { "negative" } else { "proof" };
            Trial::test(entry.name(), move || prove_trial(entry, &options)).with_kind(kind)
        })
        .collect()
}

fn prove_trial(entry: &'static ArmEntry, options: &ProofOptions) -> Result<(), Failed> {
    let client = cpu().map_err(Failed::from)?;
    let runs = proof::prove(entry, &client, options);
    verdict(entry, &runs)
}

/// What every mismatch report names: island, arm, the runtime that executed, the first
/// differing index, both values in hex, the seed.
pub const REPORT_FIELDS: &[&str] =
    &["island `", "arm `", "executed on: arm = `", "first differing index", "arm       = 0x", "default   = 0x", "seed 0x"];

/// Turns the runs of one arm into a test result: every run must meet its expectation.
pub fn verdict(entry: &ArmEntry, runs: &[ProofRun]) -> Result<(), Failed> {
    let mut failures = Vec::new();
    for run in runs {
        if run.passed() && run.expect == island_runtime::Expect::Mismatch {
            // A caught bug must also be reported the way a real one would be.
            let report = run.detail().unwrap_or_default();
            let missing: Vec<&str> = REPORT_FIELDS.iter().copied().filter(|f| !report.contains(f)).collect();
            if !missing.is_empty() {
                failures.push(format!("the mismatch report lacks {missing:?}:\n{report}"));
            }
            continue;
        }
        if run.passed() {
            continue;
        }
        if matches!(run.verdict, Verdict::Unproven { .. }) && allow_unproven() {
            continue;
        }
        let detail = run.detail().unwrap_or("the negative fixture was proven equal: the proof cannot fail");
        failures.push(format!("[{}] {} on `{}`:\n{detail}", run.verdict_word(), run.profile, run.executed_on));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} at {}\n{}", entry.name(), entry.location(), failures.join("\n\n")).into())
    }
}

/// The registry checks: no name registered twice, and every arm written in `sources` (a
/// crate's `src/` folder) is registered, so a linker dropping a registration cannot go
/// unnoticed.
pub fn registry_trials(sources: &[(&'static str, String)]) -> Vec<Trial> {
    let mut trials = vec![Trial::test("registry::unique_names", || {
        let dup = registry::duplicates();
        if dup.is_empty() { Ok(()) } else { Err(format!("registered more than once: {dup:?}").into()) }
    })
    .with_kind("registry")];
    for (krate, dir) in sources {
        let (krate, dir) = (*krate, dir.clone());
        trials.push(
            Trial::test(format!("registry::{krate}::every_written_arm_is_registered"), move || {
                let written = registry_scan::count_arms(std::path::Path::new(&dir)).map_err(Failed::from)?;
                let registered = registry::arms_of(krate).len();
                if written == registered {
                    Ok(())
                } else {
                    Err(format!(
                        "{krate}: {written} accelerated arms written in {dir}, {registered} registered"
                    )
                    .into())
                }
            })
            .with_kind("registry"),
        );
    }
    trials
}

/// The device runtimes this build checks conformance on: those its features include
/// (`vulkan`, `cuda`), unless `ISLANDS_CONFORMANCE` lists others (`none` for none).
pub fn conformance_runtimes() -> Vec<RuntimeName> {
    match std::env::var("ISLANDS_CONFORMANCE") {
        Ok(list) => list.split(',').filter_map(|s| RuntimeName::parse(s.trim())).collect(),
        Err(_) => [RuntimeName::Vulkan, RuntimeName::Cuda].into_iter().filter(|r| r.built()).collect(),
    }
}

/// Runs `trials` with libtest's command line, sorted by name, and exits.
pub fn run(mut trials: Vec<Trial>) -> ! {
    trials.sort_by(|a, b| a.name().cmp(b.name()));
    let args = Arguments::from_args();
    libtest_mimic::run(&args, trials).exit()
}

/// The harness of a crate with islands: the proofs of its arms, its registry check, the
/// lowering check of its arms and intrinsics, and their conformance on every device runtime
/// the build has.
pub fn main(krate: &'static str, sources: String) -> ! {
    let mut trials = proof_trials(&[krate]);
    trials.extend(registry_trials(&[(krate, sources)]));
    trials.extend(lowering::trials(&[krate]));
    for runtime in conformance_runtimes() {
        trials.extend(conformance::trials(runtime, &[krate]));
    }
    run(trials)
}
