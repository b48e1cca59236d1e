//! `islands prove`: every arm (or those whose name contains a filter) proven against `default`
//! on one runtime, reported as a table or JSON.

use crate::error::Outcome;
use crate::report::report;
use island_runtime::proof;
use island_runtime::proof_run::{ProofOptions, ProofRun};
use island_runtime::registry;
use island_runtime::registry::ArmEntry;
use island_runtime::runtimes::{ClientError, RuntimeName};
use island_runtime::settings::SettingError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The runtime that executes both the arm and `default`.
    #[arg(long, default_value = "cpu", value_parser = crate::args::runtime)]
    runtime: RuntimeName,
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
    #[arg(long, value_parser = crate::args::seed)]
    seed: Option<u64>,
    /// Exit successfully even when some arm is unproven (it is still reported, never as proven).
    #[arg(long)]
    allow_unproven: bool,
    /// Arms proven at once (default: the machine's cores). Each proof compiles its kernels on
    /// one core, so proving arms side by side is what keeps every core busy.
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Only arms whose name contains this.
    filter: Option<String>,
}

/// Why the proofs did not run.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Setting(#[from] SettingError),
    #[error("no registered arm matches")]
    NoArmMatches,
}

pub fn run(args: Args) -> Result<Outcome, ProveError> {
    let client = args.runtime.client()?;
    let mut options = ProofOptions::from_env()?;
    if args.lanes.is_some() {
        options.lanes = args.lanes;
    }
    if let Some(d) = args.depth {
        options.depth = d.max(1);
    }
    if let Some(s) = args.seed {
        options.seed = s;
    }
    let filter = args.filter.as_deref();
    let arms: Vec<_> =
        registry::arms().iter().copied().filter(|e| filter.is_none_or(|f| e.name().contains(f))).collect();
    if arms.is_empty() {
        return Err(ProveError::NoArmMatches);
    }
    let start = Instant::now();
    let runs = prove_all(&arms, &client, &options, args.jobs);
    let what = format!(
        "{} arms on `{}` in {:.1} s",
        arms.len(),
        island_runtime::device::runtime_name(&client),
        start.elapsed().as_secs_f64()
    );
    Ok(report(&runs, args.json, &what, options.seed, args.allow_unproven))
}

/// The runs of every arm, in the order of `arms`, proven by `jobs` workers that each take the
/// next arm not yet taken; each arm's line is printed when it ends. A proof's verdict does not
/// depend on what runs beside it: each arm draws its inputs from its own seed.
fn prove_all(
    arms: &[&'static ArmEntry],
    client: &cubecl::prelude::Client,
    options: &ProofOptions,
    jobs: Option<usize>,
) -> Vec<ProofRun> {
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).clamp(1, arms.len());
    let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let worker = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(entry) = arms.get(i) else { break };
            let t = Instant::now();
            let these = proof::prove(entry, client, options);
            let words: Vec<&str> = these.iter().map(|r| r.verdict_word()).collect();
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            let elapsed = t.elapsed().as_secs_f64();
            eprintln!("[{n}/{}] {} ... {} ({elapsed:.1} s)", arms.len(), entry.name(), words.join(", "));
            mine.push((i, these));
        }
        mine
    };
    let mut runs: Vec<(usize, Vec<ProofRun>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs).map(|_| scope.spawn(worker)).collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    runs.sort_by_key(|(i, _)| *i);
    runs.into_iter().flat_map(|(_, r)| r).collect()
}
