//! `islands scoreboard`: the matrix island arm × device from the ledgers of this build.
//!
//! A cell is `flipped` (bit-exact and at least 97 % as fast, with the speedup), `declined` (slower,
//! or a measured divergence of the device), `failed` (not bit-exact, with the first differing
//! index), `unverified` (no record, or a gate that could not conclude), or `stale` (the arm's or
//! `default`'s generated code changed since the record, or a newer driver of the same device
//! has a record).

use crate::error::Outcome;
use cubecl::prelude::Client;
use island_runtime::embedded::{self, CommittedError};
use island_runtime::lowering::Codegen;
use island_runtime::record::{Decision, Record};
use island_runtime::runtimes::RuntimeName;
use island_runtime::{Expect, Fingerprint, registry};
use serde::Serialize;
use std::fmt::Write as _;

/// One cell of the matrix.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub island: String,
    pub arm: String,
    pub device: String,
    /// `flipped`, `declined`, `failed`, `unverified`, `stale`, or `-` (not selected there).
    pub status: &'static str,
    /// The figure or fact behind it: the speedup, the divergence, the first difference, why stale.
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<Record>,
}

#[derive(clap::Args)]
pub struct Args {
    /// How the table is written, on stdout (`html`: one self-contained page).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The cells of "verify, then delete" (op × quant type × device) instead of the arms.
    #[arg(long)]
    cells: bool,
}

/// Why the scoreboard could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum ScoreboardError {
    #[error(transparent)]
    Client(#[from] island_runtime::runtimes::ClientError),
    #[error(transparent)]
    Ledger(#[from] CommittedError),
    /// The ledgers hold records of a code generator this build lacks, so whether their code is
    /// unchanged cannot be checked.
    #[error(
        "the ledgers hold {codegen} records, and this build has no {codegen} generator to check that their code is \
         unchanged: build with `--features {feature}`"
    )]
    NoGenerator { codegen: String, feature: &'static str },
}

pub fn run(args: Args) -> Result<Outcome, ScoreboardError> {
    let format = args.format;
    if args.cells {
        let rows = crate::scoreboard_cells::rows()?;
        match format {
            Format::Json => println!(
                "{}",
                serde_json::to_string_pretty(&rows.iter().map(|r| &r.record).collect::<Vec<_>>())
                    .expect("plain data serialises")
            ),
            Format::Markdown => println!("{}", crate::scoreboard_cells::markdown(&rows)),
            Format::Html => println!("{}", crate::scoreboard_cells::html(&rows)),
            Format::Text => crate::scoreboard_cells::text(&rows),
        }
        return Ok(Outcome::Pass);
    }
    let host = RuntimeName::Cpu.client()?;
    print(&host, format)?;
    Ok(Outcome::Pass)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Html,
}

/// Every cell: one per (registered arm, device with at least one record).
pub fn cells(host: &Client) -> Result<(Vec<Fingerprint>, Vec<Cell>), ScoreboardError> {
    let records: Vec<Record> = embedded::committed()?.into_values().flat_map(|(_, l)| l.records).collect();
    // A record is current only if its code hashes again to what it recorded: a build without
    // the record's code generator cannot tell, and must not guess.
    for r in &records {
        if let Some(feature) =
            Codegen::ALL.iter().find(|c| c.name() == r.code.codegen).and_then(|c| c.missing_feature())
        {
            return Err(ScoreboardError::NoGenerator { codegen: r.code.codegen.clone(), feature });
        }
    }
    let mut devices: Vec<Fingerprint> = records.iter().map(|r| r.device.clone()).collect();
    devices.sort();
    devices.dedup();
    let mut cells = Vec::new();
    for &entry in registry::arms().iter().filter(|e| e.expect == Expect::Equal) {
        for device in &devices {
            let label = entry.label();
            let record = records.iter().find(|r| r.island == entry.site.id && r.arm == label && r.device == *device);
            let selected = island_runtime::codegen::code_hash::hash_profile(device)
                .is_some_and(|p| island_runtime::tag::registry::selects(entry, &p));
            let (status, detail) = match record {
                None if !selected => ("-", "the device does not select this arm".to_string()),
                None => ("unverified", "no record".to_string()),
                Some(r) => status_of(entry, r, &records, host),
            };
            cells.push(Cell {
                island: entry.site.id.to_string(),
                arm: label.to_string(),
                device: device.to_string(),
                status,
                detail,
                record: record.cloned(),
            });
        }
    }
    Ok((devices, cells))
}

fn status_of(
    entry: &'static island_runtime::ArmEntry,
    r: &Record,
    all: &[Record],
    host: &Client,
) -> (&'static str, String) {
    if let Some(why) = island_runtime::staleness::arm(entry, r, host) {
        return ("stale", format!("{why} ({}, gated {})", r.code.codegen, r.date));
    }
    if let Some(newer) = island_runtime::staleness::superseded(r, all) {
        return ("stale", format!("driver {} has a newer record", newer.device.driver));
    }
    let speed = |r: &Record| r.speed.as_ref().map(|s| format!("{:.3}× default", s.speedup)).unwrap_or_default();
    match r.decision {
        Decision::Flipped => ("flipped", speed(r)),
        Decision::DeclinedSlow => ("declined", format!("slower: {}", speed(r))),
        Decision::DeclinedDivergence => (
            "declined",
            r.conformance.report.as_deref().and_then(|t| t.lines().next()).unwrap_or("measured divergence").to_string(),
        ),
        Decision::Failed => (
            "failed",
            r.conformance
                .report
                .as_deref()
                .and_then(|t| t.lines().find(|l| l.contains("first differing")))
                .unwrap_or("not bit-exact")
                .trim()
                .to_string(),
        ),
        Decision::DeclinedTolerance => ("declined", format!("not bit-exact here: {}", r.proof.contract)),
        Decision::DeclinedMachineCode => (
            "declined",
            format!(
                "machine code lacks {}",
                r.conformance.machine_code.as_ref().map(|m| m.missing.join(", ")).unwrap_or_default()
            ),
        ),
        Decision::Unverified => ("unverified", r.note.clone().unwrap_or_default()),
    }
}

pub fn print(host: &Client, format: Format) -> Result<(), ScoreboardError> {
    let (devices, cells) = cells(host)?;
    let text = match format {
        Format::Json => serde_json::to_string_pretty(&cells).expect("plain data serialises"),
        Format::Markdown => markdown(&devices, &cells),
        Format::Html => html(&devices, &cells),
        Format::Text => {
            let header: Vec<String> =
                std::iter::once("island arm".to_string()).chain(devices.iter().map(short)).collect();
            let rows = matrix(&devices, &cells, |c| {
                match (c.status, c.record.as_ref().map(|r| (r.decision, r.speed.as_ref()))) {
                    ("flipped" | "declined", Some((_, Some(s)))) => format!("{} {:.3}×", c.status, s.speedup),
                    ("declined", Some((Decision::DeclinedDivergence, _))) => "declined (divergence)".into(),
                    (s, _) => s.to_string(),
                }
            });
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            crate::table::print_table(&header, &rows);
            for (i, d) in devices.iter().enumerate() {
                println!("[{}] {d}", i + 1);
            }
            return Ok(());
        }
    };
    println!("{text}");
    Ok(())
}

fn short(d: &Fingerprint) -> String {
    format!("{} {}", d.runtime, d.device.split(" (").next().unwrap_or(&d.device))
}

fn matrix(devices: &[Fingerprint], cells: &[Cell], show: impl Fn(&Cell) -> String) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for chunk in cells.chunks(devices.len().max(1)) {
        let Some(first) = chunk.first() else { continue };
        let mut row = vec![format!("{} `{}`", first.island, first.arm)];
        row.extend(chunk.iter().map(&show));
        rows.push(row);
    }
    rows
}

fn markdown(devices: &[Fingerprint], cells: &[Cell]) -> String {
    let mut out = String::from("| island, arm |");
    for d in devices {
        let _ = write!(out, " {} |", short(d));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(devices.len()));
    out.push('\n');
    for row in matrix(devices, cells, |c| {
        if c.status == "-" {
            "-".to_string()
        } else if c.detail.is_empty() {
            format!("**{}**", c.status)
        } else {
            format!("**{}** {}", c.status, c.detail)
        }
    }) {
        let row: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
    for d in devices {
        let _ = writeln!(out, "- {}: {d}", short(d));
    }
    out
}

/// A cell's compact figure (the speedup) where it has one.
fn figure(c: &Cell) -> Option<String> {
    let r = c.record.as_ref()?;
    let s = r.speed.as_ref()?;
    matches!((c.status, r.decision), ("flipped", _) | ("declined", Decision::DeclinedSlow))
        .then(|| format!("{:.2}×", s.speedup))
}

fn html(devices: &[Fingerprint], cells: &[Cell]) -> String {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    // One legend entry per cause: every cell without a compact figure points at its cause.
    let mut causes: Vec<(&'static str, String)> = Vec::new();
    for c in cells.iter().filter(|c| figure(c).is_none() && c.status != "-") {
        let detail = if c.detail.is_empty() { c.status.to_string() } else { c.detail.clone() };
        if !causes.iter().any(|(s, d)| *s == c.status && *d == detail) {
            causes.push((c.status, detail));
        }
    }
    let cause_of = |c: &Cell| {
        let detail = if c.detail.is_empty() { c.status.to_string() } else { c.detail.clone() };
        causes.iter().position(|(s, d)| *s == c.status && *d == detail).map(|i| i + 1)
    };
    let summary = |i: usize| {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for c in cells.iter().skip(i).step_by(devices.len().max(1)).filter(|c| c.status != "-") {
            match counts.iter_mut().find(|(s, _)| *s == c.status) {
                Some((_, n)) => *n += 1,
                None => counts.push((c.status, 1)),
            }
        }
        counts.iter().map(|(s, n)| format!("{n} {s}")).collect::<Vec<_>>().join(", ")
    };
    let mut out = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>islands scoreboard</title><style>\
         body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;font-size:.85em;white-space:nowrap}\
         .flipped{background:#c8f0c8}.declined{background:#f7e3a1}.failed{background:#f4b4b4}\
         .unverified{background:#eee}.na{background:#fff;color:#aaa;text-align:center}.stale{background:#d6d6f5}\
         small{color:#444;font-weight:normal}summary{cursor:pointer}\
         pre{white-space:pre-wrap;font-size:.8em;max-width:40em}</style></head><body><h1>islands scoreboard</h1>\
         <p>An arm flips on a device when it is bit-exact against the CPU oracle there and at least 97 % as fast as \
         <code>default</code> (the figure is <code>default</code>'s time over the arm's). A number in brackets names \
         the cause in the legend below; · marks an arm the device does not select. Click a cell for its evidence.</p>\
         <table><tr><th>island, arm</th>",
    );
    for (i, d) in devices.iter().enumerate() {
        let _ = write!(
            out,
            "<th title=\"{}\">{}<br><small>{}</small></th>",
            esc(&d.to_string()),
            esc(&short(d)),
            esc(&summary(i))
        );
    }
    out.push_str("</tr>");
    for chunk in cells.chunks(devices.len().max(1)) {
        let Some(first) = chunk.first() else { continue };
        let _ = write!(out, "<tr><td><code>{}</code> <code>{}</code></td>", esc(&first.island), esc(&first.arm));
        for c in chunk {
            if c.status == "-" {
                out.push_str("<td class=\"na\" title=\"the device does not select this arm\">·</td>");
                continue;
            }
            let short_text = match (figure(c), cause_of(c)) {
                (Some(f), _) => f,
                (None, Some(n)) => format!("[{n}]"),
                (None, None) => String::new(),
            };
            let evidence = c
                .record
                .as_ref()
                .map(|r| serde_json::to_string_pretty(r).expect("plain data serialises"))
                .unwrap_or_else(|| "no record".into());
            let _ = write!(
                out,
                "<td class=\"{}\"><details><summary><b>{}</b> {}</summary><pre>{}</pre></details></td>",
                c.status,
                c.status,
                esc(&short_text),
                esc(&evidence)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table><h2>Legend</h2><ol>");
    for (status, detail) in &causes {
        let _ = write!(out, "<li><b>{status}</b>: {}</li>", esc(detail));
    }
    out.push_str("</ol><h2>Devices</h2><ul>");
    for d in devices {
        let _ = write!(out, "<li>{}</li>", esc(&d.to_string()));
    }
    out.push_str("</ul></body></html>");
    out
}
