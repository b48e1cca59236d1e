//! `islands prove`: every arm (or those whose name contains a filter) proven against `default`
//! on one runtime, reported as a table or JSON.

use crate::error::{CliError, Outcome};
use crate::report::report;
use island_runtime::proof;
use island_runtime::proof_run::{ProofOptions, ProofRun};
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use std::io::Write;
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
    /// Only arms whose name contains this.
    filter: Option<String>,
}

pub fn run(args: Args) -> Result<Outcome, CliError> {
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
        return Err("no registered arm matches".into());
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
    Ok(report(&runs, args.json, &what, options.seed, args.allow_unproven))
}
