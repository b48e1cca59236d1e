//! `islands`: lists every registered island arm and proves them on a runtime.
//!
//! ```text
//! islands list
//! islands prove [--runtime cpu|vulkan|wgsl|cuda] [--json] [--lanes N] [--seed S] [FILTER]
//! ```

use clap::{Parser, Subcommand};
use island_runtime::proof::{self, ProofOptions, ProofRun};
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

// Link the crates whose islands this binary lists.
use island_examples as _;
use island_intrinsics as _;

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
        /// Base seed (decimal or 0x-hex); replays a reported failure.
        #[arg(long)]
        seed: Option<String>,
        /// Exit successfully even when some arm is unproven.
        #[arg(long)]
        allow_unproven: bool,
        /// Only arms whose name contains this.
        filter: Option<String>,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::List { json } => list(json),
        Command::Prove { runtime, json, lanes, seed, allow_unproven, filter } => {
            prove(&runtime, json, lanes, seed.as_deref(), allow_unproven, filter.as_deref())
        }
    }
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
                    "arm": e.spec().label,
                    "guard": e.spec().guard.to_string(),
                    "proof": match e.proof { proof::ProofSpec::Lifted(_) => "lifted", proof::ProofSpec::Unprovable(_) => "none" },
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
                e.spec().label.to_string(),
                e.spec().guard.to_string(),
                match e.proof {
                    proof::ProofSpec::Lifted(l) => format!("lifted ({} inputs, cube {})", l.params.len(), l.cube_dim),
                    proof::ProofSpec::Unprovable(_) => "none".into(),
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

fn prove(runtime: &str, json: bool, lanes: Option<u32>, seed: Option<&str>, allow_unproven: bool, filter: Option<&str>) -> ExitCode {
    let Some(name) = RuntimeName::parse(runtime) else {
        eprintln!("unknown runtime `{runtime}`; expected one of cpu, vulkan, wgsl, cuda");
        return ExitCode::from(2);
    };
    let client = match name.client() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut options = ProofOptions::default();
    if lanes.is_some() {
        options.lanes = lanes;
    }
    if let Some(s) = seed {
        match parse_seed(s) {
            Some(s) => options.seed = s,
            None => {
                eprintln!("`--seed {s}` is not a number");
                return ExitCode::from(2);
            }
        }
    }
    let arms: Vec<_> = registry::arms()
        .iter()
        .copied()
        .filter(|e| filter.is_none_or(|f| e.name().contains(f)))
        .collect();
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
    let failed = runs.iter().filter(|r| !r.passed() && r.verdict_word() != "unproven").count();
    let unproven = runs.iter().filter(|r| r.verdict_word() == "unproven").count();
    if json {
        println!("{}", serde_json::to_string_pretty(&runs).expect("plain data serialises"));
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
            "\n{} runs of {} arms on `{}` in {:.1} s: {} passed, {} failed, {} unproven (seed {:#x})",
            runs.len(),
            arms.len(),
            client.name(),
            start.elapsed().as_secs_f64(),
            runs.len() - failed - unproven,
            failed,
            unproven,
            options.seed
        );
    }
    if failed > 0 || (unproven > 0 && !allow_unproven) { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn parse_seed(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(header.to_vec());
    line(widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().iter().map(String::as_str).collect());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
