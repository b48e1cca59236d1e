//! The vocabulary of the islands SDK: the words its macros parse and generate, and its runtime
//! evaluates and prints. Free of CubeCL, so `island-macros` (built for the host) and
//! `island-runtime` share one definition of each list:
//!
//! - [`Backend`] (arm keywords) and [`Executor`] (who runs a kernel);
//! - [`Elem`] (element kinds) and [`Mma`] (tile shapes);
//! - [`Capability`], [`Cmp`], [`Atom`] and [`Guard`] (what `if …` on an arm says);
//! - [`Profile`] (what a device can do, and the reference devices proofs emulate);
//! - [`Semantics`] (how far an intrinsic's CPU proof carries to devices);
//! - [`Site`] and [`ArmSpec`] (an island as its generated code describes it), [`Expect`];
//! - [`settings`]: every `ISLANDS_*` environment variable, and its one reader.

pub mod backend;
pub mod capability;
pub mod elem;
pub mod expect;
pub mod mma;
pub mod profile;
pub mod semantics;
pub mod settings;
pub mod site;

pub use backend::{Backend, Contraction, Executor};
pub use capability::{Atom, CAPABILITIES, Capability, Cmp, Guard};
pub use elem::Elem;
pub use expect::Expect;
pub use mma::Mma;
pub use profile::Profile;
pub use semantics::Semantics;
pub use site::{ArmSpec, Site};
