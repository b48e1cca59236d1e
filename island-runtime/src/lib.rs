//! The islands SDK: per-backend intrinsics inside portable CubeCL kernels, proven equal to a
//! normative `default` on the CPU.
//!
//! ```ignore
//! use cubecl::prelude::*;
//! use island_runtime::prelude::*;
//!
//! #[islands]
//! #[cube(launch)]
//! fn dot(a: &[i32], b: &[i32], out: &mut [i32]) {
//!     let i = ABSOLUTE_POS;
//!     out[i] = island! {
//!         proof(x: i32, y: i32) -> i32;
//!         cuda | vulkan if dp4a => island_intrinsics::dp4a(x, y, 0i32, target),
//!         default => portable_dot(x, y),
//!     };
//! }
//! ```
//!
//! See `docs/` for the design, the proof model and how to package an intrinsic.

pub mod backend;
pub mod bench;
pub mod capability;
pub mod contract;
pub mod divergence;
pub mod emulation;
pub mod fingerprint;
pub mod gate;
pub mod intrinsic;
pub mod ledger;
pub mod lowering;
pub mod profile;
pub mod proof;
pub mod registry;
pub mod runtimes;
pub mod target;
pub mod value;

pub use backend::{Backend, Executor};
pub use capability::{Atom, Cmp, Elem, Guard, Mma};
pub use contract::Contract;
pub use fingerprint::Fingerprint;
pub use island_macros::{__expand_island, intrinsic, island, islands};
pub use profile::Profile;
pub use registry::{ArmEntry, Expect};
pub use target::{ArmSpec, Exec, Selection, Site, Target};
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
