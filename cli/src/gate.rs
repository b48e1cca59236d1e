//! `islands gate`: both halves of the gate for every arm the present device selects, written to
//! the ledger of the crate that owns each island.

use crate::error::{FileError, NotADevice, Outcome};
use crate::table::print_table;
use cubecl::prelude::Client;
use island_runtime::cell;
use island_runtime::cell_gate::{self, CellOptions};
use island_runtime::cell_record::{CellDecision, CellRecord};
use island_runtime::embedded;
use island_runtime::gate::{self, GateOptions};
use island_runtime::ledger::Ledger;
use island_runtime::proof_run::ProofOptions;
use island_runtime::record;
use island_runtime::record::{Decision, Record};
use island_runtime::registry;
use island_runtime::runtimes::RuntimeName;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The device runtime (vulkan, cuda).
    #[arg(long, value_parser = crate::args::runtime)]
    runtime: RuntimeName,
    /// Write `DIR/<crate>.json` instead of each crate's `ledger.json`. A file already there is
    /// the starting point (so gates of several devices or runtimes, written to one DIR, gather
    /// in one ledger per crate); otherwise the crate's committed ledger is. Each record is
    /// written as soon as it is measured, so a run cut short keeps what it measured.
    #[arg(long)]
    write: Option<PathBuf>,
    /// The speed half's pass mark: `default`'s time / the arm's.
    #[arg(long, default_value_t = record::DEFAULT_THRESHOLD)]
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
    /// Gate the cells of "verify, then delete" at the kernel level instead of the arms: every
    /// registered op's twin, the twin forced to `default` and every incumbent of the device, at
    /// the op's shapes (`island_runtime::cell_gate`).
    #[arg(long)]
    ops: bool,
    /// With `--ops`: only shapes of at most this many values (rows × cols).
    #[arg(long, requires = "ops")]
    max_values: Option<usize>,
    /// Only arms (with `--ops`: cells) whose name contains this.
    filter: Option<String>,
}

/// Why a gate run could not reach its records.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Setting(#[from] island_runtime::settings::SettingError),
    #[error(transparent)]
    Client(#[from] island_runtime::runtimes::ClientError),
    #[error(transparent)]
    NotADevice(#[from] NotADevice),
    #[error(transparent)]
    Ledger(#[from] embedded::CommittedError),
    #[error(transparent)]
    File(#[from] FileError),
    #[error("`{path}` (the gate's --write folder) does not parse as a ledger: {source}")]
    Written { path: PathBuf, source: island_runtime::ledger::ParseError },
    #[error("the cell registry is inconsistent:\n  {}", .0.join("\n  "))]
    Registry(Vec<String>),
}

pub fn run(args: Args) -> Result<Outcome, GateError> {
    let Args { runtime, write, threshold, lanes, dispatches, rounds, bit_exact_only, ops, max_values, filter } = args;
    let proof = ProofOptions::from_env()?;
    if ops {
        let cells = CellOptions { seed: proof.seed, threshold, dispatches, rounds, speed: !bit_exact_only, max_values };
        let device = runtime.client()?;
        let cpu = RuntimeName::Cpu.client()?;
        return Ok(run_ops(&device, &cpu, &cells, write.as_deref(), filter.as_deref())?.into());
    }
    let gate = GateOptions { proof, threshold, lanes, dispatches, rounds, speed: !bit_exact_only };
    let options = Options { gate, write_dir: write, filter };
    let device = runtime.client()?;
    let cpu = RuntimeName::Cpu.client()?;
    Ok(run_on(&device, &cpu, &options)?.into())
}

pub struct Options {
    pub gate: GateOptions,
    /// Write `<dir>/<crate>.json` instead of each crate's own `ledger.json`.
    pub write_dir: Option<PathBuf>,
    pub filter: Option<String>,
}

/// Gates every arm `device` selects and writes the ledgers; `Ok(false)` when one is not
/// bit-exact.
pub fn run_on(device: &Client, cpu: &Client, options: &Options) -> Result<bool, GateError> {
    let fingerprint = island_runtime::Device::of(device)
        .fingerprint
        .clone()
        .ok_or_else(|| NotADevice(island_runtime::device::runtime_name(device).to_string()))?;
    eprintln!("device: {fingerprint}");
    let mut ledgers = starting_ledgers(options.write_dir.as_deref())?;
    let mut rows = Vec::new();
    let mut failed = 0;
    for &entry in registry::arms() {
        if options.filter.as_deref().is_some_and(|f| !entry.name().contains(f)) {
            continue;
        }
        let Some(record) = gate::gate(entry, device, cpu, &options.gate) else { continue };
        eprintln!("{} {}", record.decision.word(), entry.name());
        let Some((_, ledger)) = ledgers.get_mut(entry.krate) else {
            eprintln!("  `{}` embeds no ledger (`island_runtime::ledger!()`): this record is not kept", entry.krate);
            continue;
        };
        failed += (record.decision == Decision::Failed) as usize;
        rows.push(row(&record));
        ledger.keep(record);
        // Kept on disk as soon as it is measured: a run cut short (a time limit, a crash of
        // the driver) loses none of the records made before.
        write_ledger(entry.krate, &ledgers[entry.krate], options.write_dir.as_deref())?;
    }
    print_table(&["island", "arm", "decision", "arm µs", "default µs", "speedup", "instructions", "note"], &rows);
    write_ledgers(&ledgers, options.write_dir.as_deref())?;
    println!("\n{} arms gated on {fingerprint}: {failed} not bit-exact", rows.len());
    Ok(failed == 0)
}

fn row(r: &Record) -> Vec<String> {
    let (a, d, s) = match &r.speed {
        Some(s) => (format!("{:.2}", s.arm_us), format!("{:.2}", s.default_us), format!("{:.3}×", s.speedup)),
        None => ("-".into(), "-".into(), "-".into()),
    };
    vec![
        r.island.clone(),
        r.arm.clone(),
        r.decision.word().to_string(),
        a,
        d,
        s,
        r.conformance.instructions.join(" "),
        r.note.clone().unwrap_or_default(),
    ]
}

/// Each crate's ledger a gate adds its records to: `<dir>/<crate>.json` where `write_dir` holds
/// one, else the committed ledger.
fn starting_ledgers(write_dir: Option<&Path>) -> Result<BTreeMap<&'static str, (PathBuf, Ledger)>, GateError> {
    let mut ledgers = embedded::committed()?;
    let Some(dir) = write_dir else { return Ok(ledgers) };
    for (krate, (_, ledger)) in ledgers.iter_mut() {
        let path = dir.join(format!("{krate}.json"));
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(FileError { path, source }.into()),
        };
        *ledger = Ledger::parse(&text).map_err(|source| GateError::Written { path: path.clone(), source })?;
        eprintln!("ledger of {krate}: continuing {} ({} records)", path.display(), ledger.records.len());
    }
    Ok(ledgers)
}

/// Writes each crate's ledger, to `<dir>/<crate>.json` with `write_dir`, and says where.
fn write_ledgers(
    ledgers: &BTreeMap<&'static str, (PathBuf, Ledger)>,
    write_dir: Option<&Path>,
) -> Result<(), FileError> {
    for (krate, entry) in ledgers {
        let path = write_ledger(krate, entry, write_dir)?;
        let ledger = &entry.1;
        eprintln!(
            "ledger of {krate}: {} records, {} cell records → {}",
            ledger.records.len(),
            ledger.cells.len(),
            path.display()
        );
    }
    Ok(())
}

/// Writes one crate's ledger (`(committed path, ledger)`), to `<dir>/<crate>.json` with
/// `write_dir` (made if missing); returns the path written.
fn write_ledger(
    krate: &str,
    (path, ledger): &(PathBuf, Ledger),
    write_dir: Option<&Path>,
) -> Result<PathBuf, FileError> {
    let path = match write_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| FileError { path: dir.to_path_buf(), source })?;
            dir.join(format!("{krate}.json"))
        }
        None => path.clone(),
    };
    std::fs::write(&path, ledger.to_text()).map_err(|source| FileError { path: path.clone(), source })?;
    Ok(path)
}

/// Gates every registered cell (whose key contains `filter`) on `device` and writes the cell
/// records; `Ok(false)` when a twin is not bit-exact or a cell could not be gated.
pub fn run_ops(
    device: &Client,
    cpu: &Client,
    options: &CellOptions,
    write_dir: Option<&Path>,
    filter: Option<&str>,
) -> Result<bool, GateError> {
    let problems = cell::registry_problems();
    if !problems.is_empty() {
        return Err(GateError::Registry(problems));
    }
    let mut ledgers = starting_ledgers(write_dir)?;
    let mut ok = true;
    let mut rows = Vec::new();
    for registered in cell::ops() {
        let key = registered.op.key;
        if filter.is_some_and(|f| !key.to_string().contains(f)) {
            continue;
        }
        eprintln!("cell {key} ({}) on {}", registered.krate, island_runtime::device::runtime_name(device));
        let record = match cell_gate::gate_cell(registered, device, cpu, options) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("  {e}");
                rows.push(vec![key.to_string(), "-".into(), "error".into(), "-".into(), e.to_string()]);
                ok = false;
                continue;
            }
        };
        print_cell(&record);
        ok &= record.decision != CellDecision::Failed;
        rows.push(vec![
            key.to_string(),
            record.device.runtime.clone(),
            record.decision.word().into(),
            record.ratio.map_or("-".into(), |r| format!("{r:.3}×")),
            match (record.exact_incumbent(), &record.incumbent) {
                (Some(name), _) => name.to_string(),
                (None, Some(name)) if record.decision.keeps_incumbent() => format!("none (`{name}` is not bit-exact)"),
                _ => String::new(),
            },
        ]);
        match ledgers.get_mut(registered.krate) {
            Some((_, ledger)) => {
                ledger.upsert_cell(record);
                write_ledger(registered.krate, &ledgers[registered.krate], write_dir)?;
            }
            None => eprintln!(
                "  `{}` embeds no ledger (`island_runtime::ledger!()`): this record is not kept",
                registered.krate
            ),
        }
    }
    println!();
    print_table(&["cell", "runtime", "decision", "twin vs fastest incumbent", "incumbent that stays"], &rows);
    write_ledgers(&ledgers, write_dir)?;
    Ok(ok)
}

/// Each shape's candidates: bit-exactness against the reference and kernel-only times.
fn print_cell(r: &CellRecord) {
    for s in &r.shapes {
        let timing = if s.timing.is_empty() { String::new() } else { format!(", {} times", s.timing) };
        println!("  {} {}×{} (CPU `default` = reference on {} rows{timing}):", s.name, s.rows, s.cols, s.oracle_rows);
        for c in &s.candidates {
            let exact = match (&c.error, c.differing) {
                (Some(e), _) => format!("ERROR {e}"),
                (None, 0) => format!("bit-exact on all {} values", c.values),
                (None, n) => format!("NOT bit-exact: {n} of {} values differ, up to {} ulp", c.values, c.max_ulp),
            };
            let mut time =
                c.us.map_or(String::new(), |[lo, mid, hi]| format!(", {mid:.2} µs median ({lo:.2}–{hi:.2})"));
            if let Some([_, eager, _]) = c.eager_us {
                time.push_str(&format!(", eager {eager:.2} µs"));
            }
            println!("    {:<16} {exact}{time}", c.name);
        }
        if let Some(ratio) = s.ratio {
            println!("    twin at {ratio:.3}× the fastest incumbent");
        }
    }
    println!("  → {}{}", r.why(), r.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default());
}
