//! Generated proofs: run an island with its tag forced to an arm and to `default`, on the same
//! seeded inputs, and compare the output bytes.
//!
//! `#[islands]` lifts every island that declares a proof signature (`proof(a: i32, …) -> i32;`)
//! into a standalone kernel whose lanes load the declared inputs, evaluate the island and store
//! its value. The registry keeps a [`Lifted`] description of that kernel; [`prove`] runs it.
//!
//! Inputs: per-lane scalars (`a: i32`) or per-cube slices (`a: &[i8; 256]`, `acc: &mut [i32; 256]`,
//! the latter also compared as an output). Each cube holds one [`Group`] of values: the edge
//! groups of the input's kind first (all −0.0, subnormals, ties, overflow, cancellation, NaNs, …),
//! then `8 · depth` realistic and `2 · depth` wide random groups. The seed is printed with every
//! failure and replays it (`ISLANDS_SEED`).

use crate::contract::Contract;
use crate::registry::{ArmEntry, Expect};
use crate::target::Selection;
use crate::value::{Group, Rng, ValueKind, seed_for};
use crate::{Executor, Profile, Target};
use cubecl::prelude::*;
use cubecl::server::Handle;
use serde::Serialize;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How an arm is proven.
#[derive(Debug)]
pub enum ProofSpec {
    /// Through the island's lifted proof kernel.
    Lifted(&'static Lifted),
    /// Not provable as written, and why (an island without a proof signature).
    Unprovable(&'static str),
}

/// The shape of one proof input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// One value per lane (`x: f32`).
    Lane,
    /// A slice of this many values per cube (`tile: &[i8; 256]`).
    Cube(u32),
}

/// One parameter of a lifted island.
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    /// The scalar type; a vector parameter holds `width` of them per value.
    pub kind: ValueKind,
    pub width: usize,
    pub shape: Shape,
    /// `&mut [T; N]`: written by the island, compared after the run.
    pub mutable: bool,
}

impl Param {
    /// Bytes per value: the scalar's size times the scalars per value.
    pub fn value_size(&self) -> usize {
        self.kind.size() * self.width
    }
}

/// A lifted island: its parameters, its value, its launch shape and its launcher.
#[derive(Debug)]
pub struct Lifted {
    pub params: &'static [Param],
    /// The per-lane value of the island, if it has one.
    pub output: Option<ValueKind>,
    /// Scalars per output value (1 unless the island returns a vector).
    pub output_width: usize,
    /// Units per cube. Plane emulation needs whole planes: a multiple of the widest plane.
    pub cube_dim: u32,
    /// Lanes per run the island asks for at least (0: as many as its groups need).
    pub lanes: u32,
    /// How the arm's result must relate to `default`'s.
    pub contract: Contract,
    /// For a tolerance contract: the profiles on which the arm is held to bit equality instead,
    /// because its intrinsics emulate a measured model of that hardware's arithmetic; the
    /// function names the model ([`Lifted::contract_for`]).
    pub exact_where: Option<fn(&Profile) -> Option<&'static str>>,
    /// Launches the lifted kernel.
    pub launch: fn(&LaunchArgs<'_>),
    /// Expands the lifted kernel for a device described by its properties, without one.
    pub define: fn(&LaunchArgs<'_>, Arc<DeviceProperties>, Arc<TargetProperties>) -> Definition,
}

impl Lifted {
    /// The contract under `profile`: bit equality where [`Lifted::exact_where`] names a measured
    /// model of the profile's arithmetic, the declared contract elsewhere.
    pub fn contract_for(&self, profile: &Profile) -> Contract {
        match self.exact_where.and_then(|modelled| modelled(profile)) {
            Some(model) => Contract::Modelled { model },
            None => self.contract,
        }
    }

    /// Bytes per output value, if the island has one.
    pub fn output_value_size(&self) -> Option<usize> {
        self.output.map(|kind| kind.size() * self.output_width)
    }
}

/// A kernel definition, or the panic its expansion raised.
pub type Definition = Result<cubecl_runtime::kernel::KernelDefinition, String>;

/// Expands a kernel (the generated `define` of a lifted island calls this).
pub fn define<K: cubecl_runtime::kernel::CubeKernel>(kernel: &K) -> Definition {
    cubecl_runtime::kernel::define_kernel(kernel).map_err(|e| e.to_string())
}

/// What a generated launcher gets.
pub struct LaunchArgs<'a> {
    pub client: &'a Client,
    pub cubes: u32,
    pub cube_dim: u32,
    /// One buffer per parameter, then the output buffer (if any).
    pub buffers: Vec<(Handle, usize)>,
    pub target: Target,
}

impl LaunchArgs<'_> {
    pub fn cube_count(&self) -> CubeCount {
        CubeCount::Static(self.cubes, 1, 1)
    }

    pub fn cube_dim(&self) -> CubeDim {
        CubeDim::new_1d(self.cube_dim)
    }

    /// Buffer `i` as a kernel argument.
    pub fn buffer(&self, i: usize) -> BufferArg {
        let (handle, len) = &self.buffers[i];
        // SAFETY: the handle was allocated by `prove` with exactly `len` elements of the type
        // the lifted kernel declares for this parameter.
        unsafe { BufferArg::from_raw_parts(handle.clone(), *len) }
    }

    pub fn target(&self) -> Target {
        self.target
    }
}

/// Settings of a proof run.
#[derive(Clone, Debug)]
pub struct ProofOptions {
    /// Base seed; each (island, arm) derives its own from it.
    pub seed: u64,
    /// Lanes per run at least, rounded up to whole cubes; the groups of [`ProofOptions::depth`]
    /// may ask for more. `None` takes the island's own `lanes = N`.
    pub lanes: Option<u32>,
    /// Random groups per run: `8 · depth` realistic and `2 · depth` wide ones, after the edge
    /// groups (at least 1).
    pub depth: u32,
}

/// The base seed when none is given.
pub const DEFAULT_SEED: u64 = 0x15_1A_4D_5E_ED;

impl Default for ProofOptions {
    fn default() -> Self {
        ProofOptions { seed: DEFAULT_SEED, lanes: None, depth: 1 }
    }
}

impl ProofOptions {
    /// The defaults, overridden by `ISLANDS_SEED` (decimal or 0x-hex), `ISLANDS_LANES` and
    /// `ISLANDS_DEPTH`. A value that does not parse is an error that names it: a typo must not
    /// silently prove with the default.
    pub fn from_env() -> Result<ProofOptions, String> {
        let mut options = ProofOptions::default();
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(s) = var("ISLANDS_SEED") {
            options.seed = parse_seed(s.trim()).ok_or_else(|| format!("ISLANDS_SEED=`{s}` is not a decimal or 0x-hex number"))?;
        }
        if let Some(s) = var("ISLANDS_LANES") {
            options.lanes = Some(s.trim().parse().map_err(|_| format!("ISLANDS_LANES=`{s}` is not a lane count"))?);
        }
        if let Some(s) = var("ISLANDS_DEPTH") {
            options.depth = s
                .trim()
                .parse()
                .ok()
                .filter(|d| (1..=64).contains(d))
                .ok_or_else(|| format!("ISLANDS_DEPTH=`{s}` is not a depth from 1 to 64"))?;
        }
        Ok(options)
    }
}

/// A seed written in decimal or `0x` hex.
pub fn parse_seed(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The conclusion of one proof run (one arm, one reference profile).
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Byte-equal to `default` (or within the declared contract).
    Proven,
    /// Differs from `default`.
    Mismatch { report: String },
    /// Could not be proven, and why. Never counted as passed.
    Unproven { reason: String },
    /// The arm and `default` compile to the same program on this runtime (an intrinsic whose
    /// emulation is the portable code itself): running both would compare a program with
    /// itself. Never counted as proven; the arm's evidence is its device conformance.
    DeviceEvidenceOnly { reason: String },
    /// Differs on this device in a way measured and recorded in [`crate::divergence`]: the
    /// arm is declined there. Never counted as proven.
    Declined { report: String },
    /// The run itself failed (compilation, launch).
    Error { reason: String },
}

/// One row of a proof report.
#[derive(Clone, Debug, Serialize)]
pub struct ProofRun {
    pub island: &'static str,
    pub arm: &'static str,
    /// The reference profile whose semantics the arm was run with.
    pub profile: String,
    /// The runtime that executed both runs (`client.name()`), and how the arm was lowered.
    pub executed_on: String,
    pub lowering: &'static str,
    pub contract: String,
    /// Whether that contract is byte equality (a tolerance contract never is).
    pub bit_exact: bool,
    pub inputs: usize,
    pub seed: String,
    #[serde(serialize_with = "ser_duration")]
    pub time: Duration,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub expect: Expect,
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

impl ProofRun {
    /// Whether this run meets its expectation: proven for a normal arm, a mismatch for a
    /// negative fixture. Unproven and errors never pass.
    pub fn passed(&self) -> bool {
        matches!(
            (&self.verdict, self.expect),
            (Verdict::Proven, Expect::Equal | Expect::NativeMismatch) | (Verdict::Mismatch { .. }, Expect::Mismatch)
        )
    }

    /// A short verdict word for tables.
    pub fn verdict_word(&self) -> &'static str {
        match (&self.verdict, self.expect) {
            (Verdict::Proven, Expect::Equal | Expect::NativeMismatch) => "proven",
            (Verdict::Mismatch { .. }, Expect::Mismatch) => "caught",
            (Verdict::Proven, Expect::Mismatch) => "MISSED",
            (Verdict::Mismatch { .. }, Expect::Equal | Expect::NativeMismatch) => "MISMATCH",
            (Verdict::Unproven { .. }, _) => "unproven",
            (Verdict::DeviceEvidenceOnly { .. }, _) => "device evidence only",
            (Verdict::Declined { .. }, _) => "declined",
            (Verdict::Error { .. }, _) => "ERROR",
        }
    }

    /// The verdict's text (failure report, reason), if any.
    pub fn detail(&self) -> Option<&str> {
        match &self.verdict {
            Verdict::Proven => None,
            Verdict::Mismatch { report } | Verdict::Declined { report } => Some(report),
            Verdict::Unproven { reason } | Verdict::DeviceEvidenceOnly { reason } | Verdict::Error { reason } => {
                Some(reason)
            }
        }
    }
}

/// The reference profiles an arm is proven under: every reference profile of each of its
/// backends that its guard admits. Empty when the guard admits none (reported unproven).
pub fn profiles_for(entry: &ArmEntry) -> Vec<Profile> {
    let spec = entry.spec();
    spec.backends
        .iter()
        .flat_map(|b| Profile::references(*b))
        .filter(|p| spec.guard.holds(p))
        .collect()
}

/// Proves one arm on `client`: one run per reference profile.
pub fn prove(entry: &'static ArmEntry, client: &Client, options: &ProofOptions) -> Vec<ProofRun> {
    let spec = entry.spec();
    let base = |profile: String, verdict: Verdict| ProofRun {
        island: entry.site.id,
        arm: spec.label,
        profile,
        executed_on: client.name().to_string(),
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
    let profiles = profiles_for(entry);
    if profiles.is_empty() {
        let reason = format!(
            "no reference profile of `{}` satisfies the guard `{}`",
            spec.label, spec.guard
        );
        return vec![base("-".into(), Verdict::Unproven { reason })];
    }
    profiles
        .into_iter()
        .map(|profile| prove_one(entry, lifted, profile, client, options))
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
        match crate::lowering::same_program(lifted, arm.target, default.target, client) {
            Ok(true) => {
                let mut run = compare_sides_header(entry, lifted, profile, &arm, &default, options);
                run.verdict = Verdict::DeviceEvidenceOnly {
                    reason: format!(
                        "on `{}` the arm and `default` are the same program (its emulation is the portable code): \
                         comparing them would prove nothing; the native lowering is checked by `islands conform` on a device",
                        client.name()
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

/// One side of a comparison: a tag, and the runtime that executes it.
pub struct Side<'a> {
    pub client: &'a Client,
    pub target: Target,
    /// `arm`, `default`, `native`, `emulation`: how reports name this side.
    pub label: &'static str,
}

impl Side<'_> {
    fn describe(&self) -> String {
        format!("`{}` runtime ({})", self.client.name(), self.target)
    }
}

/// Conformance of one arm on a device: its native lowering on `device` against its emulation
/// on `cpu`, both with the device's own profile. The run fails, rather than compares, unless the
/// native side really is native: a GPU runtime, with a tag whose arm lowers natively there, and
/// the emulation side on the CPU runtime. A fixture of a wrong native lowering
/// ([`Expect::NativeMismatch`]) must mismatch here.
pub fn conform(entry: &'static ArmEntry, device: &Client, cpu: &Client, options: &ProofOptions) -> Option<ProofRun> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return None };
    let profile = Profile::of_client(device)?;
    if !entry.spec().admits(&profile) {
        return None;
    }
    let native = Side { client: device, target: Target::forced(profile, device).only(entry.site.id), label: "native" };
    let emulation = Side { client: cpu, target: Target::forced(profile, cpu).only(entry.site.id), label: "emulation" };
    let expect = if entry.expect == Expect::Equal { Expect::Equal } else { Expect::Mismatch };
    let what_ran = match (native.target.is_native(), Executor::from_client_name(device.name()), Executor::from_client_name(cpu.name())) {
        (true, Executor::Device(_), Executor::Cpu) => None,
        (native_tag, device_exec, cpu_exec) => Some(format!(
            "the native side must run natively on a device and the emulation on the CPU runtime; \
             here the native tag lowers natively: {native_tag}, the device side runs on {device_exec}, the emulation on {cpu_exec}"
        )),
    };
    let mut run = match what_ran {
        None => compare_sides(entry, lifted, profile, native, emulation, options),
        Some(reason) => {
            let mut run = compare_sides_header(entry, lifted, profile, &native, &emulation, options);
            run.verdict = Verdict::Error { reason };
            run
        }
    };
    run.expect = expect;
    if let (Verdict::Mismatch { report }, Expect::Equal) = (&run.verdict, expect)
        && let Some(d) = crate::divergence::known(&profile, entry.site.id)
    {
        run.verdict = Verdict::Declined {
            report: format!("declined on this device: {}\n  measured: {}\n{report}", d.cause, d.measured),
        };
    }
    Some(run)
}

/// The row of a comparison before it runs: proven until shown otherwise.
fn compare_sides_header(
    entry: &'static ArmEntry,
    lifted: &'static Lifted,
    profile: Profile,
    a: &Side<'_>,
    b: &Side<'_>,
    options: &ProofOptions,
) -> ProofRun {
    let spec = entry.spec();
    let contract = lifted.contract_for(&profile);
    ProofRun {
        island: entry.site.id,
        arm: spec.label,
        profile: profile.to_string(),
        executed_on: format!("{}: {}, {}: {}", a.label, a.client.name(), b.label, b.client.name()),
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
    (0..cubes as usize)
        .map(|c| lifted.params.iter().map(|p| p.kind.group_at(c, edge_cubes)).collect())
        .collect()
}

/// Cubes a run needs for every edge group of its inputs and `depth`'s random groups.
fn cubes_for(lifted: &Lifted, depth: u32) -> u32 {
    lifted.params.iter().map(|p| p.kind.groups(depth).len() as u32).max().unwrap_or(2).max(2)
}

/// Runs the lifted island on both sides with the same inputs and compares the outputs.
fn compare_sides(
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
        if side.target.arms().is_none() {
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
    if !lifted.cube_dim.is_multiple_of(profile.plane) {
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
        if let Some(reason) = crate::lowering::launch_hazard(lifted, side.target, side.client) {
            run.verdict = Verdict::Unproven { reason: format!("{} side: {reason}", side.label) };
            return run;
        }
    }

    let wanted = options.lanes.or((lifted.lanes > 0).then_some(lifted.lanes)).unwrap_or(0);
    let cubes = wanted.div_ceil(lifted.cube_dim).max(cubes_for(lifted, options.depth));
    let lanes = (cubes * lifted.cube_dim) as usize;
    let groups = groups_of(lifted, cubes);
    let inputs = fill_inputs(lifted, &groups, seed);
    run.inputs = lanes;

    let outcome = (|| -> Result<Option<String>, String> {
        let got = execute(a.client, lifted, cubes, &inputs, a.target, 0xa5)?;
        let want = execute(b.client, lifted, cubes, &inputs, b.target, 0x5a)?;
        // The bound of an accumulation contract: the reference on the inputs' magnitudes.
        let magnitudes = if lifted.contract_for(&profile).needs_magnitudes() {
            let abs: Vec<Vec<u8>> = lifted.params.iter().zip(&inputs).map(|(p, bytes)| p.kind.magnitudes(bytes)).collect();
            Some(execute(b.client, lifted, cubes, &abs, b.target, 0x5a)?)
        } else {
            None
        };
        let outputs = Compared { got: &got, want: &want, magnitudes: magnitudes.as_ref() };
        Ok(compare(entry, lifted, &profile, (&a, &b), &inputs, &groups, outputs, (options.seed, seed), lanes))
    })();
    run.verdict = match outcome {
        Ok(None) => Verdict::Proven,
        Ok(Some(report)) => Verdict::Mismatch { report },
        Err(reason) => Verdict::Error { reason },
    };
    run.time = start.elapsed();
    run
}

/// The bytes of each parameter for cubes holding `groups`, drawn from `seed`.
fn fill_inputs(lifted: &Lifted, groups: &[Vec<Group>], seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    lifted
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let per_cube = count(p.shape, lifted.cube_dim as usize, 1) * p.width;
            groups.iter().flat_map(|g| p.kind.fill(g[i], per_cube, i, &mut rng)).collect()
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
/// and again).
pub fn launch_args<'a>(
    client: &'a Client,
    lifted: &'static Lifted,
    cubes: u32,
    inputs: &[Vec<u8>],
    target: Target,
    poison: u8,
) -> LaunchArgs<'a> {
    let lanes = (cubes * lifted.cube_dim) as usize;
    let mut buffers: Vec<(Handle, usize)> = inputs
        .iter()
        .zip(lifted.params)
        .map(|(bytes, p)| (client.create_from_slice(bytes), bytes.len() / p.value_size()))
        .collect();
    if let Some(size) = lifted.output_value_size() {
        buffers.push((client.create_from_slice(&vec![poison; lanes * size]), lanes));
    }
    LaunchArgs { client, cubes, cube_dim: lifted.cube_dim, buffers, target }
}

/// The proof of `entry`'s arm under one profile (`profile` need not be a reference profile:
/// the gate proves an arm under the present device's own).
pub fn prove_profile(entry: &'static ArmEntry, profile: Profile, client: &Client, options: &ProofOptions) -> Option<ProofRun> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return None };
    Some(prove_one(entry, lifted, profile, client, options))
}

fn count(shape: Shape, lanes: usize, cubes: u32) -> usize {
    match shape {
        Shape::Lane => lanes,
        Shape::Cube(n) => (n * cubes) as usize,
    }
}

/// The buffers a run compares: each mutable parameter, then the value (name, scalar type,
/// scalars per value, bytes).
struct Outputs(Vec<(String, ValueKind, usize, Vec<u8>)>);

fn execute(
    client: &Client,
    lifted: &'static Lifted,
    cubes: u32,
    inputs: &[Vec<u8>],
    target: Target,
    poison: u8,
) -> Result<Outputs, String> {
    if let Some(reason) = crate::lowering::launch_hazard(lifted, target, client) {
        return Err(reason);
    }
    // Poisoned differently in the two runs, so a lane neither run writes still differs.
    let args = launch_args(client, lifted, cubes, inputs, target, poison);
    let handles: Vec<Handle> = args.buffers.iter().map(|(h, _)| h.clone()).collect();
    let launched = catch_unwind(AssertUnwindSafe(|| (lifted.launch)(&args)));
    if let Err(panic) = launched {
        return Err(format!("launch panicked: {}", panic_text(&panic)));
    }
    let mut outputs = Vec::new();
    for (i, p) in lifted.params.iter().enumerate() {
        if p.mutable {
            outputs.push((p.name.to_string(), p.kind, p.width, read(client, handles[i].clone())?));
        }
    }
    if let Some(kind) = lifted.output {
        outputs.push(("value".to_string(), kind, lifted.output_width, read(client, handles[lifted.params.len()].clone())?));
    }
    Ok(Outputs(outputs))
}

/// Reads a buffer back; a kernel that failed to compile surfaces here.
pub fn read(client: &Client, handle: Handle) -> Result<Vec<u8>, String> {
    match catch_unwind(AssertUnwindSafe(|| client.read_one(handle))) {
        Ok(Ok(bytes)) => Ok(bytes.to_vec()),
        Ok(Err(e)) => Err(first_lines(&e.to_string(), 12)),
        Err(panic) => Err(format!("reading the result panicked: {}", panic_text(&panic))),
    }
}

/// The message of a caught panic.
pub fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "<non-string panic>".into());
    first_lines(&text, 12)
}

fn first_lines(text: &str, n: usize) -> String {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(n + 1).collect();
    if lines.len() > n {
        lines.truncate(n);
        lines.push("…");
    }
    lines.join("\n")
}

/// The outputs of a comparison: side `a`'s, side `b`'s, and `b` on the inputs' magnitudes
/// when the contract needs them.
struct Compared<'a> {
    got: &'a Outputs,
    want: &'a Outputs,
    magnitudes: Option<&'a Outputs>,
}

#[allow(clippy::too_many_arguments)]
fn compare(
    entry: &ArmEntry,
    lifted: &Lifted,
    profile: &Profile,
    (a, b): (&Side<'_>, &Side<'_>),
    inputs: &[Vec<u8>],
    groups: &[Vec<Group>],
    outputs: Compared<'_>,
    (base_seed, seed): (u64, u64),
    lanes: usize,
) -> Option<String> {
    let contract = lifted.contract_for(profile);
    for (o, ((name, kind, width, got), (_, _, _, want))) in outputs.got.0.iter().zip(&outputs.want.0).enumerate() {
        let n = got.len() / kind.size();
        let magnitude = |i: usize| outputs.magnitudes.map(|m| kind.bits_at(&m.0[o].3, i));
        let differing: Vec<usize> = (0..n)
            .filter(|&i| !contract.accepts(*kind, kind.bits_at(got, i), kind.bits_at(want, i), magnitude(i)))
            .collect();
        let Some(&first_scalar) = differing.first() else { continue };
        // A vector output is compared scalar by scalar; the report names the value and, for a
        // vector, the component.
        let first = first_scalar / width;
        let component = if *width > 1 { format!(", component {}", first_scalar % width) } else { String::new() };
        let mut r = String::new();
        let _ = writeln!(
            r,
            "island `{}` arm `{}`: the {} differs from the {}",
            entry.site.id,
            entry.spec().label,
            a.label,
            b.label
        );
        let _ = writeln!(r, "  written at {}", entry.location());
        let _ = writeln!(r, "  arm semantics: {profile}");
        let _ = writeln!(r, "  executed on: {} = {}; {} = {}", a.label, a.describe(), b.label, b.describe());
        let _ = writeln!(r, "  contract: {contract}");
        let cube = cube_of(lifted, name, first);
        let _ = writeln!(
            r,
            "  output `{name}` [{kind}{}]: first differing index {first} (cube {cube}, {}{component}), {} of {n} scalars differ",
            if *width > 1 { format!(" × {width}") } else { String::new() },
            position_of(lifted, name, first),
            differing.len()
        );
        let _ = writeln!(r, "    {:<9} = {}", a.label, kind.show(kind.bits_at(got, first_scalar)));
        let _ = writeln!(r, "    {:<9} = {}", b.label, kind.show(kind.bits_at(want, first_scalar)));
        if let Some(m) = magnitude(first_scalar) {
            let _ = writeln!(r, "    Σ|terms|  = {}", kind.show(m));
        }
        if let Some(g) = groups.get(cube) {
            let held: Vec<String> = lifted.params.iter().zip(g).map(|(p, g)| format!("{}: {}", p.name, g.name())).collect();
            let _ = writeln!(r, "    cube {cube} holds {}", held.join(", "));
        }
        if lifted.params.iter().all(|p| p.shape == Shape::Lane) && first < lanes {
            let shown: Vec<String> = lifted
                .params
                .iter()
                .zip(inputs)
                .map(|(p, bytes)| format!("{} = {}", p.name, p.kind.show(p.kind.bits_at(bytes, first * p.width))))
                .collect();
            let _ = writeln!(r, "    inputs at that lane: {}", shown.join(", "));
        }
        let _ = write!(
            r,
            "  seed {base_seed:#x} (stream {seed:#x}): replay with ISLANDS_SEED={base_seed:#x} and the filter `{}`",
            entry.name()
        );
        return Some(r);
    }
    None
}

fn cube_of(lifted: &Lifted, name: &str, index: usize) -> usize {
    match lifted.params.iter().find(|p| p.name == name).map(|p| p.shape) {
        Some(Shape::Cube(n)) => index / n as usize,
        _ => index / lifted.cube_dim as usize,
    }
}

fn position_of(lifted: &Lifted, name: &str, index: usize) -> String {
    match lifted.params.iter().find(|p| p.name == name).map(|p| p.shape) {
        Some(Shape::Cube(n)) => format!("element {}", index % n as usize),
        _ => format!("lane {}", index % lifted.cube_dim as usize),
    }
}
