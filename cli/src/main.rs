//! `islands`: the SDK's command line.
//!
//! ```text
//! islands list | intrinsics | lower
//! islands prove [--runtime cpu|cuda|hip|vulkan|metal|webgpu] [--json] [--lanes N] [--depth D] [--seed S] [FILTER]
//! islands conform --runtime R      islands probe --runtime R
//! islands gate --runtime R [--write DIR] [--bit-exact-only] [--ops [--max-values N]] [FILTER]
//! islands scoreboard --cells [--format markdown|html]
//! islands scoreboard [--format json|markdown|html]
//! islands example NAME --runtime R islands bench --runtime R
//! islands tensor-core --runtime cuda [--tiles N] [--emulated N] [--sample DIR]
//! ```
//!
//! This file is the command line's definition and its dispatch; each subcommand is the module
//! of its name, and returns its [`Outcome`] or its own error, which [`CliError`] gathers. The
//! exit code is decided here alone: 0 pass, 1 fail, 2 error (clap's own usage errors exit 2 too).

use clap::{Parser, Subcommand};
use error::Outcome;
use std::process::ExitCode;

mod args;
mod bench;
mod conform;
mod cublaslt;
mod error;
mod example;
mod gate;
mod ggml;
mod intrinsics;
mod list;
mod lower;
mod peers;
mod probe;
mod prove;
mod report;
mod scoreboard;
mod scoreboard_cells;
mod table;
mod tensor_core;

// Link the crates whose islands this binary lists.
use island_consumer as _;
use island_examples as _;
use island_intrinsics as _;
use island_llm as _;
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
    List(list::Args),
    /// Proves every arm (or those whose name contains FILTER) against `default`.
    Prove(prove::Args),
    /// Runs every arm the device selects natively on it and emulated on the CPU, and compares;
    /// then runs each example kernel on the device against the CPU `default` and the reference.
    Conform(conform::Args),
    /// Gates every arm the device selects: bit-exact (CPU proof under the device's profile, and
    /// native against emulation on the device) and at least 97 % as fast as `default` on a
    /// kernel-only bench; writes the records to each crate's ledger.
    Gate(gate::Args),
    /// The matrix island arm × device from the ledgers: flipped, declined, failed, unverified, stale.
    Scoreboard(scoreboard::Args),
    /// The table of intrinsics: backend, capability, instruction.
    Intrinsics,
    /// Compiles each intrinsic's check for each backend of the table (no GPU needed) and shows
    /// whether the instruction appears in the arm and is absent from `default`.
    Lower(lower::Args),
    /// Kernel-only benchmarks of the examples, variants side by side, results checked against
    /// the CPU `default` in the same run.
    Bench(bench::Args),
    /// Measures a device's float semantics against the CPU: division, square root, contraction
    /// into FMA, and the addition order of its plane sum.
    Probe(probe::Args),
    /// The device's f16 and bf16 tensor-core MMA against the measured model of its arithmetic,
    /// over the adversarial tile set, with a wrong model as the fixture that must fail.
    TensorCore(tensor_core::Args),
    /// Runs an example kernel on a runtime and checks it byte for byte against the CPU.
    Example(example::Args),
}

fn main() -> ExitCode {
    // Warnings and errors of the SDK (an arm a device cannot run exactly, a ledger problem) show
    // on standard error; `RUST_LOG=info` shows more.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match settings().and_then(|()| dispatch(Cli::parse().command)) {
        Ok(Outcome::Pass) => ExitCode::SUCCESS,
        Ok(Outcome::Fail) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

/// Why a subcommand could not run to a verdict (exit code 2): a setting refused before it
/// started, or the subcommand's own error. Its text is the whole message `main` prints on
/// standard error.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// An `ISLANDS_*` setting of the environment is refused (`docs/settings.md`).
    #[error("islands: {0}")]
    Setting(#[from] island_runtime::settings::SettingError),
    /// A setting every launch would consult (the policy, a ledger) is wrong.
    #[error("islands: {0}")]
    Launch(#[from] island_runtime::policy::SettingsError),
    /// A setting of the cells' dispatch (`ISLANDS_CANDIDATE`, `ISLANDS_CELLS`) is wrong.
    #[error("islands: {0}")]
    Dispatch(#[from] island_runtime::cell::CellError),
    #[error(transparent)]
    Client(#[from] island_runtime::runtimes::ClientError),
    #[error(transparent)]
    Prove(#[from] prove::ProveError),
    #[error(transparent)]
    Conform(#[from] conform::ConformError),
    #[error(transparent)]
    Gate(#[from] gate::GateError),
    #[error(transparent)]
    Scoreboard(#[from] scoreboard::ScoreboardError),
    #[error(transparent)]
    Bench(#[from] bench::BenchError),
    #[error(transparent)]
    Probe(#[from] probe::ProbeError),
    #[error(transparent)]
    TensorCore(#[from] tensor_core::TensorCoreError),
    #[error(transparent)]
    Example(#[from] example::ExampleError),
}

/// Every `ISLANDS_*` setting (`docs/settings.md`), then those every launch and the cells'
/// dispatch would consult: a wrong one is refused here, before the command line is read and
/// before any work; an unknown `ISLANDS_` name is warned about.
fn settings() -> Result<(), CliError> {
    island_runtime::settings::check_all()?;
    island_runtime::policy::settings().map_err(Clone::clone)?;
    island_runtime::dispatch::settings().map_err(Clone::clone)?;
    Ok(())
}

fn dispatch(command: Command) -> Result<Outcome, CliError> {
    match command {
        Command::List(args) => Ok(list::run(args)),
        Command::Prove(args) => Ok(prove::run(args)?),
        Command::Conform(args) => Ok(conform::run(args)?),
        Command::Gate(args) => Ok(gate::run(args)?),
        Command::Scoreboard(args) => Ok(scoreboard::run(args)?),
        Command::Intrinsics => Ok(intrinsics::run()),
        Command::Lower(args) => Ok(lower::run(args)?),
        Command::Bench(args) => Ok(bench::run(args)?),
        Command::Probe(args) => Ok(probe::run(args)?),
        Command::TensorCore(args) => Ok(tensor_core::run(args)?),
        Command::Example(args) => Ok(example::run(args)?),
    }
}
