//! The comparison engine under proofs, conformance and the gate: run an island's lifted kernel
//! on two sides (a tag and the runtime executing it) with the same seeded inputs, compare the
//! output bytes under the arm's contract and modulo its don't-care lanes, and taint the
//! don't-care lanes to catch a side that reads them.

use crate::tag::lifted::{LaunchArgs, Lifted, ProofSpec, Shape};
use crate::tag::registry::ArmEntry;
use crate::tag::target::Selection;
use crate::tag::target::Target;
use crate::values::inputs::{Group, Rng, seed_for};
use crate::values::readback::{ReadError, panic_text, read};
use crate::values::tensor_map::TensorMapError;
use crate::verify::proof_run::{ProofOptions, ProofRun, Verdict};
use crate::verify::report::{Compared, Outputs, VALUE};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_vocab::Profile;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Why a run of a lifted island could not be launched or read, or its sides disagree on what
/// they may compare.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// Not launched on this runtime: the reason of `crate::codegen::lowering::launch_hazard`.
    #[error("{0}")]
    NotLaunched(String),
    #[error("tensor map `{map}` maps `{of}`, which is not an input")]
    NoMappedInput { map: &'static str, of: &'static str },
    #[error("input `{input}`: {source}")]
    TensorMap { input: &'static str, source: TensorMapError },
    #[error("launch panicked: {0}")]
    Panicked(String),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(
        "the `dont_care` condition marks other lanes on the {a} side than on the {b} side: it must read only the proof inputs"
    )]
    MaskDiffers { a: &'static str, b: &'static str },
    #[error("the taint run changed the `dont_care` mask, which must read only the inputs it names")]
    TaintChangedMask,
}

/// One side of a comparison: a tag, and the runtime that executes it.
pub struct Side<'a> {
    pub client: &'a Client,
    pub target: Target,
    /// `arm`, `default`, `native`, `emulation`: how reports name this side.
    pub label: &'static str,
}

impl Side<'_> {
    fn name(&self) -> crate::verify::report::SideName {
        crate::verify::report::SideName {
            label: self.label,
            description: format!("`{}` runtime ({})", crate::hardware::device::runtime_name(self.client), self.target),
        }
    }
}

/// Whether neither side takes an arm: a comparison of `default` with `default`.
fn both_default(a: &Side<'_>, b: &Side<'_>) -> bool {
    a.target.takes_defaults() && b.target.takes_defaults()
}

/// The contract two sides are held to: the arm's under `profile`, or byte equality when
/// neither side takes an arm (`default` is normative: it defines the bytes everywhere).
pub(crate) fn contract_of(
    lifted: &Lifted,
    profile: &Profile,
    a: &Side<'_>,
    b: &Side<'_>,
) -> crate::values::contract::Contract {
    if both_default(a, b) { crate::values::contract::Contract::Exact } else { lifted.contract_for(profile) }
}

/// The row of a comparison before it runs: proven until shown otherwise.
pub(crate) fn compare_sides_header(
    entry: &'static ArmEntry,
    lifted: &'static Lifted,
    profile: Profile,
    a: &Side<'_>,
    b: &Side<'_>,
    options: &ProofOptions,
) -> ProofRun {
    let spec = entry.spec();
    let contract = contract_of(lifted, &profile, a, b);
    ProofRun {
        island: entry.site.id,
        arm: spec.label,
        profile: profile.to_string(),
        executed_on: format!(
            "{}: {}, {}: {}",
            a.label,
            crate::hardware::device::runtime_name(a.client),
            b.label,
            crate::hardware::device::runtime_name(b.client)
        ),
        lowering: if a.target.is_native() { "native" } else { "emulated" },
        contract: contract.to_string(),
        bit_exact: contract.is_exact(),
        inputs: 0,
        seed: format!("{:#x}", options.seed),
        time: Duration::ZERO,
        verdict: Verdict::Proven,
        expect: entry.expect,
    }
}

/// The groups a run draws: for each cube, the group of each parameter.
fn groups_of(lifted: &Lifted, cubes: u32) -> Vec<Vec<Group>> {
    let edge_cubes = lifted
        .params
        .iter()
        .map(|p| if p.kind.is_float() { Group::FLOAT_EDGES.len() } else { Group::INT_EDGES.len() })
        .max()
        .unwrap_or(0);
    (0..cubes as usize).map(|c| lifted.params.iter().map(|p| p.kind.group_at(c, edge_cubes)).collect()).collect()
}

/// Cubes a run needs for every edge group of its inputs and `depth`'s random groups.
fn cubes_for(lifted: &Lifted, depth: u32) -> u32 {
    lifted.params.iter().map(|p| p.kind.group_count(depth) as u32).max().unwrap_or(2).max(2)
}

/// Cubes of a run: enough for `lanes` (the island's own `lanes = N` when `None`) and for every
/// group of `depth`.
fn run_cubes(lifted: &Lifted, lanes: Option<u32>, depth: u32) -> u32 {
    let wanted = lanes.or((lifted.lanes > 0).then_some(lifted.lanes)).unwrap_or(0);
    wanted.div_ceil(lifted.cube_dim).max(cubes_for(lifted, depth))
}

/// Runs the lifted island on both sides with the same inputs and compares the outputs.
pub(crate) fn compare_sides(
    entry: &'static ArmEntry,
    lifted: &'static Lifted,
    profile: Profile,
    a: Side<'_>,
    b: Side<'_>,
    options: &ProofOptions,
) -> ProofRun {
    let start = Instant::now();
    let spec = entry.spec();
    let seed = seed_for(options.seed, &format!("{}@{}", entry.name(), profile.name));
    let mut run = compare_sides_header(entry, lifted, profile, &a, &b, options);

    // A comparison that silently ran `default` on a side meant to run the arm would prove
    // nothing: every forced tag must select exactly this arm.
    for side in [&a, &b] {
        if side.target.takes_defaults() {
            continue;
        }
        match side.target.explain(entry.site) {
            Selection::Arm(i) if i == entry.arm => {}
            other => {
                run.verdict = Verdict::Error {
                    reason: format!("the {} tag does not select arm `{}`: {other:?}", side.label, spec.label),
                };
                return run;
            }
        }
    }
    // Plane emulation needs whole planes; two `default`s emulate none.
    if !both_default(&a, &b) && !lifted.cube_dim.is_multiple_of(profile.plane) {
        run.verdict = Verdict::Unproven {
            reason: format!(
                "cube_dim {} is not a whole number of {}-lane planes; declare `cube_dim = {}` in the proof signature",
                lifted.cube_dim,
                profile.plane,
                lifted.cube_dim.next_multiple_of(profile.plane)
            ),
        };
        return run;
    }

    for side in [&a, &b] {
        if let Some(reason) = crate::codegen::lowering::launch_hazard(lifted, side.target, side.client) {
            run.verdict = Verdict::Unproven { reason: format!("{} side: {reason}", side.label) };
            return run;
        }
    }

    let cubes = run_cubes(lifted, options.lanes, options.depth);
    let lanes = (cubes * lifted.cube_dim) as usize;
    let groups = groups_of(lifted, cubes);
    let inputs = fill_inputs(lifted, &groups, seed);
    run.inputs = lanes;

    // Whether the island's `dont_care` condition was honoured (it leaves enough lanes defined).
    let mut honoured = true;
    let outcome = (|| -> Result<Option<crate::verify::report::Difference>, RunError> {
        let got = execute(a.client, lifted, cubes, &inputs, a.target, 0xa5)?;
        let want = execute(b.client, lifted, cubes, &inputs, b.target, 0x5a)?;
        // The bound of an accumulation contract: the reference on the inputs' magnitudes.
        let contract = contract_of(lifted, &profile, &a, &b);
        let magnitudes = if contract.needs_magnitudes() {
            let abs: Vec<Vec<u8>> =
                lifted.params.iter().zip(&inputs).map(|(p, bytes)| p.kind.magnitudes(bytes)).collect();
            Some(execute(b.client, lifted, cubes, &abs, b.target, 0x5a)?)
        } else {
            None
        };
        if got.dont_care != want.dont_care {
            return Err(RunError::MaskDiffers { a: a.label, b: b.label });
        }
        // A condition that leaves too few lanes defined is not honoured: every lane is compared.
        let too_few = want.dont_care.as_deref().and_then(too_few_defined);
        honoured = too_few.is_none();
        let mask = want.dont_care.as_deref().filter(|_| honoured);
        let outputs = Compared { got: &got, want: &want, magnitudes: magnitudes.as_ref(), dont_care: mask };
        let found = crate::verify::report::compare(
            entry,
            lifted,
            &profile,
            contract,
            (&a.name(), &b.name()),
            &inputs,
            &groups,
            outputs,
            (options.seed, seed),
            lanes,
        );
        if let Some(mut found) = found {
            if let Some(why) = &too_few {
                found.report = format!("{why}; so every lane was compared:\n{}", found.report);
            }
            return Ok(Some(found));
        }
        // The taint run: neither side's defined lanes may read a don't-care lane.
        match mask {
            Some(mask) => {
                let tainted = taint_inputs(lifted, &inputs, mask, seed);
                for (side, clean, poison) in [(&a, &got, 0xa5), (&b, &want, 0x5a)] {
                    let dirty = execute(side.client, lifted, cubes, &tainted, side.target, poison)?;
                    if dirty.dont_care.as_deref() != Some(mask) {
                        return Err(RunError::TaintChangedMask);
                    }
                    if let Some(d) =
                        taint_difference(entry, lifted, &profile, side, (clean, &dirty), mask, (options.seed, seed))
                    {
                        return Ok(Some(d));
                    }
                }
                Ok(None)
            }
            None => Ok(None),
        }
    })();
    if let (Some(dc), Ok(None), true) = (&lifted.dont_care, &outcome, honoured) {
        run.contract = format!("{}, modulo the don't-care lanes `{}` (tainted)", run.contract, dc.condition);
    }
    run.verdict = match outcome {
        Ok(None) => Verdict::Proven,
        Ok(Some(d)) => Verdict::Mismatch { report: d.report, cubes: d.cubes },
        Err(e) => Verdict::Error { reason: e.to_string() },
    };
    run.time = start.elapsed();
    run
}

/// The share of a run's lanes a `dont_care` condition must leave defined: at least one in
/// four, so that a condition that covers everything (or nearly) cannot make a proof vacuous.
pub const MIN_DEFINED: (usize, usize) = (1, 4);

/// Why a run's don't-care `mask` leaves too few lanes defined to prove anything, if it does:
/// such a condition is not honoured, and the run compares every lane.
pub fn too_few_defined(mask: &[bool]) -> Option<String> {
    let defined = mask.iter().filter(|&&dont_care| !dont_care).count();
    let (num, den) = MIN_DEFINED;
    (defined * den < mask.len() * num).then(|| {
        format!(
            "the `dont_care` condition leaves {defined} of {} lanes defined, fewer than {num} in {den}: \
             a proof that compares (almost) nothing proves nothing",
            mask.len()
        )
    })
}

/// `inputs` with every per-lane input the `dont_care` condition does not read replaced by
/// arbitrary bits in the don't-care lanes of `mask`.
fn taint_inputs(lifted: &Lifted, inputs: &[Vec<u8>], mask: &[bool], seed: u64) -> Vec<Vec<u8>> {
    let reads = lifted.dont_care.as_ref().map_or(&[][..], |d| d.inputs);
    let mut rng = Rng::new(seed ^ 0x7a1_47ed);
    lifted
        .params
        .iter()
        .zip(inputs)
        .map(|(p, bytes)| {
            let mut bytes = bytes.clone();
            if p.shape == Shape::Lane && !reads.contains(&p.name) {
                let size = p.value_size();
                for (lane, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
                    for b in &mut bytes[lane * size..(lane + 1) * size] {
                        *b = rng.next_u64() as u8;
                    }
                }
            }
            bytes
        })
        .collect()
}

/// The first defined lane whose value `side` changed in the taint run, as a report.
fn taint_difference(
    entry: &ArmEntry,
    lifted: &Lifted,
    profile: &Profile,
    side: &Side<'_>,
    (clean, dirty): (&Outputs, &Outputs),
    mask: &[bool],
    seeds: (u64, u64),
) -> Option<crate::verify::report::Difference> {
    let (_, kind, width, before) = clean.buffers.iter().find(|o| o.0 == VALUE)?;
    let after = &dirty.buffers.iter().find(|o| o.0 == VALUE)?.3;
    let changed: Vec<usize> = (0..before.len() / kind.size())
        .filter(|&i| !mask[i / width] && kind.bits_at(before, i) != kind.bits_at(after, i))
        .collect();
    let &first = changed.first()?;
    let lanes = changed.iter().map(|i| i / width).collect::<std::collections::BTreeSet<_>>().len();
    Some(crate::verify::report::taint(
        entry,
        lifted,
        profile,
        &side.name(),
        *kind,
        (kind.bits_at(before, first), kind.bits_at(after, first)),
        (first / width, lanes, mask),
        seeds,
    ))
}

/// The bytes of each parameter for cubes holding `groups`, drawn from `seed`.
fn fill_inputs(lifted: &Lifted, groups: &[Vec<Group>], seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    lifted
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let per_cube = p.shape.per_cube(lifted.cube_dim as usize) * p.width;
            match p.shape {
                // Encoded at launch, for the device that runs it.
                Shape::TensorMap { .. } => vec![0; groups.len() * per_cube * p.kind.size()],
                _ => groups.iter().flat_map(|g| p.kind.fill(g[i], per_cube, i, &mut rng)).collect(),
            }
        })
        .collect()
}

/// Inputs for `cubes` cubes of the proof recipe's groups (edge groups first, then random ones,
/// repeating), as a bench of the lifted island uses them.
pub fn recipe_inputs(lifted: &Lifted, cubes: u32, seed: u64) -> Vec<Vec<u8>> {
    fill_inputs(lifted, &groups_of(lifted, cubes), seed)
}

/// Launch arguments of the lifted island over `cubes` cubes with `inputs` and an output buffer
/// filled with `poison` bytes; the buffers are created here, once (a bench dispatches them again
/// and again). A tensor map input is encoded here, over the buffer of the input it maps; a map
/// the hardware would refuse is an error.
pub fn launch_args<'a>(
    client: &'a Client,
    lifted: &'static Lifted,
    cubes: u32,
    inputs: &[Vec<u8>],
    target: Target,
    poison: u8,
) -> Result<LaunchArgs<'a>, RunError> {
    let lanes = (cubes * lifted.cube_dim) as usize;
    let mut buffers: Vec<(Handle, usize)> = inputs
        .iter()
        .zip(lifted.params)
        .map(|(bytes, p)| (client.create_from_slice(bytes), bytes.len() / p.value_size()))
        .collect();
    for (i, p) in lifted.params.iter().enumerate() {
        let Shape::TensorMap { of, tile } = p.shape else { continue };
        let (source, mapped) = lifted
            .params
            .iter()
            .enumerate()
            .find(|(_, q)| q.name == of)
            .ok_or(RunError::NoMappedInput { map: p.name, of })?;
        let slice = mapped.shape.per_cube(lifted.cube_dim as usize) * mapped.value_size();
        let mut maps = Vec::with_capacity(cubes as usize * crate::values::tensor_map::MAP_BYTES);
        for cube in 0..cubes as usize {
            let map = crate::values::tensor_map::map_for(client, &buffers[source].0, cube * slice, slice, &tile)
                .map_err(|source| RunError::TensorMap { input: p.name, source })?;
            maps.extend_from_slice(&map);
        }
        buffers[i] = (client.create_from_slice(&maps), maps.len() / p.value_size());
    }
    if let Some(size) = lifted.output_value_size() {
        buffers.push((client.create_from_slice(&vec![poison; lanes * size]), lanes));
    }
    if lifted.dont_care.is_some() {
        buffers.push((client.create_from_slice(&vec![poison; lanes * 4]), lanes));
    }
    Ok(LaunchArgs { client, cubes, cube_dim: lifted.cube_dim, buffers, target })
}

fn execute(
    client: &Client,
    lifted: &'static Lifted,
    cubes: u32,
    inputs: &[Vec<u8>],
    target: Target,
    poison: u8,
) -> Result<Outputs, RunError> {
    if let Some(reason) = crate::codegen::lowering::launch_hazard(lifted, target, client) {
        return Err(RunError::NotLaunched(reason));
    }
    // Poisoned differently in the two runs, so a lane neither run writes still differs.
    let args = launch_args(client, lifted, cubes, inputs, target, poison)?;
    let handles: Vec<Handle> = args.buffers.iter().map(|(h, _)| h.clone()).collect();
    let launched = catch_unwind(AssertUnwindSafe(|| (lifted.launch)(&args)));
    if let Err(panic) = launched {
        return Err(RunError::Panicked(panic_text(&panic)));
    }
    let mut outputs = Vec::new();
    for (i, p) in lifted.params.iter().enumerate() {
        if p.mutable {
            outputs.push((p.name.to_string(), p.kind, p.width, read(client, handles[i].clone())?));
        }
    }
    if let Some(kind) = lifted.output {
        outputs.push((
            VALUE.to_string(),
            kind,
            lifted.output_width,
            read(client, handles[lifted.params.len()].clone())?,
        ));
    }
    let dont_care = match lifted.mask_buffer() {
        Some(i) => {
            let bytes = read(client, handles[i].clone())?;
            let mask = bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            Some(mask.map(|m| m != 0).collect())
        }
        None => None,
    };
    Ok(Outputs { buffers: outputs, dont_care })
}

/// The edge groups whose cube `default` (executed by `client`) turns into NaN or infinity in
/// every float scalar of some output, on the proof inputs of `seed`: a group whose result is
/// saturated compares only specials, and any two NaNs compare equal. Each group is named with
/// the output it saturates. Integer outputs are not judged.
pub fn saturated_groups(
    entry: &'static ArmEntry,
    client: &Client,
    seed: u64,
) -> Result<Vec<(Group, String)>, RunError> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return Ok(Vec::new()) };
    let cubes = run_cubes(lifted, None, 1);
    let groups = groups_of(lifted, cubes);
    let inputs = fill_inputs(lifted, &groups, seed_for(seed, entry.site.id));
    let outputs = execute(client, lifted, cubes, &inputs, Target::default_arms(client), 0x5a)?;
    let edge_cubes = Group::FLOAT_EDGES.len().min(groups.len());
    let mut saturated = Vec::new();
    for (name, kind, width, bytes) in outputs.buffers.iter().filter(|o| o.1.is_float()) {
        let mut finite = vec![false; cubes as usize];
        let mut seen = vec![false; cubes as usize];
        for i in 0..bytes.len() / kind.size() {
            let cube = crate::verify::report::cube_of(lifted, name, i / width);
            if cube < finite.len() {
                seen[cube] = true;
                finite[cube] |= kind.is_finite(kind.bits_at(bytes, i)) && !kind.is_nan(kind.bits_at(bytes, i));
            }
        }
        for cube in (0..edge_cubes).filter(|&c| seen[c] && !finite[c]) {
            for (p, g) in lifted.params.iter().zip(&groups[cube]) {
                if p.kind.is_float() && !saturated.contains(&(*g, name.clone())) {
                    saturated.push((*g, name.clone()));
                }
            }
        }
    }
    Ok(saturated)
}
