//! `islands intrinsics`: the table of intrinsics, one row per lowering (backend, capability,
//! instruction).

use crate::error::Outcome;
use crate::table::print_table;

pub fn run() -> Outcome {
    let mut rows = Vec::new();
    for i in island_runtime::intrinsic::intrinsics() {
        let guard = i.check_arms().first().map(|e| e.spec().guard.to_string()).unwrap_or_default();
        for l in i.lowerings {
            let mut cap = l.requires.to_string();
            if cap.is_empty() {
                cap = guard.clone();
            }
            rows.push(vec![
                i.name.to_string(),
                l.backend.to_string(),
                cap,
                l.instruction.to_string(),
                i.krate.to_string(),
            ]);
        }
    }
    print_table(&["intrinsic", "backend", "capability", "instruction", "crate"], &rows);
    Outcome::Pass
}
