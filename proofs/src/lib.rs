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
//!
//! and, in that target's file, a `use` of the crate (so that its registrations are linked) and
//! [`harness!`]: `examples/vendor-byteperm/tests/islands.rs` is one, built by `cargo test`.

pub mod cells;
pub mod census;
pub mod conformance;
pub mod independence;
pub mod ledger;
pub mod lowering;
pub mod registry_scan;
pub mod saturation;

use island_runtime::ArmEntry;
use island_runtime::proof;
use island_runtime::proof_run::{ProofOptions, ProofRun, Verdict};
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::sync::{Arc, OnceLock};

/// The CPU client every proof runs on, opened once.
pub fn cpu() -> Result<cubecl::prelude::Client, String> {
    static CLIENT: OnceLock<Result<cubecl::prelude::Client, String>> = OnceLock::new();
    CLIENT.get_or_init(|| RuntimeName::Cpu.client().map_err(|e| e.to_string())).clone()
}

/// Whether an unproven arm is reported as an ignored trial (`ISLANDS_ALLOW_UNPROVEN=1`) rather
/// than a failure. Any other value than `0` or `1` is an error.
fn allow_unproven() -> Result<bool, String> {
    match std::env::var("ISLANDS_ALLOW_UNPROVEN").as_deref() {
        Err(_) | Ok("") | Ok("0") => Ok(false),
        Ok("1") => Ok(true),
        Ok(other) => Err(format!("ISLANDS_ALLOW_UNPROVEN=`{other}`: expected 0 or 1")),
    }
}

/// The proof settings of this process (`ISLANDS_SEED`, `ISLANDS_LANES`, `ISLANDS_DEPTH`), or
/// one failing trial that says which value is wrong.
pub fn options() -> Result<Arc<ProofOptions>, Vec<Trial>> {
    ProofOptions::from_env()
        .map(Arc::new)
        .map_err(|e| vec![Trial::test("environment::proof_settings", move || Err(e.into())).with_kind("environment")])
}

/// One trial per registered arm of the crates named (every crate when `crates` is empty).
pub fn proof_trials(crates: &[&str]) -> Vec<Trial> {
    let options = match options() {
        Ok(o) => o,
        Err(trials) => return trials,
    };
    eprintln!("islands: proof seed {:#x}, depth {} (ISLANDS_SEED, ISLANDS_DEPTH)", options.seed, options.depth);
    registry::arms()
        .iter()
        .filter(|e| crates.is_empty() || crates.contains(&e.krate))
        .map(|&entry| {
            let options = options.clone();
            let kind = if entry.expect == island_runtime::Expect::Equal { "proof" } else { "negative" };
            Trial::ignorable_test(entry.name(), move || prove_trial(entry, &options)).with_kind(kind)
        })
        .collect()
}

fn prove_trial(entry: &'static ArmEntry, options: &ProofOptions) -> Result<Completion, Failed> {
    let client = cpu().map_err(Failed::from)?;
    let runs = proof::prove(entry, &client, options);
    census::record(entry.krate, entry, &runs);
    verdict(entry, &runs)
}

/// What every mismatch report names: island, arm, the runtimes that executed, the first
/// differing index, both values in hex, the seed.
pub const REPORT_FIELDS: &[&str] = &["island `", "arm `", "executed on: ", "first differing index", " = 0x", "seed 0x"];

/// Turns the runs of one arm into a test result: every run must meet its expectation. A run
/// that compared nothing is never a pass: unproven runs fail (or, with
/// `ISLANDS_ALLOW_UNPROVEN=1`, make the trial ignored with their reason), and an arm that is the
/// same program as `default` on the CPU is ignored as "device evidence only".
pub fn verdict(entry: &ArmEntry, runs: &[ProofRun]) -> Result<Completion, Failed> {
    let allow_unproven = allow_unproven()?;
    let mut failures = Vec::new();
    let mut ignored = Vec::new();
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
        match &run.verdict {
            Verdict::Unproven { reason } if allow_unproven => {
                ignored.push(format!("unproven on {}: {reason}", run.profile));
                continue;
            }
            Verdict::DeviceEvidenceOnly { reason } => {
                ignored.push(format!("device evidence only: {reason}"));
                continue;
            }
            Verdict::Declined { report } => {
                ignored.push(report.lines().take(2).collect::<Vec<_>>().join(" "));
                continue;
            }
            _ => {}
        }
        let detail = run.detail().unwrap_or("the negative fixture was proven equal: the proof cannot fail");
        failures.push(format!("[{}] {} on `{}`:\n{detail}", run.verdict_word(), run.profile, run.executed_on));
    }
    if !failures.is_empty() {
        Err(format!("{} at {}\n{}", entry.name(), entry.location(), failures.join("\n\n")).into())
    } else if !ignored.is_empty() {
        Ok(Completion::ignored_with(ignored.join("; ")))
    } else {
        Ok(Completion::Completed)
    }
}

/// The registry checks: no name registered twice, and every arm written in `sources` (a
/// crate's `src/` folder) is registered, so a linker dropping a registration cannot go
/// unnoticed.
pub fn registry_trials(sources: &[(&'static str, String)]) -> Vec<Trial> {
    let mut trials = vec![
        Trial::test("registry::unique_names", || {
            let dup = registry::duplicates();
            if dup.is_empty() { Ok(()) } else { Err(format!("registered more than once: {dup:?}").into()) }
        })
        .with_kind("registry"),
        Trial::test("registry::divergences_name_registered_islands", || {
            // A record whose island id no longer exists (a renamed or moved island) would stop
            // declining it on its device without a word.
            let ids: std::collections::BTreeSet<&str> = registry::arms().iter().map(|a| a.site.id).collect();
            let stale: Vec<String> = island_runtime::divergence::all()
                .flat_map(|d| d.islands.iter().map(move |i| (d, *i)))
                .filter(|(_, i)| !ids.contains(i))
                .map(|(d, i)| format!("{i} ({:?} on {})", d.of, d.quirk.device))
                .collect();
            let count = island_runtime::divergence::all().count();
            if count == 0 {
                Err("no divergence is registered: the crates that submit them are not linked".into())
            } else if stale.is_empty() {
                Ok(())
            } else {
                Err(format!("divergences name islands that are not registered: {}", stale.join(", ")).into())
            }
        })
        .with_kind("registry"),
    ];
    for (krate, dir) in sources {
        let (krate, dir) = (*krate, dir.clone());
        let (scanned, for_intrinsics) = (dir.clone(), dir.clone());
        trials.push(
            Trial::test(format!("registry::{krate}::defaults_are_independent_of_emulation"), move || {
                let found = independence::violations(std::path::Path::new(&scanned)).map_err(Failed::from)?;
                if found.is_empty() { Ok(()) } else { Err(found.join("\n").into()) }
            })
            .with_kind("registry"),
        );
        trials.push(
            Trial::test(format!("registry::{krate}::every_written_arm_is_registered"), move || {
                let written = registry_scan::count_arms(std::path::Path::new(&dir)).map_err(Failed::from)?;
                let registered = registry::arms_of(krate).len();
                if written == registered {
                    Ok(())
                } else {
                    Err(format!("{krate}: {written} accelerated arms written in {dir}, {registered} registered").into())
                }
            })
            .with_kind("registry"),
        );
        let scanned = for_intrinsics;
        trials.push(
            Trial::test(format!("registry::{krate}::every_written_intrinsic_is_registered"), move || {
                let written = registry_scan::count_intrinsics(std::path::Path::new(&scanned)).map_err(Failed::from)?;
                let registered = island_runtime::intrinsic::intrinsics().iter().filter(|i| i.krate == krate).count();
                if written == registered {
                    Ok(())
                } else {
                    Err(format!("{krate}: {written} intrinsics registered in {scanned}, {registered} in the table")
                        .into())
                }
            })
            .with_kind("registry"),
        );
    }
    trials
}

/// The device runtimes this build checks conformance on: those its features include
/// (`vulkan`, `cuda`), unless `ISLANDS_CONFORMANCE` lists others (`none` for none). A name that
/// is no runtime is an error, not a runtime silently left out.
pub fn conformance_runtimes() -> Result<Vec<RuntimeName>, String> {
    match std::env::var("ISLANDS_CONFORMANCE") {
        Ok(list) if list.trim() == "none" => Ok(Vec::new()),
        Ok(list) => list
            .split(',')
            .map(|s| {
                RuntimeName::parse(s.trim()).filter(|r| *r != RuntimeName::Cpu).ok_or_else(|| {
                    format!(
                        "ISLANDS_CONFORMANCE names `{}`, which is no device runtime ({} or none)",
                        s.trim(),
                        RuntimeName::devices()
                    )
                })
            })
            .collect(),
        Err(_) => Ok([
            RuntimeName::Device(island_runtime::Backend::Vulkan),
            RuntimeName::Device(island_runtime::Backend::Cuda),
        ]
        .into_iter()
        .filter(|r| r.built())
        .collect()),
    }
}

/// The conformance trials of every runtime [`conformance_runtimes`] names, for `crates`.
pub fn conformance_trials(crates: &[&str]) -> Vec<Trial> {
    match conformance_runtimes() {
        Ok(runtimes) => runtimes.into_iter().flat_map(|r| conformance::trials(r, crates)).collect(),
        Err(e) => {
            vec![Trial::test("environment::conformance_runtimes", move || Err(e.into())).with_kind("environment")]
        }
    }
}

/// Runs `trials` with libtest's command line, sorted by name, and exits.
pub fn run(mut trials: Vec<Trial>) -> ! {
    // The SDK's warnings show in test output (`RUST_LOG` sets more); a second logger (the
    // crate's own) is left in place.
    let _ =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).is_test(true).try_init();
    trials.sort_by(|a, b| a.name().cmp(b.name()));
    if let Err(e) = island_runtime::policy::settings() {
        let e = e.to_string();
        trials.push(Trial::test("environment::launch_settings", move || Err(e.into())).with_kind("environment"));
    }
    let args = Arguments::from_args();
    // Whole-model trials (kind `model`) run first, alone. The CPU runtime's pool grows to one
    // worker per unit for the plane proofs' synchronising cubes (up to 128 on two cores) and
    // then spreads every later kernel over all of them: the model trials took 798 s beside
    // and after the proofs, 38 s before them (2-core x86-64, 2026-12-02).
    // The census runs last: it counts the verdicts the other trials reached.
    let (first, rest): (Vec<Trial>, Vec<Trial>) = trials.into_iter().partition(|t| t.kind() == MODEL);
    let (last, rest): (Vec<Trial>, Vec<Trial>) = rest.into_iter().partition(|t| t.kind() == census::KIND);
    let mut conclusions = Vec::new();
    for phase in [first, rest, last] {
        if !phase.is_empty() {
            conclusions.push(libtest_mimic::run(&args, phase));
        }
    }
    match conclusions.iter().position(|c| c.has_failed()) {
        Some(i) => conclusions.swap_remove(i).exit(),
        None => conclusions.pop().map_or_else(|| std::process::exit(0), |c| c.exit()),
    }
}

/// The trial kind that [`run`] schedules before every other: trials that run a whole model.
pub const MODEL: &str = "model";

/// The `main` of a crate's proofs test target (`harness = false`): [`main`] for the calling
/// crate's package and its `src/`. A test target is two lines, a `use` of the crate (so that
/// its registrations are linked) and `islands::proofs::harness!();`: see
/// `examples/vendor-byteperm/tests/islands.rs`, which `cargo test` builds.
#[macro_export]
macro_rules! harness {
    () => {
        fn main() {
            $crate::main(
                ::core::env!("CARGO_PKG_NAME"),
                ::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/src").to_string(),
            )
        }
    };
}

/// The harness of a crate with islands: the proofs of its arms, its registry check, the
/// lowering check of its arms and intrinsics, their conformance on every device runtime the
/// build has, whether its committed ledger records of the present Vulkan device still hold, and
/// the trials of its cells (`cells`).
pub fn main(krate: &'static str, sources: String) -> ! {
    let crates: &'static [&'static str] = Box::leak(Box::new([krate]));
    let mut trials = proof_trials(crates);
    trials.extend(ledger::trials(crates));
    trials.extend(registry_trials(&[(krate, sources)]));
    trials.extend(saturation::trials(crates));
    trials.extend(lowering::trials(&[krate]));
    trials.extend(conformance_trials(&[krate]));
    trials.extend(cells::trials(crates));
    run(trials)
}
