//! Every registered island arm of the SDK's crates, proven on the CPU runtime; the negative
//! fixtures, which must be caught; the registry checks; and the examples' own checks.

mod examples;
mod negative;

use island_examples as _;
use island_intrinsics as _;

fn main() {
    let mut trials = proofs::proof_trials(&[]);
    trials.extend(proofs::registry_trials(&[
        ("island-examples", concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/src").to_string()),
        ("island-intrinsics", concat!(env!("CARGO_MANIFEST_DIR"), "/../intrinsics/src").to_string()),
    ]));
    trials.extend(examples::trials());
    trials.extend(proofs::lowering::trials());
    for runtime in proofs::conformance_runtimes() {
        trials.extend(proofs::conformance::trials(runtime));
    }
    proofs::run(trials)
}
