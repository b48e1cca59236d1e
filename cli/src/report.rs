//! The report of proof runs `islands prove` and `islands conform` print: a table (or JSON), the
//! details of the runs that did not pass, a summary line, and the verdict.

use crate::error::Outcome;
use crate::table::print_table;
use island_runtime::proof_run::{ProofRun, Verdict};

/// Prints runs as a table (or JSON); fails when a run failed, or was unproven without
/// `allow_unproven`.
pub fn report(runs: &[ProofRun], json: bool, what: &str, seed: u64, allow_unproven: bool) -> Outcome {
    let unproven = runs.iter().filter(|r| matches!(r.verdict, Verdict::Unproven { .. })).count();
    let device_only = runs.iter().filter(|r| matches!(r.verdict, Verdict::DeviceEvidenceOnly { .. })).count();
    let declined = runs.iter().filter(|r| matches!(r.verdict, Verdict::Declined { .. })).count();
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
    (failed == 0 && (unproven == 0 || allow_unproven)).into()
}
