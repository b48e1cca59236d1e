//! The proof harness: one named test per registered (island, arm), generated from the
//! registry, on the CPU runtime. No crate writes a test per island.
//!
//! A crate with islands gets its proofs by adding `proofs` as a dev-dependency and one test
//! target with `harness = false` whose `main` is [`main`]:
//!
//! ```toml
//! [[test]]
//! name = "islands"
//! harness = false
//! ```
//!
//! and, in that target's file, a `use` of the crate (so that its registrations are linked) and
//! [`harness!`]: `examples/vendor-byteperm/tests/islands.rs` is one, built by `cargo test`.

pub mod cells;
pub mod census;
pub mod conformance;
pub mod gating;
pub mod independence;
pub mod ledger;
pub mod lowering;
pub mod registry_scan;
pub mod saturation;
pub mod settings;
pub mod trials;
pub mod verdict;

pub use settings::{conformance_runtimes, cpu, options, runs_engine_kernels};
pub use trials::{MODEL, conformance_trials, main, proof_trials, registry_trials, run};
pub use verdict::{REPORT_FIELDS, verdict};

/// The `main` of a crate's proofs test target (`harness = false`): [`main`] for the calling
/// crate's package and its `src/`. A test target is two lines, a `use` of the crate (so that
/// its registrations are linked) and `islands::proofs::harness!();`: see
/// `examples/vendor-byteperm/tests/islands.rs`, which `cargo test` builds.
#[macro_export]
macro_rules! harness {
    () => {
        fn main() {
            $crate::trials::main(
                ::core::env!("CARGO_PKG_NAME"),
                ::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/src").to_string(),
            )
        }
    };
}
