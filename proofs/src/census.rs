//! The census: how much the suite checks, against the counts committed beside it.
//!
//! A proof that silently disappears (an arm no longer registered, a guard that stopped admitting
//! a reference profile, a device that stopped selecting an arm, lavapipe reporting another
//! subgroup width) leaves every remaining trial green. The census counts what the harness will
//! run and compares it with `census.json`; a change fails until the file is updated with it
//! (`ISLANDS_CENSUS=write`), so it is reviewed like any other diff. It counts verdicts too, not
//! only runs: an arm that stops being proven and starts being "device evidence only", or a
//! conformance run that turns from proven to declined, changes the census. The verdicts are those
//! the other trials of the same process reached; the census trial runs after them, and compares
//! verdicts only when every arm's proof (and every conformance run) ran in the process.

use island_runtime::ArmEntry;
use island_runtime::proof::profiles_for;
use island_runtime::proof_run::ProofRun;
use island_runtime::runtimes::RuntimeName;
use island_runtime::{Expect, registry};
use libtest_mimic::{Failed, Trial};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;

/// What the suite runs, per crate, and on the reference device of conformance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Census {
    pub crates: BTreeMap<String, CrateCensus>,
    /// Conformance on lavapipe, the CPU Vulkan driver CI has: its subgroup width and the arms
    /// it runs. Absent when the build has no `vulkan` runtime or the device is not lavapipe.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lavapipe: Option<DeviceCensus>,
    /// The same through WGSL (the `webgpu` runtime on lavapipe).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lavapipe_wgsl: Option<DeviceCensus>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrateCensus {
    /// Registered arms that must equal `default`.
    pub arms: usize,
    /// Proof runs of those arms: one per reference profile each admits.
    pub profile_runs: usize,
    /// Negative fixtures whose CPU proof must catch the bug.
    pub fixtures: usize,
    /// Negative fixtures of a native lowering, for device conformance to catch.
    pub native_fixtures: usize,
    /// Canaries of a `default` a contracting compiler changes, for device conformance of
    /// defaults to catch.
    #[serde(default)]
    pub default_canaries: usize,
    /// How many proof runs of this crate's arms (fixtures included) reached each verdict.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verdicts: BTreeMap<String, usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCensus {
    pub plane: u32,
    /// Arms (and native fixtures) the device selects, each one conformance run.
    pub conformance_runs: usize,
    /// How many of those runs reached each verdict.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verdicts: BTreeMap<String, usize>,
}

/// The trial kind of the census, which [`crate::trials::run`] schedules after every other.
pub const KIND: &str = "census";

/// The scope conformance verdicts on `runtime` are recorded under.
pub fn conformance_scope(runtime: RuntimeName) -> String {
    format!("conformance::{runtime}")
}

/// Verdicts reached in this process: per scope (a crate, or a runtime's [`conformance_scope`]),
/// the arms that ran and how many runs reached each verdict.
type Verdicts = (BTreeSet<String>, BTreeMap<String, usize>);
static RECORDED: Mutex<BTreeMap<String, Verdicts>> = Mutex::new(BTreeMap::new());

/// Records the verdicts of `entry`'s runs under `scope`.
pub fn record(scope: &str, entry: &ArmEntry, runs: &[ProofRun]) {
    let mut recorded = RECORDED.lock().unwrap_or_else(|e| e.into_inner());
    let (arms, verdicts) = recorded.entry(scope.to_string()).or_default();
    arms.insert(entry.name());
    for run in runs {
        *verdicts.entry(run.verdict_word().to_string()).or_default() += 1;
    }
}

/// The verdicts recorded under `scope`, if every one of `arms` ran there.
fn verdicts_of(scope: &str, arms: &BTreeSet<String>) -> Option<BTreeMap<String, usize>> {
    let recorded = RECORDED.lock().unwrap_or_else(|e| e.into_inner());
    let (ran, verdicts) = recorded.get(scope)?;
    arms.is_subset(ran).then(|| verdicts.clone())
}

/// Why the census could not count.
#[derive(Debug, thiserror::Error)]
pub enum CensusError {
    #[error(transparent)]
    Client(#[from] island_runtime::runtimes::ClientError),
    #[error("the Vulkan device has no profile")]
    NoProfile,
}

/// Counts what the harness runs for `crates`.
pub fn count(crates: &[&str]) -> Result<Census, CensusError> {
    let mut census = Census::default();
    for &krate in crates {
        let mut c = CrateCensus::default();
        for entry in registry::arms_of(krate) {
            match entry.expect {
                Expect::Equal => {
                    c.arms += 1;
                    c.profile_runs += profiles_for(entry).len();
                }
                Expect::Mismatch => c.fixtures += 1,
                Expect::NativeMismatch => c.native_fixtures += 1,
                Expect::DefaultMismatch => c.default_canaries += 1,
            }
        }
        let arms: BTreeSet<String> = registry::arms_of(krate).iter().map(|e| e.name()).collect();
        c.verdicts = verdicts_of(krate, &arms).unwrap_or_default();
        census.crates.insert(krate.to_string(), c);
    }
    census.lavapipe = on_lavapipe(RuntimeName::Device(island_runtime::Backend::Vulkan), crates)?;
    census.lavapipe_wgsl = on_lavapipe(RuntimeName::Device(island_runtime::Backend::WebGpu), crates)?;
    Ok(census)
}

/// Conformance on `runtime`, where this build has it and its device is lavapipe.
fn on_lavapipe(runtime: RuntimeName, crates: &[&str]) -> Result<Option<DeviceCensus>, CensusError> {
    if !runtime.built() {
        return Ok(None);
    }
    let device = runtime.client()?;
    let profile = island_runtime::device::profile(&device).ok_or(CensusError::NoProfile)?;
    if !profile.name.contains("llvmpipe") {
        return Ok(None);
    }
    let selected: BTreeSet<String> = registry::arms()
        .iter()
        .filter(|e| {
            crates.contains(&e.krate)
                && e.expect != Expect::Mismatch
                && island_runtime::tag::registry::selects(e, &profile)
        })
        .map(|e| e.name())
        .collect();
    let verdicts = verdicts_of(&conformance_scope(runtime), &selected).unwrap_or_default();
    Ok(Some(DeviceCensus { plane: profile.plane, conformance_runs: selected.len(), verdicts }))
}

/// The census trial: `file` holds the committed counts.
pub fn trial(file: PathBuf, crates: &'static [&'static str]) -> Trial {
    Trial::test("census::what_the_suite_runs", move || {
        let now = count(crates).map_err(Failed::from)?;
        let text = serde_json::to_string_pretty(&now).expect("a census serialises") + "\n";
        if island_runtime::settings::census_write()? {
            std::fs::write(&file, &text).map_err(|e| format!("{}: {e}", file.display()))?;
            return Ok(());
        }
        let committed: Census = std::fs::read_to_string(&file)
            .map_err(|e| format!("{}: {e}", file.display()))
            .and_then(|s| serde_json::from_str(&s).map_err(|e| format!("{}: {e}", file.display())))?;
        // Without lavapipe in this build its counts cannot be checked here, and are not compared;
        // verdicts of a scope whose trials did not all run (a filter) are not compared either.
        let mut expected = committed.clone();
        if now.lavapipe.is_none() {
            expected.lavapipe = None;
        }
        if now.lavapipe_wgsl.is_none() {
            expected.lavapipe_wgsl = None;
        }
        for (krate, c) in &now.crates {
            if c.verdicts.is_empty()
                && let Some(e) = expected.crates.get_mut(krate)
            {
                e.verdicts.clear();
            }
        }
        for (now, e) in [(&now.lavapipe, &mut expected.lavapipe), (&now.lavapipe_wgsl, &mut expected.lavapipe_wgsl)] {
            if let (Some(now), Some(e)) = (now, e.as_mut())
                && now.verdicts.is_empty()
            {
                e.verdicts.clear();
            }
        }
        if expected == now {
            Ok(())
        } else {
            Err(format!(
                "the suite no longer runs what {} says.\ncommitted:\n{}\nnow:\n{text}\
                 If the change is intended, update the file (ISLANDS_CENSUS=write) and review its diff.",
                file.display(),
                serde_json::to_string_pretty(&committed).unwrap_or_default()
            )
            .into())
        }
    })
    .with_kind(KIND)
}
