//! The islands SDK: per-backend intrinsics inside portable CubeCL kernels, proven equal to a
//! normative `default` on the CPU.
//!
//! A kernel with an island is the README's first example; `ui-tests/tests/pass/expression.rs`
//! compiles it against this crate. See `docs/` for the design, the proof model and how to package
//! an intrinsic.

// Seven floors, each naming only those below it (`ui-tests/tests/layering.rs` checks it):
// values < hardware < records < tag < codegen < launch < verify; `__private` (the macros'
// paths to other crates) lies under them all.
#[doc(hidden)]
pub mod __private;
pub mod codegen;
pub mod hardware;
pub mod launch;
pub mod records;
pub mod tag;
pub mod values;
pub mod verify;

// The modules by their flat names, as the SDK's users name them (`island_runtime::proof`, …).
pub use codegen::{code_hash, foreign, glsl_kernel, lowering, machine_code, missing_types};
pub use hardware::{device, divergence, fingerprint, quirks};
pub use launch::{cell, dispatch, evidence, policy, runtimes, semantics, staleness, twin_code};
pub use records::{cell_record, embedded, ledger, record, ruling};
pub use tag::{emulation, intrinsic, lifted, registry, target};
pub use values::{canonical, contract, hash, inputs, readback, said, tensor_map, value};
pub use verify::{bench, cell_gate, compare, conformance, gate, proof, proof_run, report};

/// The vocabulary ([`island_vocab`]): backends, element kinds, capabilities, profiles, sites,
/// and the `ISLANDS_*` settings.
pub use island_vocab::{self as vocab, backend, capability, elem, expect, mma, profile, settings, site};
pub use island_vocab::{
    ArmSpec, Atom, Backend, CAPABILITIES, Capability, Cmp, Contraction, Elem, Executor, Expect, Guard, Mma, Profile,
    Semantics, Site,
};

pub use hardware::device::{Device, Exec};
pub use hardware::fingerprint::Fingerprint;
pub use island_macros::{__expand_island, intrinsic, island, islands, sites_of};
pub use tag::registry::ArmEntry;
pub use tag::target::{Selection, Target};
pub use values::contract::Contract;
pub use values::value::{ProofValue, ValueKind};

/// What kernels with islands need in scope.
pub mod prelude {
    pub use crate::{Target, island, islands};
    #[doc(hidden)]
    pub use island_macros::__expand_island;
}
