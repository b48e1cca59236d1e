//! The kernel-level gate (`islands gate --ops`): for one cell on the present device, every
//! candidate (the twin, the twin forced to `default`, each incumbent of the device's runtime) at
//! each of the cell's shapes:
//!
//! 1. the plain-Rust reference is checked against the CPU runtime's `default` (the oracle) on the
//!    shape's first rows, bit for bit; a reference that differs stops the cell;
//! 2. each candidate writes into its own output, poisoned first (NaN bytes; an op that works in
//!    place starts from its own copy of the input, [`Op::in_place`]), and is compared with
//!    the reference on every value: the count of differing values and the largest distance in
//!    ulps (for incumbents too: their divergence is what the twin removes);
//! 3. the candidates are timed kernel-only side by side (buffers once, N dispatches, one sync),
//!    in alternating rounds; medians with the fastest and slowest round are kept. On wgpu every
//!    candidate's dispatch is submitted to the queue alone, as a GLSL incumbent's is. Where the
//!    runtime's graphs capture every launch (CUDA), each candidate's launches are recorded once and the graphs
//!    replayed, so that the times are the device's and not the host's launch path (CubeCL's
//!    launch of its own kernels, with their metadata, costs the host about a microsecond more
//!    than a precompiled kernel's); the eager times are kept beside them.
//!
//! The result is a [`CellRecord`] with its [`decide`]d decision.

use crate::launch::cell::{
    Buffers, CellError, Inputs, NamedShape, Op, RegisteredOp, Shape, incumbent_hash, incumbents,
};
use crate::records::cell_record::{CandidateEvidence, CandidateKind, CellDecision, CellRecord, ShapeEvidence, decide};
use crate::tag::target::Target;
use crate::values::readback::{self, panic_text};
use crate::values::value::ValueKind;
use crate::verify::bench;
use cubecl::prelude::*;
use cubecl::server::{Handle, ServerError};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// Settings of a cell gate run.
#[derive(Clone, Debug)]
pub struct CellOptions {
    pub seed: u64,
    pub threshold: f64,
    pub dispatches: usize,
    pub rounds: usize,
    /// Time the candidates (off: the bit-exact half only, for CI on a shared machine).
    pub speed: bool,
    /// Only shapes whose rows × cols are at most this many values (the bit-exact half on a CPU
    /// device), if set.
    pub max_values: Option<usize>,
}

/// How far `got` is from `want`, value for value: the count of differing values and the largest
/// distance in ulps.
pub fn distance(kind: ValueKind, got: &[u8], want: &[u8]) -> (usize, u64) {
    let width = kind.size();
    let mut out = (0usize, 0u64);
    for i in 0..got.len().min(want.len()) / width {
        let (g, w) = (kind.bits_at(got, i), kind.bits_at(want, i));
        if g != w {
            out.0 += 1;
            out.1 = out.1.max(kind.ulp_distance(g, w));
        }
    }
    // A short output is wrong in every value it lacks.
    out.0 += want.len().abs_diff(got.len()) / width;
    out
}

/// Runs `f`, turning a panic inside the runtime into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, CellError>) -> Result<T, CellError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(CellError::Runtime(format!("{what} panicked: {}", panic_text(&p)))),
    }
}

/// Launches one candidate on the buffers given.
type LaunchFn<'a> = Box<dyn Fn(&Buffers) -> Result<(), CellError> + 'a>;

/// A candidate of a cell on one device.
struct Candidate<'a> {
    name: String,
    kind: CandidateKind,
    launch: LaunchFn<'a>,
}

fn candidates<'a>(op: &'static Op, device: &'a Client, shape: Shape) -> Vec<Candidate<'a>> {
    let twin = Target::for_client(device);
    let forced = Target::default_for_client(device);
    let mut all = vec![
        Candidate {
            name: "twin".into(),
            kind: CandidateKind::Twin,
            launch: Box::new(move |b| (op.twin)(device, &shape, b, twin)),
        },
        Candidate {
            name: "default".into(),
            kind: CandidateKind::Default,
            launch: Box::new(move |b| (op.twin)(device, &shape, b, forced)),
        },
    ];
    for inc in incumbents(&op.key, Some(device.name())) {
        all.push(Candidate {
            name: inc.name.into(),
            kind: CandidateKind::Incumbent(inc.lang.word().into()),
            launch: Box::new(move |b| (inc.launch)(device, &shape, b)),
        });
    }
    all
}

/// The CPU runtime's `default` on the shape's first rows against the plain-Rust reference: the
/// rows compared, or how they differ.
pub fn check_oracle(op: &'static Op, cpu: &Client, shape: Shape, seed: u64) -> Result<usize, CellError> {
    let small = Shape { rows: shape.rows.min(op.oracle_rows.max(1)), cols: shape.cols };
    let inputs = (op.inputs)(&small, seed);
    let want = (op.reference)(&small, &inputs);
    let got = guarded("the CPU runtime's `default`", || {
        let (ins, scratch, out) = upload(op, cpu, &small, &inputs)?;
        (op.twin)(cpu, &small, &Buffers { inputs: &ins, scratch: &scratch, out: &out }, Target::default_arms(cpu))?;
        readback::read(cpu, out).map_err(|e| CellError::Runtime(e.to_string()))
    })?;
    let (differing, ulps) = distance(op.output, &got, &want);
    if differing > 0 {
        return Err(CellError::Shape {
            cell: op.key.to_string(),
            reason: format!(
                "the plain-Rust reference differs from the CPU runtime's `default` in {differing} of {} values (up to {ulps} ulp) at {small}: the reference is not the oracle",
                want.len() / op.output.size()
            ),
        });
    }
    Ok(small.rows)
}

/// The inputs and scratch on `client`, and an output poisoned with NaN bytes (or, for an op
/// that works in place, a copy of its [`Op::in_place`] input).
fn upload(
    op: &Op,
    client: &Client,
    shape: &Shape,
    inputs: &Inputs,
) -> Result<(Vec<Handle>, Vec<Handle>, Handle), CellError> {
    let ins = inputs.iter().map(|b| client.create_from_slice(b)).collect();
    let (scratch, out) = fresh(op, client, shape, inputs)?;
    Ok((ins, scratch, out))
}

/// One candidate's own scratch and output (see [`upload`]).
fn fresh(op: &Op, client: &Client, shape: &Shape, inputs: &Inputs) -> Result<(Vec<Handle>, Handle), CellError> {
    let scratch = (op.scratch)(shape).into_iter().map(|n| client.create_from_slice(&vec![0xffu8; n.max(4)])).collect();
    let bytes = (op.out_bytes)(shape);
    let out = match op.in_place {
        None => client.create_from_slice(&vec![0xffu8; bytes.max(4)]),
        Some(i) => match inputs.get(i) {
            Some(start) if start.len() == bytes => client.create_from_slice(start),
            other => {
                return Err(CellError::Shape {
                    cell: op.key.to_string(),
                    reason: format!(
                        "its output starts as input {i}, which holds {} bytes at {shape}, not the output's {bytes}",
                        other.map_or(0, Vec::len)
                    ),
                });
            }
        },
    };
    Ok((scratch, out))
}

/// Times `dispatches` side by side (`crate::verify::bench::side_by_side_samples`): for each, its median
/// time per dispatch and its fastest and slowest round, in microseconds.
fn time_side_by_side(
    device: &Client,
    options: &CellOptions,
    names: &[&str],
    mut dispatches: Vec<Box<dyn FnMut() + '_>>,
) -> Result<Vec<[f64; 3]>, CellError> {
    let mut variants: Vec<(&str, &mut dyn FnMut())> =
        names.iter().zip(dispatches.iter_mut()).map(|(n, f)| (*n, &mut **f as &mut dyn FnMut())).collect();
    let samples = bench::side_by_side_samples(device, options.rounds, options.dispatches, &mut variants)
        .map_err(|e| CellError::Runtime(e.to_string()))?;
    Ok(samples
        .into_iter()
        .map(|mut s| {
            s.sort();
            [us(s[0]), us(s[s.len() / 2]), us(s[s.len() - 1])]
        })
        .collect())
}

/// Records what `dispatch` launches as a graph: a launch to warm up (compilation, caches), then
/// one captured. An error where the runtime records no graphs.
fn record_graph(client: &Client, mut dispatch: impl FnMut()) -> Result<cubecl::client::Graph, ServerError> {
    client.graph_prepare()?;
    dispatch();
    client.start_capture()?;
    dispatch();
    client.stop_capture()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Gates one shape of a cell.
fn gate_shape(
    op: &'static Op,
    device: &Client,
    cpu: &Client,
    named: &NamedShape,
    options: &CellOptions,
) -> Result<ShapeEvidence, CellError> {
    let shape = named.shape;
    (op.check)(&shape).map_err(|e| CellError::Shape { cell: op.key.to_string(), reason: e.to_string() })?;
    let oracle_rows = check_oracle(op, cpu, shape, options.seed)?;
    let inputs = (op.inputs)(&shape, options.seed);
    let want = (op.reference)(&shape, &inputs);
    let values = want.len() / op.output.size();
    let all = candidates(op, device, shape);
    // Each candidate has its own output and scratch; the inputs are shared.
    let ins: Vec<Handle> = inputs.iter().map(|b| device.create_from_slice(b)).collect();
    let per: Vec<(Vec<Handle>, Handle)> =
        all.iter().map(|_| fresh(op, device, &shape, &inputs)).collect::<Result<_, _>>()?;
    let mut evidence: Vec<CandidateEvidence> = Vec::new();
    for (c, (scratch, out)) in all.iter().zip(&per) {
        let buffers = Buffers { inputs: &ins, scratch, out };
        let result = guarded(&c.name, || {
            (c.launch)(&buffers)?;
            readback::read(device, out.clone()).map_err(|e| CellError::Runtime(e.to_string()))
        });
        let (differing, max_ulp, error) = match result {
            Ok(got) => {
                let (d, u) = distance(op.output, &got, &want);
                (d, u, None)
            }
            Err(e) => (values, 0, Some(e.to_string())),
        };
        evidence.push(CandidateEvidence {
            name: c.name.clone(),
            kind: c.kind.clone(),
            differing,
            values,
            max_ulp,
            us: None,
            eager_us: None,
            error,
        });
    }
    let mut timing = String::new();
    if options.speed {
        let runnable: Vec<usize> = (0..all.len()).filter(|&i| evidence[i].error.is_none()).collect();
        let names: Vec<&str> = runnable.iter().map(|&i| all[i].name.as_str()).collect();
        // On wgpu a GLSL incumbent's dispatch is a queue submission of its own, while CubeCL
        // batches its launches into one submission every few dozen: every candidate's dispatch
        // is submitted alone there, so that none is timed with a cheaper submission path.
        let submit_each = device.name().starts_with("wgpu");
        let eager: Vec<Box<dyn FnMut() + '_>> = runnable
            .iter()
            .map(|&i| {
                let (c, (scratch, out)) = (&all[i], &per[i]);
                let ins = &ins;
                Box::new(move || {
                    drop((c.launch)(&Buffers { inputs: ins, scratch, out }));
                    if submit_each {
                        drop(device.flush());
                    }
                }) as Box<dyn FnMut()>
            })
            .collect();
        for (&i, t) in runnable.iter().zip(time_side_by_side(device, options, &names, eager)?) {
            evidence[i].us = Some(t);
        }
        timing = "eager".into();
        // Graph replay on CUDA, where a graph captures every launch on the stream, the
        // incumbents' included. (CubeCL's wgpu client accepts a capture too, but a GLSL
        // incumbent's dispatches bypass it: its replay would time nothing.)
        let graphs: Option<Vec<cubecl::client::Graph>> = (device.name() == "cuda")
            .then(|| {
                runnable
                    .iter()
                    .map(|&i| {
                        let (c, (scratch, out)) = (&all[i], &per[i]);
                        record_graph(device, || drop((c.launch)(&Buffers { inputs: &ins, scratch, out })))
                    })
                    .collect::<Result<_, _>>()
                    .ok()
            })
            .flatten();
        if let Some(graphs) = graphs {
            let replays: Vec<Box<dyn FnMut() + '_>> = graphs
                .iter()
                .map(|g| {
                    // SAFETY: the graph's buffers live until this function returns, and only this
                    // thread uses them, on the client's one stream.
                    Box::new(move || drop(unsafe { g.replay() })) as Box<dyn FnMut()>
                })
                .collect();
            for (&i, t) in runnable.iter().zip(time_side_by_side(device, options, &names, replays)?) {
                evidence[i].eager_us = evidence[i].us;
                evidence[i].us = Some(t);
            }
            timing = "graph replay".into();
        }
    }
    let ratio = shape_ratio(&evidence);
    Ok(ShapeEvidence {
        name: named.name.into(),
        rows: shape.rows,
        cols: shape.cols,
        oracle_rows,
        candidates: evidence,
        timing,
        ratio,
    })
}

/// The fastest incumbent's median time over the twin's (the first candidate) at one shape: above
/// 1 where the twin is faster. `None` where either has no time.
pub fn shape_ratio(candidates: &[CandidateEvidence]) -> Option<f64> {
    let twin = candidates.first().and_then(|c| c.us).map(|t| t[1]);
    let fastest = candidates
        .iter()
        .filter(|e| matches!(e.kind, CandidateKind::Incumbent(_)))
        .filter_map(|e| e.us.map(|t| t[1]))
        .min_by(f64::total_cmp);
    twin.zip(fastest).map(|(t, f)| f / t)
}

/// A cell's decision over its `shapes` (the twin first at each), the ratio that decided (the
/// smallest, where every shape was timed) and how many candidate runs failed: the twin must
/// have run and been bit-exact at every shape, and be fast enough at every shape.
pub fn conclude(
    shapes: &[ShapeEvidence],
    has_incumbent: bool,
    timed: bool,
    threshold: f64,
) -> (CellDecision, Option<f64>, usize) {
    let twin_ran = !shapes.is_empty() && shapes.iter().all(|s| s.candidates.first().is_some_and(|c| c.error.is_none()));
    let twin_exact = twin_ran && shapes.iter().all(|s| s.candidates[0].exact());
    let errors = shapes.iter().flat_map(|s| &s.candidates).filter(|c| c.error.is_some()).count();
    let ratios: Vec<f64> = shapes.iter().filter_map(|s| s.ratio).collect();
    let timed_all = timed && ratios.len() == shapes.len();
    let mut decision = decide(twin_ran, twin_exact, has_incumbent, if timed_all { &ratios } else { &[] }, threshold);
    if errors > 0 && !matches!(decision, CellDecision::Failed | CellDecision::Unsupported) {
        decision = CellDecision::Unverified;
    }
    let ratio = if timed_all { ratios.iter().copied().min_by(f64::total_cmp) } else { None };
    (decision, ratio, errors)
}

/// Gates every shape of `op` on `device` (with `cpu` as the oracle) and concludes.
pub fn gate_cell(
    registered: &RegisteredOp,
    device: &Client,
    cpu: &Client,
    options: &CellOptions,
) -> Result<CellRecord, CellError> {
    let op = registered.op;
    let fingerprint = crate::launch::cell::fingerprint(device);
    let mut shapes = Vec::new();
    let mut notes = Vec::new();
    for named in op.shapes {
        if options.max_values.is_some_and(|m| named.shape.rows * named.shape.cols > m) {
            notes.push(format!("{} ({}) skipped: over the run's size limit", named.name, named.shape));
            continue;
        }
        shapes.push(gate_shape(op, device, cpu, named, options)?);
    }
    let incs = incumbents(&op.key, Some(device.name()));
    let (decision, ratio, errors) = conclude(&shapes, !incs.is_empty(), options.speed, options.threshold);
    if errors > 0 {
        notes.push(format!("{errors} candidate runs failed to launch or read back"));
    }
    if !options.speed {
        notes.push("bit-exact half only: no timing".into());
    }
    // The incumbent an engine would run: the fastest at the most shapes.
    let incumbent = incs
        .iter()
        .max_by_key(|inc| {
            shapes
                .iter()
                .filter(|s| {
                    let t = |n: &str| s.candidates.iter().find(|c| c.name == n).and_then(|c| c.us).map(|u| u[1]);
                    let mine = t(inc.name);
                    mine.is_some() && incs.iter().all(|o| t(o.name).is_none_or(|other| mine.unwrap() <= other))
                })
                .count()
        })
        .map(|i| i.name.to_string());
    let twin = crate::launch::twin_code::twin_hash(op, &fingerprint)
        .map_err(|e| CellError::Runtime(format!("cell {}: the twin's code cannot be hashed: {e}", op.key)))?;
    let mut code = vec![("twin".to_string(), twin)];
    code.extend(incs.iter().map(|i| (i.name.to_string(), incumbent_hash(i))));
    Ok(CellRecord {
        op: op.key.op.into(),
        quant: op.key.quant.into(),
        elems: op.key.elems.into(),
        device: fingerprint,
        decision,
        ratio,
        threshold: options.threshold,
        incumbent,
        code,
        shapes,
        seed: format!("{:#x}", options.seed),
        dispatches: options.dispatches,
        rounds: options.rounds,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
        date: crate::verify::gate::today(),
        sdk: env!("CARGO_PKG_VERSION").into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(name: &str, incumbent: bool, differing: usize, median_us: f64) -> CandidateEvidence {
        CandidateEvidence {
            name: name.into(),
            kind: if incumbent { CandidateKind::Incumbent("CUDA C++".into()) } else { CandidateKind::Twin },
            differing,
            values: 64,
            max_ulp: 0,
            us: Some([median_us * 0.9, median_us, median_us * 1.1]),
            eager_us: None,
            error: None,
        }
    }

    fn shape(twin_us: f64, twin_differing: usize, incumbents_us: &[f64]) -> ShapeEvidence {
        let mut candidates = vec![candidate("twin", false, twin_differing, twin_us)];
        candidates.extend(incumbents_us.iter().enumerate().map(|(i, &us)| candidate(&format!("inc{i}"), true, 3, us)));
        let ratio = shape_ratio(&candidates);
        ShapeEvidence { name: "s".into(), rows: 8, cols: 8, oracle_rows: 3, candidates, timing: "eager".into(), ratio }
    }

    #[test]
    fn the_ratio_is_the_fastest_incumbent_over_the_twin() {
        // A twin twice as fast as the fastest of two incumbents: 2.0, and it flips.
        let fast = shape(10.0, 0, &[20.0, 35.0]);
        assert_eq!(fast.ratio, Some(2.0));
        assert_eq!(conclude(std::slice::from_ref(&fast), true, true, 0.97), (CellDecision::Flipped, Some(2.0), 0));
        // Twice as slow: 0.5, declined.
        let slow = shape(40.0, 0, &[20.0, 35.0]);
        assert_eq!(slow.ratio, Some(0.5));
        assert_eq!(conclude(std::slice::from_ref(&slow), true, true, 0.97).0, CellDecision::Declined);
        // A 3 % loss is within the threshold; 4 % is not.
        assert_eq!(conclude(&[shape(100.0, 0, &[97.0])], true, true, 0.97).0, CellDecision::Flipped);
        assert_eq!(conclude(&[shape(100.0, 0, &[96.0])], true, true, 0.97).0, CellDecision::Declined);
        // Fast at one shape and slow at another is declined, and the slow ratio is the record's.
        assert_eq!(conclude(&[fast, slow], true, true, 0.97), (CellDecision::Declined, Some(0.5), 0));
    }

    #[test]
    fn exact_at_one_shape_is_not_exact_at_all() {
        let exact = shape(10.0, 0, &[20.0]);
        let off = shape(10.0, 1, &[20.0]);
        assert_eq!(conclude(&[exact.clone(), off.clone()], true, true, 0.97).0, CellDecision::Failed);
        assert_eq!(conclude(&[off, exact.clone()], true, true, 0.97).0, CellDecision::Failed);
        // Untimed, or timed at one shape of two: no speed verdict.
        assert_eq!(conclude(std::slice::from_ref(&exact), true, false, 0.97), (CellDecision::Unverified, None, 0));
        let mut untimed = exact.clone();
        untimed.ratio = None;
        assert_eq!(conclude(&[exact.clone(), untimed], true, true, 0.97).0, CellDecision::Unverified);
        // A candidate run that failed leaves a flip unverified; a twin that did not run is
        // unsupported where an incumbent exists.
        let mut broken = exact.clone();
        broken.candidates[1].error = Some("launch".into());
        assert_eq!(conclude(&[broken], true, true, 0.97).0, CellDecision::Unverified);
        let mut no_twin = exact;
        no_twin.candidates[0].error = Some("launch".into());
        assert_eq!(conclude(&[no_twin], true, true, 0.97).0, CellDecision::Unsupported);
        assert_eq!(conclude(&[], true, true, 0.97).0, CellDecision::Unsupported);
    }
}
