//! The islands SDK: per-backend intrinsics inside portable CubeCL kernels, proven equal to a
//! normative `default` on the CPU.
//!
//! A kernel with an island is the README's first example; `ui-tests/tests/pass/expression.rs`
//! compiles it against this crate. See `docs/` for the design, the proof model and how to package
//! an intrinsic.

pub mod bench;
pub mod canonical;
pub mod cell;
pub mod cell_gate;
pub mod cell_record;
pub mod compare;
pub mod conformance;
pub mod contract;
pub mod device;
pub mod dispatch;
pub mod divergence;
pub mod embedded;
pub mod emulation;
pub mod evidence;
pub mod fingerprint;
pub mod foreign;
pub mod gate;
pub mod glsl_kernel;
pub mod hash;
pub mod inputs;
pub mod intrinsic;
pub mod launch;
pub mod ledger;
pub mod lifted;
pub mod lowering;
pub mod machine_code;
pub mod policy;
pub mod proof;
pub mod proof_run;
pub mod quirks;
pub mod readback;
pub mod record;
pub mod registry;
pub mod report;
pub mod runtimes;
pub mod semantics;
pub mod target;
pub mod tensor_map;
pub mod value;

/// The vocabulary ([`island_vocab`]): backends, element kinds, capabilities, profiles, sites.
pub use island_vocab::{self as vocab, backend, capability, elem, expect, mma, profile, site};
pub use island_vocab::{
    ArmSpec, Atom, Backend, CAPABILITIES, Capability, Cmp, Contraction, Elem, Executor, Expect, Guard, Mma, Profile,
    Semantics, Site,
};

pub use contract::Contract;
pub use device::{Device, Exec};
pub use fingerprint::Fingerprint;
pub use island_macros::{__expand_island, intrinsic, island, islands, sites_of};
pub use registry::ArmEntry;
pub use target::{Selection, Target};
pub use value::{ProofValue, ValueKind};

/// What kernels with islands need in scope.
pub mod prelude {
    pub use crate::{Target, island, islands};
    #[doc(hidden)]
    pub use island_macros::__expand_island;
}

/// Paths the macros expand to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use cubecl;
    pub use inventory;
    pub use std::sync::Arc;
}
