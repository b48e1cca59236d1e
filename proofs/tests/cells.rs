//! Cells of "verify, then delete" (`island_runtime::cell`): the SDK's cells and their trials
//! (`proofs::cells`: the registry, each reference against the CPU runtime's `default`, the
//! committed records of the present device), and dispatch: an engine's op function runs what
//! the record selects, the bit-exact incumbent where the cell is declined, the twin where it
//! flipped, where the incumbent changed, where the incumbent is not bit-exact, or with no
//! record.

use cubecl::prelude::*;
use island_llm::cells;
use island_llm::kernels::MatvecShape;
use island_llm::quant::QuantType;
use island_runtime::Target;
use island_runtime::cell::{self, Buffers, CellError, Incumbent, Lang, Shape};
use island_runtime::cell_record::{CandidateEvidence, CandidateKind, CellDecision, CellRecord, ShapeEvidence};
use island_runtime::dispatch::{self, Forced, Keep};
use island_runtime::ruling::{Verdict, Why};
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::{Failed, Trial};

use proofs::cells::SEED;

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        Trial::test("cells::the_sdk_registers_its_cells_with_cuda_incumbents", registry),
        Trial::test("cells::a_declined_cell_runs_its_incumbent_and_a_flipped_one_the_twin", dispatched),
        Trial::test("cells::the_rmsnorm_op_function_runs_the_twin_here_and_refuses_a_bad_shape", rmsnorm_op),
        Trial::test("cells::every_twin_hashes_the_code_it_generates_for_each_backend", twin_codes),
        Trial::test("cells::a_twin_hash_sees_an_edit_in_a_function_its_kernel_calls", twin_edit),
        Trial::test("cells::a_candidate_setting_that_names_nothing_is_an_error", || {
            match (Forced::parse("no such kernel"), Keep::parse("fastes")) {
                (Err(CellError::Setting(..)), Err(CellError::Setting(..))) => Ok(()),
                other => {
                    Err(format!("ISLANDS_CANDIDATE=`no such kernel`, ISLANDS_CELLS=`fastes` gave {other:?}").into())
                }
            }
        }),
    ];
    trials.extend(proofs::cells::trials(&["island-examples", "island-llm"]));
    trials
}

fn registry() -> Result<(), Failed> {
    // Every cell the seed asks incumbents for: the quantized matvecs, RMSNorm, softmax, one
    // fused cell (SwiGLU, the matvec with the residual add).
    for key in [
        island_examples::cell::RMSNORM_KEY,
        cells::key(QuantType::Q4_1),
        cells::key(QuantType::Q8_0),
        cells::matvec::key_add(QuantType::Q4_1),
        cells::matvec::key_add(QuantType::Q8_0),
        cells::rmsnorm::KEY,
        cells::attention::SOFTMAX_KEY,
        cells::SWIGLU_KEY,
    ] {
        if cell::op(&key).is_none() {
            return Err(format!("cell {key} is not registered").into());
        }
        if cell::incumbents(&key, Some("cuda")).is_empty() {
            return Err(format!("cell {key} has no CUDA incumbent").into());
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
    let twin_hash = island_runtime::twin_code::twin_hash(op, &cell::fingerprint(&cpu))?;
    // The record's evidence: the twin bit-exact, the marker bit-exact or not.
    let evidence = |marker_exact: bool| {
        let candidate = |name: &str, kind: CandidateKind, differing: usize| CandidateEvidence {
            name: name.into(),
            kind,
            differing,
            values: shape.rows,
            max_ulp: differing as u64,
            us: Some([1.0; 3]),
            eager_us: None,
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
            timing: "eager".into(),
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
        code: vec![("twin".into(), twin_hash.clone()), (MARKER.name.into(), hash)],
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
        |records: &[CellRecord], forced: Option<&Forced>, keep: Keep| -> Result<(&'static str, Vec<u8>, Why), Failed> {
            let dispatch::Chosen { choice, why } = dispatch::choose_from(&cpu, &key, records, forced, keep);
            let h: Vec<_> = inputs.iter().map(|b| cpu.create_from_slice(b)).collect();
            let (xq, xd, y) =
                (cpu.empty(shape.cols), cpu.empty(shape.cols / 32 * 4), cpu.create_from_slice(&[0xff; 32]));
            let ms = MatvecShape { ty: QuantType::Q4_1, rows: shape.rows, blocks: shape.cols / 32, accumulate: false };
            cells::launch_choice(
                choice,
                &cpu,
                (ms, 1),
                [&h[0], &h[1], &h[2], &h[3], &xq, &xd, &y],
                &h[4],
                Target::for_client(&cpu),
            )?;
            let out = island_runtime::readback::read(&cpu, y).map_err(|e| e.to_string())?;
            eprintln!("  {} ({why})", choice.name());
            Ok((choice.name(), out, why))
        };
    let sevens: Vec<u8> = f32::as_bytes(&[7.0f32; 8]).to_vec();
    // (what, the records, the setting, which incumbents may run, the candidate that must run, its
    // output, the rule that must decide). The CPU runtime has no arms: its twin is `default`.
    type Case<'a> = (&'a str, Vec<CellRecord>, Option<Forced>, Keep, &'a str, &'a Vec<u8>, Rule);
    let (exact, inexact) = (true, false);
    let other_driver = CellRecord {
        device: island_runtime::Fingerprint { driver: "another".into(), ..cell::fingerprint(&cpu) },
        ..record(CellDecision::Declined, current.clone(), exact)
    };
    let twin_changed = CellRecord {
        code: vec![("twin".into(), "0".repeat(16)), (MARKER.name.into(), current.clone())],
        ..record(CellDecision::Declined, current.clone(), exact)
    };
    let declined = || vec![record(CellDecision::Declined, current.clone(), exact)];
    let inexact_declined = || vec![record(CellDecision::Declined, current.clone(), inexact)];
    let named = Some(Forced::Named(MARKER.name.into()));
    let cases: [Case; 11] = [
        ("declined", declined(), None, Keep::Exact, MARKER.name, &sevens, Rule::Recorded(CellDecision::Declined)),
        (
            "failed",
            vec![record(CellDecision::Failed, current.clone(), exact)],
            None,
            Keep::Exact,
            MARKER.name,
            &sevens,
            Rule::Recorded(CellDecision::Failed),
        ),
        (
            "declined, the incumbent not bit-exact",
            inexact_declined(),
            None,
            Keep::Exact,
            "default",
            &want,
            Rule::NotExact,
        ),
        (
            "declined, not bit-exact, fastest kept",
            inexact_declined(),
            None,
            Keep::Fastest,
            MARKER.name,
            &sevens,
            Rule::Recorded(CellDecision::Declined),
        ),
        (
            "flipped",
            vec![record(CellDecision::Flipped, current.clone(), exact)],
            None,
            Keep::Exact,
            "default",
            &want,
            Rule::Recorded(CellDecision::Flipped),
        ),
        (
            "declined, the incumbent changed",
            vec![record(CellDecision::Declined, "0".repeat(16), exact)],
            None,
            Keep::Exact,
            "default",
            &want,
            Rule::Stale,
        ),
        ("declined, the twin changed since", vec![twin_changed], None, Keep::Exact, "default", &want, Rule::Stale),
        ("no record", vec![], None, Keep::Exact, "default", &want, Rule::NoRecord),
        ("declined under another driver", vec![other_driver], None, Keep::Exact, "default", &want, Rule::DriverChanged),
        ("declined, the twin forced", declined(), Some(Forced::Twin), Keep::Exact, "default", &want, Rule::Forced),
        ("no record, the incumbent forced", vec![], named, Keep::Exact, MARKER.name, &sevens, Rule::Forced),
    ];
    for (what, records, forced, keep, name, bytes, rule) in &cases {
        let (ran, out, why) = run(records, forced.as_ref(), *keep)?;
        if ran != *name || out != **bytes {
            return Err(format!(
                "{what}: ran `{ran}`, expected `{name}`, and its output is {}",
                if out == **bytes { "right" } else { "wrong" }
            )
            .into());
        }
        if !rule.decided(&why) {
            return Err(format!("{what}: decided by {why:?}, expected {rule:?}").into());
        }
    }
    Ok(())
}

/// The rule of the dispatch table a case expects to decide (`island_runtime::dispatch`).
#[derive(Debug)]
enum Rule {
    Recorded(CellDecision),
    NotExact,
    Stale,
    NoRecord,
    DriverChanged,
    Forced,
}

impl Rule {
    fn decided(&self, why: &Why) -> bool {
        let verdict = why.verdict();
        match self {
            Rule::Recorded(d) => matches!(why, Why::Recorded(_)) && verdict == Some(Verdict::Cell(*d)),
            Rule::NotExact => matches!(why, Why::NotExact { .. }),
            Rule::Stale => matches!(why, Why::Stale { .. }),
            Rule::NoRecord => *why == Why::NoRecord,
            Rule::DriverChanged => matches!(why, Why::DriverChanged { .. }),
            Rule::Forced => matches!(why, Why::Forced { .. }),
        }
    }
}

/// `island_examples::cell::rmsnorm` on the CPU runtime (no record: the twin) computes the
/// reference's bytes, and refuses a shape its kernel cannot take before launching anything.
fn rmsnorm_op() -> Result<(), Failed> {
    let cpu = RuntimeName::Cpu.client()?;
    let op = &island_examples::cell::RMSNORM;
    let shape = Shape { rows: 3, cols: 64 };
    let inputs = (op.inputs)(&shape, SEED);
    let want = (op.reference)(&shape, &inputs);
    let h: Vec<_> = inputs.iter().map(|b| cpu.create_from_slice(b)).collect();
    let y = cpu.create_from_slice(&vec![0xffu8; want.len()]);
    island_examples::cell::rmsnorm(&cpu, &h[0], &h[1], &y, &h[2], shape)?;
    let got = island_runtime::readback::read(&cpu, y.clone()).map_err(|e| e.to_string())?;
    if got != want {
        return Err("the RMSNorm op function's output is not the reference's".into());
    }
    match island_examples::cell::rmsnorm(&cpu, &h[0], &h[1], &y, &h[2], Shape { rows: 3, cols: 62 }) {
        Err(CellError::Shape { .. }) => Ok(()),
        other => Err(format!("a 3×62 RMSNorm gave {other:?}").into()),
    }
}

/// Every registered twin's code (`island_runtime::twin_code`) for a CUDA, a Vulkan and a WebGPU
/// device and the CPU runtime: computed, the same twice, with at least one launch per shape and
/// tag, different for every op (each twin is its own code), and, on CUDA, the device's arms
/// somewhere different from `default` (the tag reaches the hash).
fn twin_codes() -> Result<(), Failed> {
    use island_runtime::twin_code::twin_code;
    use island_runtime::vocab::{Backend, Profile};
    let profiles = [
        Some(Profile::references(Backend::Cuda)[0]),
        Some(Profile::references(Backend::Vulkan)[1]),
        Some(Profile::references(Backend::WebGpu)[0]),
        None,
    ];
    let mut arms_differ = false;
    for profile in profiles {
        let what = profile.map_or_else(|| "the CPU runtime".to_string(), |p| p.to_string());
        let mut seen: Vec<(String, String)> = Vec::new();
        for r in cell::ops() {
            let code = twin_code(r.op, profile).map_err(|e| format!("cell {} on {what}: {e}", r.op.key))?;
            // Expanded twice on the first profile (CUDA, both tags): an expansion that is not
            // a function of its inputs shows there; on each other profile it would cost as
            // much again (this trial took 94 s so, 2-core x86-64, 2026-12-07).
            if profile == profiles[0] && twin_code(r.op, profile)? != code {
                return Err(
                    format!("cell {} on {what}: the twin's code differs between two expansions", r.op.key).into()
                );
            }
            let sections: Vec<&str> = code.split("\n== ").collect();
            if code.matches("-- ").count() < sections.len() {
                return Err(format!("cell {} on {what}: a shape and tag without a launch:\n{code}", r.op.key).into());
            }
            if let Some((other, _)) = seen.iter().find(|(_, c)| *c == code) {
                return Err(format!("cells {other} and {} generate the same code on {what}", r.op.key).into());
            }
            if profile.is_some_and(|p| p.backend == Backend::Cuda) {
                let half = |tag: &str| {
                    code.split("== ")
                        .filter(|s| s.lines().next().is_some_and(|l| l.ends_with(tag)))
                        .map(|s| s.split_once('\n').map_or("", |x| x.1))
                        .collect::<Vec<_>>()
                };
                arms_differ |= half(" arms") != half(" default");
            }
            seen.push((r.op.key.to_string(), code));
        }
    }
    if !arms_differ {
        return Err(
            "no twin's code on CUDA differs between its arms and `default`: the tag does not reach the hash".into()
        );
    }
    Ok(())
}

mod edited {
    //! Two kernels alike but for one constant in a function each calls: an edit outside the
    //! kernel's own text.
    use cubecl::prelude::*;

    #[cube]
    pub fn scale_a(x: f32) -> f32 {
        x * 2.0f32
    }

    #[cube]
    pub fn scale_b(x: f32) -> f32 {
        x * 3.0f32
    }

    #[cube(launch)]
    pub fn kernel_a(y: &mut [f32]) {
        if ABSOLUTE_POS < y.len() {
            y[ABSOLUTE_POS] = scale_a(y[ABSOLUTE_POS]);
        }
    }

    #[cube(launch)]
    pub fn kernel_b(y: &mut [f32]) {
        if ABSOLUTE_POS < y.len() {
            y[ABSOLUTE_POS] = scale_b(y[ABSOLUTE_POS]);
        }
    }
}

/// An op whose twin launches `edited::kernel_a` (`b == false`) or `kernel_b`: the same kernel
/// text, calling functions that differ in one constant.
fn edited_op(b: bool) -> cell::Op {
    let twin: fn(&Client, &Shape, &Buffers, Target) -> Result<(), CellError> = if b {
        |client, s, buf, _| {
            // SAFETY: the output holds `rows` values.
            unsafe {
                edited::kernel_b::launch(
                    client,
                    CubeCount::Static(s.rows as u32, 1, 1),
                    CubeDim::new_1d(1),
                    BufferArg::from_raw_parts(buf.out.clone(), s.rows),
                )
            };
            Ok(())
        }
    } else {
        |client, s, buf, _| {
            // SAFETY: as above.
            unsafe {
                edited::kernel_a::launch(
                    client,
                    CubeCount::Static(s.rows as u32, 1, 1),
                    CubeDim::new_1d(1),
                    BufferArg::from_raw_parts(buf.out.clone(), s.rows),
                )
            };
            Ok(())
        }
    };
    let base = cell::op(&cells::key(QuantType::Q4_1)).expect("registered").op;
    cell::Op { twin, shapes: &[cell::NamedShape { name: "test", shape: Shape { rows: 8, cols: 64 } }], ..*base }
}

fn twin_edit() -> Result<(), Failed> {
    use island_runtime::twin_code::twin_code;
    use island_runtime::vocab::{Backend, Profile};
    for profile in [Some(Profile::references(Backend::Cuda)[0]), None] {
        let (a, b) = (twin_code(&edited_op(false), profile)?, twin_code(&edited_op(true), profile)?);
        if a == b {
            return Err(format!("an edited function gives the same twin code on {profile:?}:\n{a}").into());
        }
        if twin_code(&edited_op(false), profile)? != a {
            return Err("the same twin gives two codes".into());
        }
    }
    Ok(())
}
