//! Every registered island arm of the SDK's crates, proven on the CPU runtime; the negative
//! fixtures, which must be caught; the registry checks; the examples' own checks; the ledger
//! and the gate.

mod allocation_cap;
mod cells;
mod dont_care;
mod examples;
mod formulation;
mod ledger;
mod llm;
mod llm_corruption;
mod llm_ops;
mod negative;
mod slow;
mod synthetic_gguf;
mod tensor_core;
mod tiered;

use island_examples as _;
use island_intrinsics as _;

/// The system allocator, noting each thread's largest allocation (`llm_corruption`).
#[global_allocator]
static ALLOCATOR: allocation_cap::Noting = allocation_cap::Noting;

fn main() {
    let mut trials = proofs::proof_trials(&["island-examples", "island-intrinsics", "island-llm", "proofs"]);
    trials.extend(proofs::registry_trials(&[
        ("island-examples", concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/src").to_string()),
        ("island-intrinsics", concat!(env!("CARGO_MANIFEST_DIR"), "/../intrinsics/src").to_string()),
        ("island-llm", concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/llm/src").to_string()),
        // The negative fixtures are registered arms too.
        ("proofs", concat!(env!("CARGO_MANIFEST_DIR"), "/tests").to_string()),
    ]));
    trials.extend(examples::trials());
    trials.extend(llm::trials());
    trials.extend(llm_corruption::trials());
    trials.extend(llm_ops::trials());
    trials.extend(ledger::trials());
    trials.extend(cells::trials());
    trials.extend(tensor_core::trials());
    trials.extend(tiered::trials());
    trials.extend(dont_care::trials());
    trials.extend(formulation::trials());
    // The fixtures (crate `proofs`) keep no ledger.
    trials.extend(proofs::ledger::trials(&["island-examples", "island-intrinsics", "island-llm"]));
    const OURS: &[&str] = &["island-examples", "island-intrinsics", "island-llm", "proofs"];
    let ours = OURS;
    trials.push(proofs::census::trial(concat!(env!("CARGO_MANIFEST_DIR"), "/census.json").into(), OURS));
    trials.extend(proofs::saturation::trials(ours));
    trials.push(proofs::independence::shared_program_trial(&["island-examples", "island-intrinsics", "island-llm"]));
    trials.extend(proofs::lowering::trials(ours));
    trials.extend(proofs::conformance_trials(ours));
    proofs::run(trials)
}
