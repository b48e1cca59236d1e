//! A proof run's conclusion as a test result.

use crate::settings::allow_unproven;
use island_runtime::ArmEntry;
use island_runtime::proof_run::{ProofRun, Verdict};
use libtest_mimic::{Completion, Failed};

/// What every mismatch report names: island, arm, the runtimes that executed, the first
/// differing index, both values in hex, the seed.
pub const REPORT_FIELDS: &[&str] = &["island `", "arm `", "executed on: ", "first differing index", " = 0x", "seed 0x"];

/// Turns the runs of one arm into a test result: every run must meet its expectation. A run
/// that compared nothing is never a pass: unproven runs fail (or, with
/// `ISLANDS_ALLOW_UNPROVEN=1`, make the trial ignored with their reason), and an arm that is the
/// same program as `default` on the CPU is ignored as "device evidence only".
pub fn verdict(entry: &ArmEntry, runs: &[ProofRun]) -> Result<Completion, Failed> {
    let allow_unproven = allow_unproven()?;
    let mut failures = Vec::new();
    let mut ignored = Vec::new();
    for run in runs {
        if run.passed() && run.expect == island_runtime::Expect::Mismatch {
            // A caught bug must also be reported the way a real one would be.
            let report = run.detail().unwrap_or_default();
            let missing: Vec<&str> = REPORT_FIELDS.iter().copied().filter(|f| !report.contains(f)).collect();
            if !missing.is_empty() {
                failures.push(format!("the mismatch report lacks {missing:?}:\n{report}"));
            }
            continue;
        }
        if run.passed() {
            continue;
        }
        match &run.verdict {
            Verdict::Unproven { reason } if allow_unproven => {
                ignored.push(format!("unproven on {}: {reason}", run.profile));
                continue;
            }
            Verdict::DeviceEvidenceOnly { reason } => {
                ignored.push(format!("device evidence only: {reason}"));
                continue;
            }
            Verdict::Declined { report } => {
                ignored.push(report.lines().take(2).collect::<Vec<_>>().join(" "));
                continue;
            }
            _ => {}
        }
        let detail = run.detail().unwrap_or("the negative fixture was proven equal: the proof cannot fail");
        failures.push(format!("[{}] {} on `{}`:\n{detail}", run.verdict_word(), run.profile, run.executed_on));
    }
    if !failures.is_empty() {
        Err(format!("{} at {}\n{}", entry.name(), entry.location(), failures.join("\n\n")).into())
    } else if !ignored.is_empty() {
        Ok(Completion::ignored_with(ignored.join("; ")))
    } else {
        Ok(Completion::Completed)
    }
}
