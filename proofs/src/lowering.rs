//! Lowering checks, without a GPU: every row of the intrinsic table, and every registered arm,
//! compiled with its backend's code generator.

use crate::cpu;
use island_runtime::intrinsic::{self, Intrinsic, Lowering};
use island_runtime::lowering::{self, Codegen, Which};
use island_runtime::proof::ProofSpec;
use island_runtime::registry::{self, ArmEntry};
use island_runtime::{Backend, Profile};
use libtest_mimic::{Failed, Trial};

/// One trial per row of the intrinsic table and per (registered arm, backend of the arm), for
/// the crates named (every crate when `crates` is empty).
pub fn trials(crates: &[&str]) -> Vec<Trial> {
    let mut trials = Vec::new();
    let wanted = |krate: &str| crates.is_empty() || crates.contains(&krate);
    for &i in intrinsic::intrinsics().iter().filter(|i| wanted(i.krate)) {
        for row in i.lowerings {
            let name = format!("lowering::{}::{}", i.name, row.backend);
            trials.push(trial(name, Codegen::of(row.backend), move || table_row(i, row)));
        }
    }
    // Negative fixtures are planted bugs, not arms anyone lowers.
    for &entry in registry::arms().iter().filter(|e| e.expect == island_runtime::Expect::Equal && wanted(e.krate)) {
        for &backend in entry.spec().backends {
            let name = format!("lowering::{}@{}", entry.name(), backend);
            trials.push(trial(name, Codegen::of(backend), move || arm(entry, backend)));
        }
    }
    trials.push(
        Trial::test("lowering::intrinsic_names_are_unique", || {
            let dup = intrinsic::duplicates();
            if dup.is_empty() { Ok(()) } else { Err(format!("intrinsics registered twice: {dup:?}").into()) }
        })
        .with_kind("lowering"),
    );
    trials
}

fn trial(name: String, codegen: Codegen, f: impl FnOnce() -> Result<(), Failed> + Send + 'static) -> Trial {
    if codegen.available() {
        Trial::test(name, f).with_kind("lowering")
    } else {
        Trial::test(name, || Ok(()))
            .with_kind("lowering")
            .with_ignored_flag(true)
    }
}

/// A reference profile of `backend` that `entry`'s guard (and `row`'s, if any) admits.
fn profile_for(entry: &ArmEntry, backend: Backend, row: Option<&Lowering>) -> Option<Profile> {
    Profile::references(backend)
        .into_iter()
        .find(|p| entry.spec().guard.holds(p) && row.is_none_or(|r| r.requires.holds(p)))
}

fn sources(entry: &'static ArmEntry, profile: &Profile) -> Result<(String, String), Failed> {
    let ProofSpec::Lifted(lifted) = &entry.proof else {
        return Err(format!("{} has no proof signature, so it cannot be compiled on its own", entry.name()).into());
    };
    let host = cpu()?;
    let arm = lowering::source(entry, lifted, profile, Which::Arm, &host)?;
    let default = lowering::source(entry, lifted, profile, Which::Default, &host)?;
    Ok((arm, default))
}

/// The intrinsic's check arm, compiled for the row's backend, emits the row's instruction, and
/// `default` does not.
fn table_row(i: &'static Intrinsic, row: &'static Lowering) -> Result<(), Failed> {
    let entry = i
        .check_arms()
        .into_iter()
        .find(|e| e.spec().backends.contains(&row.backend))
        .ok_or_else(|| format!("{}: its check `{}` has no arm for {}", i.name, (i.check)(), row.backend))?;
    let profile = profile_for(entry, row.backend, Some(row))
        .ok_or_else(|| format!("{}: no reference {} device meets the check's guard", i.name, row.backend))?;
    let (arm, default) = sources(entry, &profile)?;
    let codegen = Codegen::of(row.backend).name();
    if !arm.contains(row.instruction) {
        return Err(format!(
            "{} did not generate `{}` for {profile} ({codegen}); the arm compiled to:\n{}",
            i.name,
            row.instruction,
            excerpt(&arm)
        )
        .into());
    }
    if default.contains(row.instruction) {
        return Err(format!("`{}` appears in `default`'s {codegen} too: the arm leaves a trace", row.instruction).into());
    }
    Ok(())
}

/// A registered arm, compiled for one of its backends: it emits at least one instruction of the
/// table for that backend, and none of those appears in `default`.
fn arm(entry: &'static ArmEntry, backend: Backend) -> Result<(), Failed> {
    let Some(profile) = profile_for(entry, backend, None) else {
        return Err(format!("no reference {backend} device meets the guard `{}`", entry.spec().guard).into());
    };
    let (arm, default) = sources(entry, &profile)?;
    if arm == default {
        return Err(format!("the arm and `default` compile to the same {} source", Codegen::of(backend).name()).into());
    }
    let table = intrinsic::instructions(backend);
    let emitted: Vec<&str> = table.iter().copied().filter(|p| arm.contains(p)).collect();
    if emitted.is_empty() {
        return Err(format!(
            "the arm emits none of the table's {backend} instructions {table:?}; it compiled to:\n{}",
            excerpt(&arm)
        )
        .into());
    }
    let leaked: Vec<&str> = emitted.iter().copied().filter(|p| default.contains(p)).collect();
    if !leaked.is_empty() {
        return Err(format!("{leaked:?} also appear in `default`: the arm leaves a trace").into());
    }
    Ok(())
}

fn excerpt(source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let tail = lines.len().saturating_sub(40);
    lines[tail..].join("\n")
}
