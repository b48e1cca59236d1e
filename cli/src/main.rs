//! `islands`: the SDK's command line.
//!
//! ```text
//! islands list | intrinsics | lower
//! islands prove [--runtime cpu|cuda|hip|vulkan|metal|webgpu] [--json] [--lanes N] [--depth D] [--seed S] [FILTER]
//! islands conform --runtime R      islands probe --runtime R
//! islands gate --runtime R [--write DIR] [--bit-exact-only] [FILTER]
//! islands scoreboard [--json | --markdown | --html]
//! islands example NAME --runtime R islands bench --runtime R
//! islands tensor-core --runtime cuda [--tiles N] [--emulated N] [--sample DIR]
//! ```

use clap::{Parser, Subcommand};
use island_runtime::proof::{self, ProofOptions, ProofRun};
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use std::io::Write;
use table::print_table;

mod bench;
mod example;
mod gate;
mod peers;
mod probe;
mod scoreboard;
mod table;
mod tensor_core;
use std::process::ExitCode;
use std::time::Instant;

// Link the crates whose islands this binary lists.
use island_consumer as _;
use island_examples as _;
use island_intrinsics as _;
use island_vendor_byteperm as _;

#[derive(Parser)]
#[command(version, about = "List and prove the island arms registered in this build")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every registered accelerated arm: island, arm, guard, proof, location.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Proves every arm (or those whose name contains FILTER) against `default`.
    Prove {
        /// The runtime that executes both the arm and `default`.
        #[arg(long, default_value = "cpu")]
        runtime: String,
        /// Print the runs as JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Lanes per run (more lanes, more random inputs, slower plane emulation on the CPU).
        #[arg(long)]
        lanes: Option<u32>,
        /// Random groups per run: 8·depth realistic and 2·depth wide ones after the edge groups.
        #[arg(long)]
        depth: Option<u32>,
        /// Base seed (decimal or 0x-hex); replays a reported failure.
        #[arg(long)]
        seed: Option<String>,
        /// Exit successfully even when some arm is unproven (it is still reported, never as proven).
        #[arg(long)]
        allow_unproven: bool,
        /// Only arms whose name contains this.
        filter: Option<String>,
    },
    /// Runs every arm the device selects natively on it and emulated on the CPU, and compares;
    /// then runs each example kernel on the device against the CPU `default` and the reference.
    Conform {
        /// The device runtime (vulkan, cuda).
        #[arg(long)]
        runtime: String,
        /// Print the runs as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Gates every arm the device selects: bit-exact (CPU proof under the device's profile, and
    /// native against emulation on the device) and at least 97 % as fast as `default` on a
    /// kernel-only bench; writes the records to each crate's ledger.
    Gate {
        /// The device runtime (vulkan, cuda).
        #[arg(long)]
        runtime: String,
        /// Write `DIR/<crate>.json` instead of each crate's `ledger.json`.
        #[arg(long)]
        write: Option<std::path::PathBuf>,
        /// The speed half's pass mark: `default`'s time / the arm's.
        #[arg(long, default_value_t = island_runtime::ledger::DEFAULT_THRESHOLD)]
        threshold: f64,
        /// Lanes per dispatch of the speed half.
        #[arg(long, default_value_t = 1 << 20)]
        lanes: u32,
        /// Dispatches per timed sample.
        #[arg(long, default_value_t = 50)]
        dispatches: usize,
        /// Timed samples per variant (the median is compared).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Only the bit-exact half (timings on a shared or tiny machine mean nothing).
        #[arg(long)]
        bit_exact_only: bool,
        /// Only arms whose name contains this.
        filter: Option<String>,
    },
    /// The matrix island arm × device from the ledgers: flipped, declined, failed, unverified, stale.
    Scoreboard {
        #[arg(long)]
        json: bool,
        #[arg(long)]
        markdown: bool,
        /// One self-contained HTML page, on stdout.
        #[arg(long)]
        html: bool,
    },
    /// The table of intrinsics: backend, capability, instruction.
    Intrinsics,
    /// Compiles each intrinsic's check for each backend of the table (no GPU needed) and shows
    /// whether the instruction appears in the arm and is absent from `default`.
    Lower {
        /// Print the generated code of the arms whose name contains this (with `default`'s).
        #[arg(long)]
        show: Option<String>,
        /// The backend whose code `--show` prints.
        #[arg(long, default_value = "cuda")]
        backend: String,
    },
    /// Kernel-only benchmarks of the examples, variants side by side, results checked against
    /// the CPU `default` in the same run.
    Bench {
        #[arg(long, default_value = "cuda")]
        runtime: String,
        /// Dispatches per timed round.
        #[arg(long, default_value_t = 200)]
        iters: usize,
        /// Rounds (the median is reported).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Only one bench: matvec, rmsnorm or gemm.
        #[arg(long)]
        only: Option<String>,
        /// Small shapes (a smoke test for runtimes without a big device).
        #[arg(long)]
        small: bool,
        /// Only this matvec shape, `MxK` (e.g. 4096x14336).
        #[arg(long)]
        shape: Option<String>,
    },
    /// Measures a device's float semantics against the CPU: division, square root, contraction
    /// into FMA, and the addition order of its plane sum.
    Probe {
        #[arg(long)]
        runtime: String,
        /// Values per probe.
        #[arg(long, default_value_t = 1 << 20)]
        samples: usize,
        /// Seed of the inputs (decimal or 0x-hex).
        #[arg(long, default_value = "0x9e0be")]
        seed: String,
    },
    /// The device's f16 and bf16 tensor-core MMA against the measured model of its arithmetic,
    /// over the adversarial tile set, with a wrong model as the fixture that must fail.
    TensorCore {
        #[arg(long, default_value = "cuda")]
        runtime: String,
        /// Tiles per format (rounded up to a multiple of 256).
        #[arg(long, default_value_t = 1 << 20)]
        tiles: usize,
        /// Index of the first tile: another start draws tiles no earlier run saw (the sample
        /// and the CPU emulation's comparison are of the tiles from 0, and skipped otherwise).
        #[arg(long, default_value_t = 0)]
        first: usize,
        /// Of those, tiles the CubeCL emulation also runs on the CPU runtime.
        #[arg(long, default_value_t = 2048)]
        emulated: usize,
        /// Write the device's outputs of the first `--sample-tiles` tiles to this folder.
        #[arg(long)]
        sample: Option<std::path::PathBuf>,
        #[arg(long, default_value_t = 320)]
        sample_tiles: usize,
    },
    /// Runs an example kernel on a runtime and checks it byte for byte against the CPU.
    Example {
        /// q8-matvec, rmsnorm, gemm-i8, gemm-i8-mma or gemm-f16.
        name: String,
        #[arg(long, default_value = "cpu")]
        runtime: String,
        /// Problem size: rows (m).
        #[arg(long, default_value_t = 256)]
        rows: usize,
        /// Problem size: columns (k), or k×n for the GEMM.
        #[arg(long, default_value_t = 4096)]
        cols: usize,
        /// Rows also run on the CPU runtime's `default` arm (the rest against the plain-Rust
        /// reference, which mirrors it and is itself checked against it).
        #[arg(long, default_value_t = 16)]
        cpu_rows: usize,
    },
}

fn main() -> ExitCode {
    // Warnings and errors of the SDK (an arm a device cannot run exactly, a ledger problem) show
    // on standard error; `RUST_LOG=info` shows more.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    // Settings every launch would consult: a wrong one is refused here, before any work.
    if let Err(e) = island_runtime::policy::settings() {
        eprintln!("islands: {e}");
        return ExitCode::from(2);
    }
    match Cli::parse().command {
        Command::List { json } => list(json),
        Command::Prove { runtime, json, lanes, depth, seed, allow_unproven, filter } => {
            prove(&runtime, json, lanes, depth, seed.as_deref(), allow_unproven, filter.as_deref())
        }
        Command::Conform { runtime, json } => conform(&runtime, json),
        Command::Gate { runtime, write, threshold, lanes, dispatches, rounds, bit_exact_only, filter } => {
            let proof = match ProofOptions::from_env() {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            let gate = island_runtime::gate::GateOptions {
                proof,
                threshold,
                lanes,
                dispatches,
                rounds,
                speed: !bit_exact_only,
            };
            let options = gate::Options { gate, write_dir: write, filter };
            match client_of(&runtime)
                .and_then(|d| client_of("cpu").map(|c| (d, c)))
                .and_then(|(d, c)| gate::run(&d, &c, &options))
            {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Scoreboard { json, markdown, html } => {
            let format = match (json, markdown, html) {
                (true, _, _) => scoreboard::Format::Json,
                (_, true, _) => scoreboard::Format::Markdown,
                (_, _, true) => scoreboard::Format::Html,
                _ => scoreboard::Format::Text,
            };
            match client_of("cpu").and_then(|c| scoreboard::run(&c, format)) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Intrinsics => intrinsics(),
        Command::Lower { show: Some(filter), backend } => show(&filter, &backend),
        Command::Lower { show: None, .. } => lower(),
        Command::Bench { runtime, iters, rounds, only, small, shape } => {
            let shape = match shape.as_deref().map(|s| s.split_once('x').map(|(m, k)| (m.parse(), k.parse()))) {
                None => None,
                Some(Some((Ok(m), Ok(k)))) => Some((m, k)),
                Some(_) => {
                    eprintln!("`--shape` takes MxK, e.g. 4096x14336");
                    return ExitCode::from(2);
                }
            };
            let options = bench::Options { iters, rounds, only, small, shape };
            match client_of(&runtime).and_then(|c| bench::run(&c, &options)) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Probe { runtime, samples, seed } => {
            let Some(seed) = proof::parse_seed(&seed) else {
                eprintln!("`--seed` takes a decimal or 0x-hex number, got `{seed}`");
                return ExitCode::from(2);
            };
            match client_of(&runtime).and_then(|c| probe::run(&c, samples, seed)) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::TensorCore { runtime, tiles, first, emulated, sample, sample_tiles } => {
            let options = tensor_core::Options { tiles, first, emulated, sample, sample_tiles };
            match client_of(&runtime)
                .and_then(|d| client_of("cpu").map(|c| (d, c)))
                .and_then(|(d, c)| tensor_core::run(&d, &c, &options))
            {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Example { name, runtime, rows, cols, cpu_rows } => {
            match client_of(&runtime).and_then(|c| example::run(&name, &c, rows, cols, cpu_rows)) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// A client of the named runtime, or why not.
fn client_of(runtime: &str) -> Result<island_runtime::__private::cubecl::prelude::Client, String> {
    RuntimeName::parse(runtime)
        .ok_or_else(|| format!("unknown runtime `{runtime}`; expected one of {}", RuntimeName::list()))?
        .client()
}

fn conform(runtime: &str, json: bool) -> ExitCode {
    let (device, cpu) = match (client_of(runtime), client_of("cpu")) {
        (Ok(d), Ok(c)) => (d, c),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let Some(profile) = island_runtime::device::profile(&device) else {
        eprintln!("`{}` is not a device islands has arms for", device.name());
        return ExitCode::from(2);
    };
    eprintln!("device: {profile}");
    let options = match ProofOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut runs = Vec::new();
    for entry in registry::arms().iter().filter(|e| e.expect != island_runtime::Expect::Mismatch) {
        if let Some(run) = island_runtime::conformance::conform(entry, &device, &cpu, &options) {
            eprintln!("{} {}", run.verdict_word(), entry.name());
            runs.push(run);
        }
    }
    // Each island's `default` on the device against the CPU runtime's, byte for byte.
    for entry in registry::islands() {
        if let Some(run) = island_runtime::conformance::defaults(entry, &device, &cpu, &options) {
            eprintln!("{} {} (device default vs CPU default)", run.verdict_word(), entry.site.id);
            runs.push(run);
        }
    }
    eprintln!("seed {:#x}, depth {} (ISLANDS_SEED, ISLANDS_DEPTH)", options.seed, options.depth);
    let arms = report(&runs, json, &format!("conformance on {profile}"), options.seed, false);
    // Kernel-level conformance: each example on the device, its native arms and its `default`,
    // against the CPU runtime's `default` and the plain-Rust reference. An island can agree with
    // its emulation while the kernel around it computes other bits on this device (its
    // arithmetic, its compiler's contractions): that must fail here too.
    let mut examples_ok = true;
    for (name, rows, cols, cpu_rows) in [
        ("q8-matvec", 256, 4096, 8),
        ("rmsnorm", 256, 4096, 4),
        ("gemm-i8", 256, 256, 16),
        ("gemm-i8-mma", 256, 512, 128),
        ("gemm-f16", 256, 256, 16),
    ] {
        match example::run(name, &device, rows, cols, cpu_rows) {
            Ok(ok) => examples_ok &= ok,
            Err(e) => {
                println!("  example {name}: {e}");
                examples_ok = false;
            }
        }
    }
    println!("examples on {profile}: {}", if examples_ok { "byte-equal" } else { "DIFFERENT (see above)" });
    if arms == ExitCode::SUCCESS && examples_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn intrinsics() -> ExitCode {
    let mut rows = Vec::new();
    for i in island_runtime::intrinsic::intrinsics() {
        let guard = i.check_arms().first().map(|e| e.spec().guard.to_string()).unwrap_or_default();
        for l in i.lowerings {
            let mut cap = l.requires.to_string();
            if cap.is_empty() {
                cap = guard.clone();
            }
            rows.push(vec![
                i.name.to_string(),
                l.backend.to_string(),
                cap,
                l.instruction.to_string(),
                i.krate.to_string(),
            ]);
        }
    }
    print_table(&["intrinsic", "backend", "capability", "instruction", "crate"], &rows);
    ExitCode::SUCCESS
}

/// Prints the code the arms matching `filter` and their `default` generate for `backend`'s first
/// reference profile the arm's guard admits.
fn show(filter: &str, backend: &str) -> ExitCode {
    use island_runtime::lowering::{self, Which};
    let Some(backend) = island_runtime::Backend::ALL.into_iter().find(|b| b.to_string() == backend) else {
        eprintln!("unknown backend `{backend}`");
        return ExitCode::from(2);
    };
    let host = match client_of("cpu") {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    for &entry in registry::arms().iter().filter(|e| e.name().contains(filter)) {
        let island_runtime::lifted::ProofSpec::Lifted(lifted) = &entry.proof else { continue };
        let Some(profile) =
            island_runtime::Profile::references(backend).into_iter().find(|p| island_runtime::proof::selects(entry, p))
        else {
            continue;
        };
        for which in [Which::Arm, Which::Default] {
            println!("// {} — {which:?} — {profile}", entry.name());
            match lowering::source(entry, lifted, &profile, which, &host) {
                Ok(code) => println!("{code}"),
                Err(e) => println!("// does not compile: {e}"),
            }
        }
    }
    ExitCode::SUCCESS
}

fn lower() -> ExitCode {
    use island_runtime::lowering::{self, Codegen};
    let host = match client_of("cpu") {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut rows = Vec::new();
    let mut failed = 0;
    for &i in island_runtime::intrinsic::intrinsics() {
        for l in i.lowerings {
            let codegen = Codegen::of(l.backend);
            let verdict = if !codegen.available() {
                "skipped (generator not built)".to_string()
            } else {
                match lowering::check_row(i, l, &host) {
                    Ok(()) => "emitted, absent from default".to_string(),
                    Err(e) => {
                        failed += 1;
                        format!("FAILED: {}", e.lines().next().unwrap_or_default())
                    }
                }
            };
            rows.push(vec![
                i.name.to_string(),
                l.backend.to_string(),
                codegen.name().to_string(),
                l.instruction.to_string(),
                verdict,
            ]);
        }
    }
    print_table(&["intrinsic", "backend", "generator", "instruction", "lowering"], &rows);
    if failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn list(json: bool) -> ExitCode {
    let arms = registry::arms();
    if json {
        let rows: Vec<_> = arms
            .iter()
            .map(|e| {
                serde_json::json!({
                    "crate": e.krate,
                    "island": e.site.id,
                    "arm": e.label(),
                    "guard": e.spec().guard.to_string(),
                    "proof": match e.proof { island_runtime::lifted::ProofSpec::Lifted(_) => "lifted", island_runtime::lifted::ProofSpec::Unprovable(_) => "none" },
                    "location": e.location(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows).expect("plain data serialises"));
        return ExitCode::SUCCESS;
    }
    let rows: Vec<Vec<String>> = arms
        .iter()
        .map(|e| {
            vec![
                e.site.id.to_string(),
                e.label().to_string(),
                e.spec().guard.to_string(),
                match e.proof {
                    island_runtime::lifted::ProofSpec::Lifted(l) => {
                        format!("lifted ({} inputs, cube {})", l.params.len(), l.cube_dim)
                    }
                    island_runtime::lifted::ProofSpec::Unprovable(_) => "none".into(),
                },
                e.location(),
            ]
        })
        .collect();
    print_table(&["island", "arm", "guard", "proof", "written at"], &rows);
    println!("{} accelerated arms in {} islands", arms.len(), {
        let mut ids: Vec<_> = arms.iter().map(|e| e.site.id).collect();
        ids.dedup();
        ids.len()
    });
    ExitCode::SUCCESS
}

#[allow(clippy::too_many_arguments)]
fn prove(
    runtime: &str,
    json: bool,
    lanes: Option<u32>,
    depth: Option<u32>,
    seed: Option<&str>,
    allow_unproven: bool,
    filter: Option<&str>,
) -> ExitCode {
    let Some(name) = RuntimeName::parse(runtime) else {
        eprintln!("unknown runtime `{runtime}`; expected one of {}", RuntimeName::list());
        return ExitCode::from(2);
    };
    let client = match name.client() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut options = match ProofOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if lanes.is_some() {
        options.lanes = lanes;
    }
    if let Some(d) = depth {
        options.depth = d.max(1);
    }
    if let Some(s) = seed {
        match island_runtime::proof::parse_seed(s) {
            Some(s) => options.seed = s,
            None => {
                eprintln!("`--seed {s}` is not a number");
                return ExitCode::from(2);
            }
        }
    }
    let arms: Vec<_> =
        registry::arms().iter().copied().filter(|e| filter.is_none_or(|f| e.name().contains(f))).collect();
    if arms.is_empty() {
        eprintln!("no registered arm matches");
        return ExitCode::from(2);
    }
    let start = Instant::now();
    let mut runs: Vec<ProofRun> = Vec::new();
    for (i, entry) in arms.iter().enumerate() {
        eprint!("[{}/{}] {} ...", i + 1, arms.len(), entry.name());
        let _ = std::io::stderr().flush();
        let t = Instant::now();
        let these = proof::prove(entry, &client, &options);
        let words: Vec<&str> = these.iter().map(|r| r.verdict_word()).collect();
        eprintln!(" {} ({:.1} s)", words.join(", "), t.elapsed().as_secs_f64());
        runs.extend(these);
    }
    let what = format!("{} arms on `{}` in {:.1} s", arms.len(), client.name(), start.elapsed().as_secs_f64());
    report(&runs, json, &what, options.seed, allow_unproven)
}

/// Prints runs as a table (or JSON) and turns them into an exit code.
fn report(runs: &[ProofRun], json: bool, what: &str, seed: u64, allow_unproven: bool) -> ExitCode {
    let unproven = runs.iter().filter(|r| matches!(r.verdict, proof::Verdict::Unproven { .. })).count();
    let device_only = runs.iter().filter(|r| matches!(r.verdict, proof::Verdict::DeviceEvidenceOnly { .. })).count();
    let declined = runs.iter().filter(|r| matches!(r.verdict, proof::Verdict::Declined { .. })).count();
    let failed = runs.iter().filter(|r| !r.passed()).count() - unproven - device_only - declined;
    if json {
        println!("{}", serde_json::to_string_pretty(runs).expect("plain data serialises"));
    } else {
        let rows: Vec<Vec<String>> = runs
            .iter()
            .map(|r| {
                vec![
                    r.island.to_string(),
                    r.arm.to_string(),
                    r.profile.clone(),
                    format!("{} ({})", r.executed_on, r.lowering),
                    r.verdict_word().to_string(),
                    r.contract.clone(),
                    r.inputs.to_string(),
                    format!("{:.0} ms", r.time.as_secs_f64() * 1e3),
                ]
            })
            .collect();
        print_table(&["island", "arm", "semantics of", "executed on", "verdict", "contract", "inputs", "time"], &rows);
        for r in runs.iter().filter(|r| !r.passed()) {
            if let Some(d) = r.detail() {
                println!("\n{} `{}` [{}]: {}", r.island, r.arm, r.verdict_word(), d);
            }
        }
        println!(
            "\n{} runs, {what}: {} passed, {} failed, {} declined, {} unproven, {} device evidence only (seed {seed:#x})",
            runs.len(),
            runs.len() - failed - unproven - device_only - declined,
            failed,
            declined,
            unproven,
            device_only,
        );
    }
    if failed > 0 || (unproven > 0 && !allow_unproven) { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
