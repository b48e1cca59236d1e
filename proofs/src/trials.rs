//! The trials of a harness, and how they run: one per registered arm, the registry checks,
//! conformance on each device runtime, and the order of their phases.

use crate::settings::{conformance_runtimes, cpu, environment_trials, options};
use crate::verdict::verdict;
use crate::{cells, census, conformance, gating, independence, ledger, lowering, registry_scan, saturation};
use island_runtime::ArmEntry;
use island_runtime::proof;
use island_runtime::proof_run::ProofOptions;
use island_runtime::registry;
use libtest_mimic::{Arguments, Completion, Failed, Trial};

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
                .map(|(d, i)| format!("{i} ({:?} on {:?})", d.of, d.quirk.on))
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
    trials.extend(environment_trials());
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
    // Gates (`ISLANDS_GATE`) run after the rest, alone, so that nothing disturbs their timings.
    // Among them the engine through WGSL on lavapipe (every kernel translated by naga, 269 s) is
    // the longest by far: it starts first, so that the others run beside it on the second
    // thread rather than before it (the phase took 371 s in name order, 2-core x86-64,
    // 2026-12-07).
    let (mut first, rest): (Vec<Trial>, Vec<Trial>) = trials.into_iter().partition(|t| t.kind() == MODEL);
    first.sort_by_key(|t| !t.name().contains("webgpu"));
    let (last, rest): (Vec<Trial>, Vec<Trial>) = rest.into_iter().partition(|t| t.kind() == census::KIND);
    let (gates, rest): (Vec<Trial>, Vec<Trial>) = rest.into_iter().partition(|t| t.kind() == gating::KIND);
    let mut conclusions = Vec::new();
    for phase in [first, rest, gates, last] {
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

/// The harness of a crate with islands: the proofs of its arms, its registry check, the
/// lowering check of its arms and intrinsics, their conformance on every device runtime the
/// build has, whether its committed ledger records of the present Vulkan device still hold, the
/// trials of its cells (`cells`), and where `ISLANDS_GATE` names runtimes, the gate of its arms
/// there into its ledger (`gating`).
pub fn main(krate: &'static str, sources: String) -> ! {
    let crates: &'static [&'static str] = Box::leak(Box::new([krate]));
    let mut trials = proof_trials(crates);
    trials.extend(ledger::trials(crates));
    trials.extend(registry_trials(&[(krate, sources)]));
    trials.extend(saturation::trials(crates));
    trials.extend(lowering::trials(&[krate]));
    trials.extend(conformance_trials(&[krate]));
    trials.extend(cells::trials(crates));
    trials.extend(gating::trials(krate));
    run(trials)
}
