//! Device conformance: on each real device this build can open, every arm the device's profile
//! selects runs natively there and emulated on the CPU, and the two must agree under the arm's
//! contract. That is what makes a CPU proof of an emulated arm a statement about the device.
//! And every island's `default` runs on the device and on the CPU, byte for byte: the CPU proof
//! compares arms with the CPU's `default`, which is only the device's if the device's compiler
//! keeps `default`'s order and rounding.

use crate::settings::cpu;
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::{Failed, Trial};

/// One trial per registered arm the device of `runtime` selects. When the device cannot be
/// opened, one failing trial says why: a conformance run that silently checks nothing would
/// read as a pass.
pub fn trials(runtime: RuntimeName, crates: &[&str]) -> Vec<Trial> {
    let device = match runtime.client() {
        Ok(c) => c,
        Err(e) => {
            return vec![
                Trial::test(format!("conformance::{runtime}::device"), move || Err(e.into())).with_kind("conformance"),
            ];
        }
    };
    let Some(profile) = island_runtime::device::profile(&device) else {
        let name = device.name();
        return vec![
            Trial::test(format!("conformance::{runtime}::device"), move || {
                Err(format!("`{name}` is not a device islands has arms for").into())
            })
            .with_kind("conformance"),
        ];
    };
    let options = match crate::settings::options() {
        Ok(o) => o,
        Err(trials) => return trials,
    };
    let mut trials = vec![
        Trial::test(format!("conformance::{runtime}::device::{}", crates.join("+")), move || {
            println!("{profile}");
            Ok(())
        })
        .with_kind("conformance"),
    ];
    // Each island's `default` on the device against the CPU's, once per island.
    for entry in registry::islands() {
        if !crates.is_empty() && !crates.contains(&entry.krate) {
            continue;
        }
        let device = device.clone();
        let options = options.clone();
        trials.push(
            Trial::ignorable_test(format!("conformance::{runtime}::default::{}", entry.site.id), move || {
                let host = cpu()?;
                match island_runtime::conformance::defaults(entry, &device, &host, &options) {
                    // A kernel the device is known to crash on, or whose types it lacks, is not
                    // launched: said, not passed.
                    Some(run) if matches!(&run.verdict, island_runtime::proof_run::Verdict::Unproven { reason } if reason.contains(island_runtime::lowering::NOT_LAUNCHED)) => {
                        Ok(libtest_mimic::Completion::ignored_with(run.detail().unwrap_or_default().to_string()))
                    }
                    Some(run) => crate::verdict::verdict(entry, &[run]),
                    None => Err::<_, Failed>("the island has no proof signature to run".into()),
                }
            })
            .with_kind("conformance"),
        );
    }
    // A known divergence declines only the differences it was measured on: a planted wrong
    // native lowering, which differs on realistic values, must still fail when a record of
    // the device names its island for the subnormal group alone.
    if let Some(&fixture) = registry::arms().iter().find(|e| {
        e.expect == island_runtime::Expect::NativeMismatch && island_runtime::tag::registry::selects(e, &profile)
    }) {
        let device = device.clone();
        let options = options.clone();
        trials.push(
            Trial::test(format!("conformance::{runtime}::divergence_scope"), move || {
                divergence_scope(fixture, &device, &options)
            })
            .with_kind("conformance"),
        );
    }
    for &entry in registry::arms() {
        let wanted = crates.is_empty() || crates.contains(&entry.krate);
        // Fixtures of a wrong arm are wrong in their emulation too: only a wrong native
        // lowering (`expect_native_mismatch`) is for conformance to catch.
        if !wanted
            || !island_runtime::tag::registry::selects(entry, &profile)
            || entry.expect == island_runtime::Expect::Mismatch
        {
            continue;
        }
        let device = device.clone();
        let options = options.clone();
        trials.push(
            Trial::ignorable_test(format!("conformance::{runtime}::{}", entry.name()), move || {
                let host = cpu()?;
                match island_runtime::conformance::conform(entry, &device, &host, &options) {
                    Some(run) => {
                        crate::census::record(
                            &crate::census::conformance_scope(runtime),
                            entry,
                            std::slice::from_ref(&run),
                        );
                        crate::verdict::verdict(entry, &[run])
                    }
                    None => Err::<_, Failed>("the arm has no proof signature to run".into()),
                }
            })
            .with_kind(if entry.expect == island_runtime::Expect::Equal {
                "conformance"
            } else {
                "negative"
            }),
        );
    }
    trials
}

fn divergence_scope(
    fixture: &'static island_runtime::registry::ArmEntry,
    device: &cubecl::prelude::Client,
    options: &island_runtime::proof_run::ProofOptions,
) -> Result<(), Failed> {
    use island_runtime::divergence::{Divergence, Of};
    use island_runtime::inputs::Group;
    use island_runtime::proof_run::Verdict;
    use island_runtime::quirks::Quirk;
    let host = cpu()?;
    let run = island_runtime::conformance::conform(fixture, device, &host, options)
        .ok_or("the fixture has no proof signature")?;
    let Verdict::Mismatch { cubes, .. } = &run.verdict else {
        return Err(format!(
            "the fixture `{}` was expected to differ natively: {}",
            fixture.name(),
            run.verdict_word()
        )
        .into());
    };
    if !cubes.keys().any(|held| held.contains(&Group::Realistic)) {
        return Err(format!("the fixture differs only in {cubes:?}, not on realistic values").into());
    }
    let quirk = |groups: &'static [Group]| -> &'static Quirk {
        Box::leak(Box::new(Quirk {
            on: &[(island_runtime::Backend::Vulkan, "")],
            groups,
            cause: "a test record",
            measured: "-",
        }))
    };
    let record = |groups: &'static [Group]| Divergence { of: Of::Native, quirk: quirk(groups), islands: &[] };
    let narrow =
        island_runtime::conformance::within_divergence(run.verdict.clone(), Some(&record(&[Group::Subnormals])), "");
    match &narrow {
        Verdict::Mismatch { report, .. } if report.contains("differ outside them") => {}
        other => {
            return Err(
                format!("a record of the subnormal group alone covered a realistic-value mismatch: {other:?}").into()
            );
        }
    }
    match island_runtime::conformance::within_divergence(run.verdict, Some(&record(Group::FLOAT)), "") {
        Verdict::Declined { .. } => Ok(()),
        other => Err(format!("a record of every group did not decline the mismatch: {other:?}").into()),
    }
}
