//! Device conformance: on each real device this build can open, every arm the device's profile
//! selects runs natively there and emulated on the CPU, and the two must agree under the arm's
//! contract. That is what makes a CPU proof of an emulated arm a statement about the device.
//! And every island's `default` runs on the device and on the CPU, byte for byte: the CPU proof
//! compares arms with the CPU's `default`, which is only the device's if the device's compiler
//! keeps `default`'s order and rounding.

use crate::cpu;
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
            return vec![Trial::test(format!("conformance::{runtime}::device"), move || Err(e.into())).with_kind("conformance")];
        }
    };
    let Some(profile) = island_runtime::device::profile(&device) else {
        let name = device.name();
        return vec![Trial::test(format!("conformance::{runtime}::device"), move || {
            Err(format!("`{name}` is not a device islands has arms for").into())
        })
        .with_kind("conformance")];
    };
    let options = match crate::options() {
        Ok(o) => o,
        Err(trials) => return trials,
    };
    let mut trials = vec![Trial::test(format!("conformance::{runtime}::device::{}", crates.join("+")), move || {
        println!("{profile}");
        Ok(())
    })
    .with_kind("conformance")];
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
                    // A kernel the device is known to crash on is not launched: said, not passed.
                    Some(run) if matches!(&run.verdict, island_runtime::proof::Verdict::Unproven { reason } if reason.contains(island_runtime::lowering::SHARED_MEMORY_ON_SPIRV)) => {
                        Ok(libtest_mimic::Completion::ignored_with(run.detail().unwrap_or_default().to_string()))
                    }
                    Some(run) => crate::verdict(entry, &[run]),
                    None => Err::<_, Failed>("the island has no proof signature to run".into()),
                }
            })
            .with_kind("conformance"),
        );
    }
    for &entry in registry::arms() {
        let wanted = crates.is_empty() || crates.contains(&entry.krate);
        // Fixtures of a wrong arm are wrong in their emulation too: only a wrong native
        // lowering (`expect_native_mismatch`) is for conformance to catch.
        if !wanted || !entry.spec().admits(&profile) || entry.expect == island_runtime::Expect::Mismatch {
            continue;
        }
        let device = device.clone();
        let options = options.clone();
        trials.push(
            Trial::ignorable_test(format!("conformance::{runtime}::{}", entry.name()), move || {
                let host = cpu()?;
                match island_runtime::conformance::conform(entry, &device, &host, &options) {
                    Some(run) => crate::verdict(entry, &[run]),
                    None => Err::<_, Failed>("the arm has no proof signature to run".into()),
                }
            })
            .with_kind(if entry.expect == island_runtime::Expect::Equal { "conformance" } else { "negative" }),
        );
    }
    trials
}
