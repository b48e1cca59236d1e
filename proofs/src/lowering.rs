//! Lowering checks, without a GPU: every row of the intrinsic table, and every registered arm,
//! compiled with its backend's code generator.

use crate::settings::cpu;
use island_runtime::intrinsic;
use island_runtime::lowering::{self, Codegen};
use island_runtime::registry;
use libtest_mimic::{Failed, Trial};

/// One trial per row of the intrinsic table and per (registered arm, backend of the arm), for
/// the crates named (every crate when `crates` is empty).
pub fn trials(crates: &[&str]) -> Vec<Trial> {
    let mut trials = Vec::new();
    let wanted = |krate: &str| crates.is_empty() || crates.contains(&krate);
    for &i in intrinsic::intrinsics().iter().filter(|i| wanted(i.krate)) {
        for row in i.lowerings {
            let name = format!("lowering::{}::{}", i.name, row.backend);
            trials.push(trial(name, Codegen::of(row.backend), move || Ok(lowering::check_row(i, row, &cpu()?)?)));
        }
    }
    // Negative fixtures are planted bugs, not arms anyone lowers.
    for &entry in registry::arms().iter().filter(|e| e.expect == island_runtime::Expect::Equal && wanted(e.krate)) {
        for &backend in entry.spec().backends {
            let name = format!("lowering::{}@{}", entry.name(), backend);
            trials.push(trial(name, Codegen::of(backend), move || Ok(lowering::check_arm(entry, backend, &cpu()?)?)));
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
        Trial::test(name, || Ok(())).with_kind("lowering").with_ignored_flag(true)
    }
}
