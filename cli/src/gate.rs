//! `islands gate`: both halves of the gate for every arm the present device selects, written to
//! the ledger of the crate that owns each island.

use crate::table::print_table;
use island_runtime::gate::{self, GateOptions};
use island_runtime::ledger::{self, Decision, Ledger, Record};
use island_runtime::registry;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// The ledgers of this build, by crate: the file where the crate was built when it is readable
/// (so successive gate runs accumulate), the embedded copy otherwise.
pub fn ledgers() -> Result<BTreeMap<&'static str, (PathBuf, Ledger)>, String> {
    let mut all = BTreeMap::new();
    for e in ledger::embedded() {
        let text = std::fs::read_to_string(e.path).unwrap_or_else(|_| e.text.to_string());
        let parsed = Ledger::parse(&text).map_err(|err| format!("{}: {err}", e.path))?;
        all.insert(e.krate, (PathBuf::from(e.path), parsed));
    }
    Ok(all)
}

pub struct Options {
    pub gate: GateOptions,
    /// Write `<dir>/<crate>.json` instead of each crate's own `ledger.json`.
    pub write_dir: Option<PathBuf>,
    pub filter: Option<String>,
}

pub fn run(
    device: &island_runtime::__private::cubecl::prelude::Client,
    cpu: &island_runtime::__private::cubecl::prelude::Client,
    options: &Options,
) -> Result<ExitCode, String> {
    let fingerprint = island_runtime::Fingerprint::of_client(device)
        .ok_or_else(|| format!("`{}` is not a device islands has arms for", device.name()))?;
    eprintln!("device: {fingerprint}");
    let mut ledgers = ledgers()?;
    let mut rows = Vec::new();
    let mut failed = 0;
    for &entry in registry::arms() {
        if options.filter.as_deref().is_some_and(|f| !entry.name().contains(f)) {
            continue;
        }
        let Some(mut record) = gate::gate(entry, device, cpu, &options.gate) else { continue };
        eprintln!("{} {}", record.decision.word(), entry.name());
        let Some((_, ledger)) = ledgers.get_mut(entry.krate) else {
            eprintln!("  `{}` embeds no ledger (`island_runtime::ledger!()`): this record is not kept", entry.krate);
            continue;
        };
        // An unchanged verdict on unchanged code keeps its date: re-gating changes only timings.
        if let Some(old) = ledger.find(&record.island, &record.arm, &record.device)
            && old.decision == record.decision
            && old.code == record.code
        {
            record.date = old.date.clone();
        }
        failed += (record.decision == Decision::Failed) as usize;
        rows.push(row(&record));
        ledger.upsert(record);
    }
    print_table(&["island", "arm", "decision", "arm µs", "default µs", "speedup", "instructions", "note"], &rows);
    if let Some(dir) = &options.write_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for (krate, (path, ledger)) in &ledgers {
        let path = match &options.write_dir {
            Some(dir) => dir.join(format!("{krate}.json")),
            None => path.clone(),
        };
        std::fs::write(&path, ledger.to_text()).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("ledger of {krate}: {} records → {}", ledger.records.len(), path.display());
    }
    println!("\n{} arms gated on {fingerprint}: {failed} not bit-exact", rows.len());
    Ok(if failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
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
