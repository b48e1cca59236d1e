//! `ISLANDS_GATE`: a crate's own harness gates the crate's arms on a device runtime and writes
//! the records into the crate's `ledger.json`, as `islands gate` does for the crates linked into
//! the command line. A downstream crate gets its device's records from the `cargo test` it
//! already runs: `ISLANDS_GATE=vulkan cargo test --features islands/vulkan`, then review the
//! ledger's diff and commit it.

use crate::settings::{cpu, options};
use island_runtime::Backend;
use island_runtime::embedded;
use island_runtime::gate::{self, GateOptions};
use island_runtime::ledger::Ledger;
use island_runtime::record::Decision;
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::{Failed, Trial};

/// The trial kind of a gate: [`crate::run`] runs it after every other trial but the census, alone,
/// so that nothing beside it disturbs the speed half's timings.
pub const KIND: &str = "gate";

/// One trial per runtime of `ISLANDS_GATE` (none when unset): `gate::RUNTIME::KRATE`.
pub fn trials(krate: &'static str) -> Vec<Trial> {
    let runtimes = match island_runtime::settings::gate() {
        Ok(r) => r,
        Err(e) => {
            let e = e.to_string();
            return vec![Trial::test("environment::gate", move || Err(e.into())).with_kind("environment")];
        }
    };
    runtimes
        .into_iter()
        .map(|backend| {
            let name = format!("gate::{}::{krate}", backend.keyword());
            Trial::test(name, move || gate_into_ledger(krate, backend, true)).with_kind(KIND)
        })
        .collect()
}

/// Gates every arm of `krate` that the device of `backend` selects (the speed half too where
/// `speed`) and writes the records into the crate's committed ledger. Fails when the crate has
/// no ledger, the device cannot be opened, or an arm is not bit-exact there (its `failed` record
/// is written all the same: it blocks the arm on every device of the runtime).
pub fn gate_into_ledger(krate: &str, backend: Backend, speed: bool) -> Result<(), Failed> {
    let mut committed = embedded::committed().map_err(|e| e.to_string())?;
    let Some((path, ledger)) = committed.get_mut(krate) else {
        return Err(format!(
            "`{krate}` has no ledger: put an empty `ledger.json` (`{{\"records\": []}}`) beside its Cargo.toml and \
             `islands::ledger!();` in its lib.rs"
        )
        .into());
    };
    let failed = gate_into(ledger, krate, backend, speed)?;
    std::fs::write(&*path, ledger.to_text()).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("records of `{krate}` on `{}` written to {}", backend.keyword(), path.display());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("not bit-exact on this device (their `failed` records are written): {}", failed.join(", ")).into())
    }
}

/// Gates every arm of `krate` that the device of `backend` selects into `ledger` (each record
/// replacing that of its arm and device, [`Ledger::keep`]); the arms that were not bit-exact.
pub fn gate_into(ledger: &mut Ledger, krate: &str, backend: Backend, speed: bool) -> Result<Vec<String>, Failed> {
    let device = RuntimeName::Device(backend).client()?;
    let cpu = cpu()?;
    let proof = options().map_err(|_| "the proof settings (ISLANDS_SEED, ISLANDS_LANES, ISLANDS_DEPTH) are refused")?;
    let options = GateOptions { proof: (*proof).clone(), speed, ..GateOptions::default() };
    let mut failed = Vec::new();
    for entry in registry::arms_of(krate) {
        let Some(record) = gate::gate(entry, &device, &cpu, &options) else { continue };
        println!("{} {} on {}", record.decision.word(), entry.name(), record.device);
        if record.decision == Decision::Failed {
            failed.push(entry.name());
        }
        ledger.keep(record);
    }
    Ok(failed)
}
