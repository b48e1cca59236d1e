//! `islands scoreboard --cells`: the seed's Table 2 from the ledgers' cell records, op × quant
//! type × device, with the decision, the twin's speed against the fastest incumbent and the
//! bit-exactness of every candidate. A record whose twin or incumbent code hashes differently in
//! this build is `stale`.

use island_runtime::Fingerprint;
use island_runtime::cell_record::{CandidateKind, CellRecord};
use island_runtime::embedded;
use std::fmt::Write as _;

/// One cell of the table.
pub struct Row {
    pub key: String,
    pub device: Fingerprint,
    /// `flipped`, `declined`, `failed`, `twin only`, `unverified` or `stale`.
    pub status: String,
    /// The ratio, compact.
    pub figure: String,
    /// Bit-exactness per candidate, compact: `twin ✓ · block per row ✗ 31 % ≤5 ulp`.
    pub exactness: String,
    pub record: CellRecord,
}

fn key_of(r: &CellRecord) -> String {
    format!("{} {} ({})", r.op, r.quant, r.elems)
}

/// The candidates' exactness, over all shapes.
fn exactness(r: &CellRecord) -> String {
    let mut names: Vec<(String, CandidateKind)> = Vec::new();
    for c in r.shapes.iter().flat_map(|s| &s.candidates) {
        if !names.iter().any(|(n, _)| *n == c.name) {
            names.push((c.name.clone(), c.kind.clone()));
        }
    }
    let parts: Vec<String> = names
        .iter()
        .map(|(name, _)| {
            let all: Vec<_> = r.shapes.iter().flat_map(|s| &s.candidates).filter(|c| c.name == *name).collect();
            let (differ, values, ulp) =
                all.iter().fold((0, 0, 0), |(d, v, u), c| (d + c.differing, v + c.values, u.max(c.max_ulp)));
            if all.iter().any(|c| c.error.is_some()) {
                format!("{name} error")
            } else if differ == 0 {
                format!("{name} ✓")
            } else {
                format!("{name} ✗ {:.0} % ≤{ulp} ulp", 100.0 * differ as f64 / values.max(1) as f64)
            }
        })
        .collect();
    parts.join(" · ")
}

/// One mark per candidate that ran, twin first: `twin ✓ · incumbents ✗✓`.
fn marks(r: &CellRecord) -> String {
    let exact = |name: &str| {
        let all: Vec<_> = r.shapes.iter().flat_map(|s| &s.candidates).filter(|c| c.name == name).collect();
        if all.iter().any(|c| c.error.is_some()) {
            "–"
        } else if all.iter().all(|c| c.differing == 0) {
            "✓"
        } else {
            "✗"
        }
    };
    let incumbents: String = r.code.iter().filter(|(n, _)| n != "twin").map(|(n, _)| exact(n)).collect();
    if incumbents.is_empty() {
        format!("twin {}", exact("twin"))
    } else {
        format!("twin {} · incumbents {incumbents}", exact("twin"))
    }
}

/// Every cell record of this build's ledgers, by key then device.
pub fn rows() -> Result<Vec<Row>, embedded::CommittedError> {
    let mut out: Vec<Row> = embedded::committed()?
        .into_values()
        .flat_map(|(_, l)| l.cells)
        .map(|r| {
            let (status, figure) = match island_runtime::staleness::cell(&r) {
                Some(why) => ("stale".to_string(), why),
                None => (r.decision.word().to_string(), r.ratio.map_or(String::new(), |x| format!("{x:.2}×"))),
            };
            Row { key: key_of(&r), device: r.device.clone(), status, figure, exactness: exactness(&r), record: r }
        })
        .collect();
    out.sort_by(|a, b| (&a.key, &a.device).cmp(&(&b.key, &b.device)));
    Ok(out)
}

fn short(d: &Fingerprint) -> String {
    format!("{} {}", d.runtime, d.device.split(" (").next().unwrap_or(&d.device))
}

fn devices(rows: &[Row]) -> Vec<Fingerprint> {
    let mut d: Vec<Fingerprint> = rows.iter().map(|r| r.device.clone()).collect();
    d.sort();
    d.dedup();
    d
}

fn keys(rows: &[Row]) -> Vec<String> {
    let mut k: Vec<String> = rows.iter().map(|r| r.key.clone()).collect();
    k.dedup();
    k
}

/// Counts per status of one device: `2 flipped, 1 declined`.
fn summary(rows: &[Row], device: &Fingerprint) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for r in rows.iter().filter(|r| r.device == *device) {
        match counts.iter_mut().find(|(s, _)| *s == r.status) {
            Some((_, n)) => *n += 1,
            None => counts.push((r.status.clone(), 1)),
        }
    }
    counts.iter().map(|(s, n)| format!("{n} {s}")).collect::<Vec<_>>().join(", ")
}

/// What each status means, once.
pub const LEGEND: &[(&str, &str)] = &[
    ("flipped", "the twin is bit-exact and ≥ 0.97× the fastest incumbent at every shape: the incumbent can be deleted"),
    (
        "declined",
        "the twin is bit-exact but slower at some shape: the fastest incumbent stays where it is bit-exact (else the twin runs), the twin is the portable fallback",
    ),
    ("failed", "the twin is not bit-exact against the CPU oracle: the incumbent stays"),
    (
        "twin unsupported",
        "the twin cannot run on the device (a known compiler defect refuses its launch): the incumbent stays",
    ),
    ("twin only", "no incumbent runs on the device: nothing to retire"),
    ("unverified", "a candidate could not run, or no timing was taken"),
    ("stale", "the twin's or an incumbent's code changed since the record"),
];

pub fn text(rows: &[Row]) {
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![r.key.clone(), short(&r.device), format!("{} {}", r.status, r.figure), r.exactness.clone()])
        .collect();
    crate::table::print_table(&["cell", "device", "decision", "bit-exact vs the CPU oracle"], &table);
    for d in devices(rows) {
        println!("{}: {}", d, summary(rows, &d));
    }
}

pub fn markdown(rows: &[Row]) -> String {
    let devs = devices(rows);
    let mut out = String::from("| cell |");
    for d in &devs {
        let _ = write!(out, " {} |", short(d));
    }
    let _ = write!(out, "\n|---|{}\n", "---|".repeat(devs.len()));
    for key in keys(rows) {
        let _ = write!(out, "| {key} |");
        for d in &devs {
            match rows.iter().find(|r| r.key == key && r.device == *d) {
                Some(r) => {
                    let _ = write!(out, " **{}** {}<br>{} |", r.status, r.figure, r.exactness.replace('|', "\\|"));
                }
                None => out.push_str(" - |"),
            }
        }
        out.push('\n');
    }
    out.push('\n');
    for d in &devs {
        let _ = writeln!(out, "- {}: {} ({d})", short(d), summary(rows, d));
    }
    out.push('\n');
    for (status, meaning) in LEGEND {
        let _ = writeln!(out, "- **{status}**: {meaning}.");
    }
    out
}

pub fn html(rows: &[Row]) -> String {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    let class = |s: &str| s.replace(' ', "-");
    let devs = devices(rows);
    let mut out = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>islands cells</title><style>\
         body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:.4em .6em;vertical-align:top;font-size:.9em}\
         .flipped{background:#c8f0c8}.declined{background:#f7e3a1}.failed{background:#f4b4b4}\
         .twin-only,.unverified{background:#eee}.twin-unsupported{background:#f2c9a0}.stale{background:#d6d6f5}small{color:#444}\
         pre{white-space:pre-wrap;font-size:.8em;max-width:50em}</style></head><body>\
         <h1>Verify, then delete: cells</h1><p>Each cell is one (op, quant type, device): the twin (one \
         island kernel source) against the hand-written incumbents on the same device and buffers. \
         Each cell shows its decision, the twin's speed over the fastest incumbent's at the worst shape, and \
         whether each candidate was bit-exact against the CPU oracle (✓ yes, ✗ no, – did not run); click it for \
         the distances and the evidence.</p><table><tr><th>cell</th>",
    );
    for d in &devs {
        let _ = write!(
            out,
            "<th title=\"{}\">{}<br><small>{}</small></th>",
            esc(&d.to_string()),
            esc(&short(d)),
            esc(&summary(rows, d))
        );
    }
    out.push_str("</tr>");
    for key in keys(rows) {
        let _ = write!(out, "<tr><td><code>{}</code></td>", esc(&key));
        for d in &devs {
            match rows.iter().find(|r| r.key == key && r.device == *d) {
                Some(r) => {
                    let evidence = serde_json::to_string_pretty(&r.record).expect("plain data serialises");
                    let _ = write!(
                        out,
                        "<td class=\"{}\"><details><summary><b>{}</b> {} <small>{}</small></summary><small>{}</small><pre>{}</pre></details></td>",
                        class(&r.status),
                        esc(&r.status),
                        esc(&r.figure),
                        esc(&marks(&r.record)),
                        esc(&r.exactness),
                        esc(&evidence)
                    );
                }
                None => out.push_str("<td>-</td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</table><h2>Legend</h2><ul>");
    for (status, meaning) in LEGEND {
        let _ = write!(out, "<li class=\"{}\"><b>{status}</b>: {}</li>", class(status), esc(meaning));
    }
    out.push_str("</ul><h2>Devices</h2><ul>");
    for d in &devs {
        let _ = write!(out, "<li>{}</li>", esc(&d.to_string()));
    }
    out.push_str("</ul></body></html>");
    out
}
