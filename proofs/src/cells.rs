//! The trials of a crate's cells of "verify, then delete" (`island_runtime::cell`): the cell
//! registry is consistent; each op's plain-Rust reference equals the CPU runtime's `default` at
//! every shape's oracle rows; and on each device runtime of the conformance list, the bit-exact
//! half of the gate agrees with the committed record of that device (its code hashes this
//! build's, every candidate bit-exact or differing in as many values).

use island_runtime::cell::{self, RegisteredOp};
use island_runtime::cell_gate::{self, CellOptions};
use island_runtime::cell_record::CellDecision;
use island_runtime::embedded;
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::{Failed, Trial};

/// The seed the committed records were gated with (`islands gate --ops`' default).
pub const SEED: u64 = island_runtime::proof_run::DEFAULT_SEED;

/// The largest shape the bit-exact re-run takes on a device runtime.
const MAX_VALUES: usize = 2 << 20;

/// The trials of the cells registered by `crates`.
pub fn trials(crates: &[&'static str]) -> Vec<Trial> {
    let mut trials = Vec::new();
    let mine: Vec<&'static RegisteredOp> = cell::ops().into_iter().filter(|r| crates.contains(&r.krate)).collect();
    if mine.is_empty() {
        return trials;
    }
    trials.push(Trial::test(format!("cells::{}::the_registry_is_consistent", crates.join("+")), || {
        let problems = cell::registry_problems();
        if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
    }));
    for registered in mine {
        let key = registered.op.key;
        let name = format!("{}_{}", key.op, key.quant);
        trials.push(Trial::test(format!("cells::{name}_reference_is_the_cpu_default"), move || {
            let cpu = RuntimeName::Cpu.client()?;
            for shape in registered.op.shapes {
                cell_gate::check_oracle(registered.op, &cpu, shape.shape, SEED)?;
            }
            Ok(())
        }));
        for runtime in crate::settings::conformance_runtimes().unwrap_or_default() {
            trials.push(
                Trial::test(
                    format!("cells::{name}_on_{}_agrees_with_its_committed_record", runtime.as_str()),
                    move || recorded(registered, runtime),
                )
                .with_ignored_flag(!crate::settings::runs_engine_kernels(runtime)),
            );
        }
    }
    trials
}

/// The bit-exact half of the gate on `runtime`, against the committed record of its device: the
/// same shapes, every candidate bit-exact or differing in as many values, the same code.
fn recorded(registered: &'static RegisteredOp, runtime: RuntimeName) -> Result<(), Failed> {
    let (device, cpu) = (runtime.client()?, RuntimeName::Cpu.client()?);
    let options = CellOptions {
        seed: SEED,
        threshold: island_runtime::cell_record::THRESHOLD,
        dispatches: 1,
        rounds: 1,
        speed: false,
        max_values: Some(MAX_VALUES),
    };
    let now = cell_gate::gate_cell(registered, &device, &cpu, &options)?;
    let fp = cell::fingerprint(&device);
    let records = embedded::cell_records().map_err(|e| e.to_string())?;
    let Some(then) = records.iter().find(|r| registered.op.key.matches(r) && r.device.matches(&fp)) else {
        return Err(format!(
            "no committed record of cell {} on {fp}: run `islands gate --ops --runtime {}` and commit the ledger",
            registered.op.key,
            runtime.as_str()
        )
        .into());
    };
    if now.code != then.code {
        return Err(format!(
            "cell {}: the code changed since the record ({:?} → {:?}): gate again",
            registered.op.key, then.code, now.code
        )
        .into());
    }
    if now.decision == CellDecision::Failed {
        return Err(format!("cell {}: the twin is not bit-exact on {fp}", registered.op.key).into());
    }
    for s in &now.shapes {
        let old = then
            .shapes
            .iter()
            .find(|o| o.rows == s.rows && o.cols == s.cols)
            .ok_or_else(|| format!("cell {}: the record has no shape {}×{}", registered.op.key, s.rows, s.cols))?;
        for c in &s.candidates {
            let o = old
                .candidates
                .iter()
                .find(|o| o.name == c.name)
                .ok_or_else(|| format!("cell {}: the record has no candidate `{}`", registered.op.key, c.name))?;
            if (c.differing, &c.error) != (o.differing, &o.error) {
                return Err(format!(
                    "cell {} {}×{}, `{}`: {} values differ now ({:?}), {} in the record ({:?})",
                    registered.op.key, s.rows, s.cols, c.name, c.differing, c.error, o.differing, o.error
                )
                .into());
            }
        }
    }
    Ok(())
}
