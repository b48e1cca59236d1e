//! Cells of "verify, then delete" (`island_runtime::cell`): the registry is consistent; each
//! cell's plain-Rust reference is the CPU runtime's `default`; on each device runtime of the
//! conformance list every candidate's bit-exact half agrees with the committed record of that
//! device (CI: lavapipe), whose code hashes must be this build's; and an engine's op function
//! runs what the record selects: the incumbent where the cell is declined, the twin where it
//! flipped, where the incumbent changed, or with no record.

use cubecl::prelude::*;
use island_llm::cells;
use island_llm::kernels::MatvecShape;
use island_llm::quant::QuantType;
use island_runtime::cell::{self, Buffers, CellError, Incumbent, Lang, Shape};
use island_runtime::cell_gate::{self, CellOptions};
use island_runtime::cell_record::{CandidateEvidence, CandidateKind, CellDecision, CellRecord, ShapeEvidence};
use island_runtime::dispatch::{self, Forced, Keep};
use island_runtime::runtimes::RuntimeName;
use island_runtime::{Target, embedded};
use libtest_mimic::{Failed, Trial};

/// The seed the committed records were gated with (`islands gate --ops`' default).
const SEED: u64 = island_runtime::proof_run::DEFAULT_SEED;

/// The largest shape the bit-exact re-run takes on a device runtime in CI.
const MAX_VALUES: usize = 2 << 20;

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        Trial::test("cells::the_registry_is_consistent", registry),
        Trial::test("cells::a_declined_cell_runs_its_incumbent_and_a_flipped_one_the_twin", dispatched),
        Trial::test("cells::a_candidate_setting_that_names_nothing_is_an_error", || {
            match (Forced::parse("no such kernel"), Keep::parse("fastes")) {
                (Err(CellError::Setting(..)), Err(CellError::Setting(..))) => Ok(()),
                other => {
                    Err(format!("ISLANDS_CANDIDATE=`no such kernel`, ISLANDS_CELLS=`fastes` gave {other:?}").into())
                }
            }
        }),
    ];
    for registered in cell::ops() {
        let key = registered.op.key;
        let name = format!("{}_{}", key.op, key.quant);
        trials.push(Trial::test(format!("cells::{name}_reference_is_the_cpu_default"), move || {
            let cpu = RuntimeName::Cpu.client()?;
            for shape in registered.op.shapes {
                cell_gate::check_oracle(registered.op, &cpu, shape.shape, SEED)?;
            }
            Ok(())
        }));
        for runtime in proofs::conformance_runtimes().unwrap_or_default() {
            trials.push(Trial::test(
                format!("cells::{name}_on_{}_agrees_with_its_committed_record", runtime.as_str()),
                move || recorded(registered, runtime),
            ));
        }
    }
    trials
}

fn registry() -> Result<(), Failed> {
    let problems = cell::registry_problems();
    if !problems.is_empty() {
        return Err(problems.join("\n").into());
    }
    for key in [island_examples::cell::RMSNORM_KEY, cells::key(QuantType::Q4_1), cells::key(QuantType::Q8_0)] {
        if cell::op(&key).is_none() {
            return Err(format!("cell {key} is not registered").into());
        }
        if cell::incumbents(&key, Some("cuda")).is_empty() {
            return Err(format!("cell {key} has no CUDA incumbent").into());
        }
    }
    Ok(())
}

/// The bit-exact half of the gate on `runtime`, against the committed record of its device: the
/// same shapes, every candidate bit-exact or differing in as many values, the same code.
fn recorded(registered: &'static cell::RegisteredOp, runtime: RuntimeName) -> Result<(), Failed> {
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
    let Some(then) = records.iter().find(|r| r.is_of(&registered.op.key) && r.device.matches(&fp)) else {
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

/// A stand-in incumbent on the CPU runtime: writes 7.0 into every output value, so that the test
/// can tell which candidate ran.
#[cube(launch)]
fn seven(y: &mut [f32]) {
    if ABSOLUTE_POS < y.len() {
        y[ABSOLUTE_POS] = 7.0f32;
    }
}

const MARKER: Incumbent = Incumbent {
    cell: cells::key(QuantType::Q4_1),
    name: "cpu marker (test)",
    lang: Lang::CubeCl,
    runtime: "cpu",
    source: "y[i] = 7.0",
    launch: |client: &Client, s: &Shape, b: &Buffers| {
        // SAFETY: the output holds `rows` values.
        unsafe {
            seven::launch(
                client,
                CubeCount::Static(s.rows as u32, 1, 1),
                CubeDim::new_1d(1),
                BufferArg::from_raw_parts(b.out.clone(), s.rows),
            )
        };
        Ok(())
    },
};
island_runtime::incumbent!(MARKER);

fn dispatched() -> Result<(), Failed> {
    let cpu = RuntimeName::Cpu.client()?;
    let key = cells::key(QuantType::Q4_1);
    let op = cell::op(&key).ok_or("the Q4_1 matvec cell is not registered")?.op;
    let shape = Shape { rows: 8, cols: 64 };
    let inputs = (op.inputs)(&shape, SEED);
    let want = (op.reference)(&shape, &inputs);
    // The record's evidence: the twin bit-exact, the marker bit-exact or not.
    let evidence = |marker_exact: bool| {
        let candidate = |name: &str, kind: CandidateKind, differing: usize| CandidateEvidence {
            name: name.into(),
            kind,
            differing,
            values: shape.rows,
            max_ulp: differing as u64,
            us: Some([1.0; 3]),
            error: None,
        };
        vec![ShapeEvidence {
            name: "test".into(),
            rows: shape.rows,
            cols: shape.cols,
            oracle_rows: shape.rows,
            candidates: vec![
                candidate("twin", CandidateKind::Twin, 0),
                candidate(MARKER.name, CandidateKind::Incumbent("CubeCL".into()), if marker_exact { 0 } else { 3 }),
            ],
            ratio: Some(0.5),
        }]
    };
    let record = |decision: CellDecision, hash: String, marker_exact: bool| CellRecord {
        op: key.op.into(),
        quant: key.quant.into(),
        elems: key.elems.into(),
        device: cell::fingerprint(&cpu),
        decision,
        ratio: Some(if decision == CellDecision::Declined { 0.5 } else { 1.5 }),
        threshold: 0.97,
        incumbent: Some(MARKER.name.into()),
        code: vec![("twin".into(), cell::twin_hash(op)), (MARKER.name.into(), hash)],
        shapes: evidence(marker_exact),
        seed: "0x0".into(),
        dispatches: 1,
        rounds: 1,
        note: None,
        date: "2026-12-02".into(),
        sdk: "test".into(),
    };
    let current = cell::incumbent_hash(&MARKER);
    let run =
        |records: &[CellRecord], forced: Option<&Forced>, keep: Keep| -> Result<(&'static str, Vec<u8>), Failed> {
            let (choice, why) = dispatch::choose_from(&cpu, &key, records, forced, keep);
            let h: Vec<_> = inputs.iter().map(|b| cpu.create_from_slice(b)).collect();
            let (xq, xd, y) =
                (cpu.empty(shape.cols), cpu.empty(shape.cols / 32 * 4), cpu.create_from_slice(&[0xff; 32]));
            let ms = MatvecShape { ty: QuantType::Q4_1, rows: shape.rows, blocks: shape.cols / 32, accumulate: false };
            cells::launch_choice(
                choice,
                &cpu,
                ms,
                [&h[0], &h[1], &h[2], &h[3], &xq, &xd, &y],
                &h[4],
                Target::for_client(&cpu),
            )?;
            let out = island_runtime::readback::read(&cpu, y).map_err(|e| e.to_string())?;
            eprintln!("  {} ({why})", choice.name());
            Ok((choice.name(), out))
        };
    let sevens: Vec<u8> = f32::as_bytes(&[7.0f32; 8]).to_vec();
    // (what, the records, the setting, which incumbents may run, the candidate that must run, its
    // output). The CPU runtime has no arms: its twin is `default`.
    type Case<'a> = (&'a str, Vec<CellRecord>, Option<Forced>, Keep, &'a str, &'a Vec<u8>);
    let (exact, inexact) = (true, false);
    let cases: [Case; 9] = [
        (
            "declined",
            vec![record(CellDecision::Declined, current.clone(), exact)],
            None,
            Keep::Exact,
            MARKER.name,
            &sevens,
        ),
        ("failed", vec![record(CellDecision::Failed, current.clone(), exact)], None, Keep::Exact, MARKER.name, &sevens),
        (
            "declined, the incumbent not bit-exact",
            vec![record(CellDecision::Declined, current.clone(), inexact)],
            None,
            Keep::Exact,
            "default",
            &want,
        ),
        (
            "declined, not bit-exact, fastest kept",
            vec![record(CellDecision::Declined, current.clone(), inexact)],
            None,
            Keep::Fastest,
            MARKER.name,
            &sevens,
        ),
        ("flipped", vec![record(CellDecision::Flipped, current.clone(), exact)], None, Keep::Exact, "default", &want),
        (
            "declined, the incumbent changed",
            vec![record(CellDecision::Declined, "0".repeat(16), exact)],
            None,
            Keep::Exact,
            "default",
            &want,
        ),
        ("no record", vec![], None, Keep::Exact, "default", &want),
        (
            "declined, the twin forced",
            vec![record(CellDecision::Declined, current.clone(), exact)],
            Some(Forced::Twin),
            Keep::Exact,
            "default",
            &want,
        ),
        (
            "no record, the incumbent forced",
            vec![],
            Some(Forced::Named(MARKER.name.into())),
            Keep::Exact,
            MARKER.name,
            &sevens,
        ),
    ];
    for (what, records, forced, keep, name, bytes) in &cases {
        let (ran, out) = run(records, forced.as_ref(), *keep)?;
        if ran != *name || out != **bytes {
            return Err(format!(
                "{what}: ran `{ran}`, expected `{name}`, and its output is {}",
                if out == **bytes { "right" } else { "wrong" }
            )
            .into());
        }
    }
    Ok(())
}
