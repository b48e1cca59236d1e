//! Generated proofs: run an island's lifted kernel ([`crate::tag::lifted`]) with its tag forced to an
//! arm and to `default`, on the same seeded inputs, and compare the output bytes
//! ([`crate::verify::report`] renders a mismatch).
//!
//! Inputs: per-lane scalars (`a: i32`) or per-cube slices (`a: &[i8; 256]`, `acc: &mut [i32; 256]`,
//! the latter also compared as an output). Each cube holds one [`Group`] of values: the edge
//! groups of the input's kind first (all −0.0, subnormals, ties, overflow, cancellation, NaNs, …),
//! then `8 · depth` realistic and `2 · depth` wide random groups. The seed is printed with every
//! failure and replays it (`ISLANDS_SEED`).

use crate::tag::lifted::{Lifted, ProofSpec};
use crate::tag::registry::{ArmEntry, selects};
use crate::tag::target::Target;
use crate::verify::compare::{Side, compare_sides, compare_sides_header};
use crate::verify::proof_run::{ProofOptions, ProofRun, Verdict};
use cubecl::prelude::*;
use island_vocab::Profile;
use std::time::Duration;

/// The reference profiles an arm is proven under: every reference profile of each of its
/// backends that selects it (its guard holds and no earlier arm of the island is taken). Empty
/// when none does (reported unproven).
pub fn profiles_for(entry: &ArmEntry) -> Vec<Profile> {
    entry.spec().backends.iter().flat_map(|b| Profile::references(*b)).filter(|p| selects(entry, p)).collect()
}

/// [`profiles_for`], less each profile under which the arm and `default` expand to the same
/// programs as under an earlier one (a proof of the same programs on the same inputs proves
/// nothing new), with the profiles each stands for. Profiles whose programs cannot be expanded
/// are kept, so that the proof reports why.
pub fn distinct_profiles(entry: &'static ArmEntry, client: &Client) -> Vec<(Profile, Vec<Profile>)> {
    let ProofSpec::Lifted(lifted) = &entry.proof else {
        return profiles_for(entry).into_iter().map(|p| (p, vec![])).collect();
    };
    // (profile, the profiles it stands for, its arm's and default's canonical programs)
    type Kept = (Profile, Vec<Profile>, Option<(String, String)>);
    let mut kept: Vec<Kept> = Vec::new();
    for profile in profiles_for(entry) {
        let programs = (|| -> Result<(String, String), crate::codegen::lowering::LoweringError> {
            let emulated = crate::codegen::lowering::source(
                entry,
                lifted,
                &profile,
                crate::codegen::lowering::Which::Emulated,
                client,
            )?;
            let default = crate::codegen::lowering::source(
                entry,
                lifted,
                &profile,
                crate::codegen::lowering::Which::Default,
                client,
            )?;
            Ok((crate::values::canonical::canonical(&emulated), crate::values::canonical::canonical(&default)))
        })()
        .ok();
        match kept.iter_mut().find(|(_, _, p)| programs.is_some() && p == &programs) {
            Some((_, covered, _)) => covered.push(profile),
            None => kept.push((profile, vec![], programs)),
        }
    }
    kept.into_iter().map(|(p, covered, _)| (p, covered)).collect()
}

/// Proves one arm on `client`: one run per reference profile.
pub fn prove(entry: &'static ArmEntry, client: &Client, options: &ProofOptions) -> Vec<ProofRun> {
    let spec = entry.spec();
    let base = |profile: String, verdict: Verdict| ProofRun {
        island: entry.site.id,
        arm: spec.label,
        profile,
        executed_on: crate::hardware::device::runtime_name(client).to_string(),
        lowering: "-",
        contract: "-".into(),
        bit_exact: false,
        inputs: 0,
        seed: format!("{:#x}", options.seed),
        time: Duration::ZERO,
        verdict,
        expect: entry.expect,
    };
    let lifted = match &entry.proof {
        ProofSpec::Lifted(l) => *l,
        ProofSpec::Unprovable(reason) => {
            return vec![base("-".into(), Verdict::Unproven { reason: reason.to_string() })];
        }
    };
    let profiles = distinct_profiles(entry, client);
    if profiles.is_empty() {
        let reason = format!(
            "no reference profile of `{}` selects the arm (its guard `{}` holds for none, or an earlier arm is taken)",
            spec.label, spec.guard
        );
        return vec![base("-".into(), Verdict::Unproven { reason })];
    }
    profiles
        .into_iter()
        .map(|(profile, covered)| {
            let mut run = prove_one(entry, lifted, profile, client, options);
            if !covered.is_empty() {
                let names: Vec<&str> = covered.iter().map(|p| p.name).collect();
                run.profile = format!("{} (same programs as {})", run.profile, names.join(", "));
            }
            run
        })
        .collect()
}

fn prove_one(
    entry: &'static ArmEntry,
    lifted: &'static Lifted,
    profile: Profile,
    client: &Client,
    options: &ProofOptions,
) -> ProofRun {
    let arm = Side { client, target: Target::forced(profile, client).only(entry.site.id), label: "arm" };
    let default = Side { client, target: Target::default_arms(client), label: "default" };
    if !arm.target.is_native() {
        match crate::codegen::lowering::same_program(lifted, arm.target, default.target, client) {
            Ok(true) => {
                let mut run = compare_sides_header(entry, lifted, profile, &arm, &default, options);
                run.verdict = Verdict::DeviceEvidenceOnly {
                    reason: format!(
                        "on `{}` the arm and `default` are the same program (its emulation is the portable code): \
                         comparing them would prove nothing; the native lowering is checked by `islands conform` on a device",
                        crate::hardware::device::runtime_name(client)
                    ),
                };
                return run;
            }
            Ok(false) => {}
            Err(e) => {
                let mut run = compare_sides_header(entry, lifted, profile, &arm, &default, options);
                run.verdict = Verdict::Error { reason: format!("the lifted kernel does not expand: {e}") };
                return run;
            }
        }
    }
    compare_sides(entry, lifted, profile, arm, default, options)
}

/// The proof of `entry`'s arm under one profile (`profile` need not be a reference profile:
/// the gate proves an arm under the present device's own).
pub fn prove_profile(
    entry: &'static ArmEntry,
    profile: Profile,
    client: &Client,
    options: &ProofOptions,
) -> Option<ProofRun> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return None };
    Some(prove_one(entry, lifted, profile, client, options))
}
