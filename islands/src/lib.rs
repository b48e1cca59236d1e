//! Per-backend intrinsics inside portable [CubeCL](https://github.com/tracel-ai/cubecl) kernels,
//! each proven byte-equal to the kernel's normative `default` on the CPU.
//!
//! This crate re-exports the SDK: the macros and the runtime ([`island_runtime`], at this
//! crate's root), the built-in intrinsics ([`dp4a`], [`plane`], [`mma`], [`portable`]), CubeCL
//! itself ([`cubecl`]) and, with the `proofs` feature, the proof harness ([`proofs`]).
//!
//! ```toml
//! [dependencies]
//! islands = "0.1"
//!
//! [dev-dependencies]
//! islands = { version = "0.1", features = ["proofs"] }
//! ```
//!
//! ```
//! use islands::prelude::*;
//!
//! /// out[i] = Σ over the four signed bytes of a[i] and b[i].
//! #[islands]
//! #[cube(launch)]
//! pub fn dot4(a: &[i32], b: &[i32], out: &mut [i32]) {
//!     let i = ABSOLUTE_POS;
//!     if i < out.len() {
//!         let (x, y) = (a[i], b[i]);
//!         out[i] = island! {
//!             proof(x: i32, y: i32) -> i32;
//!             cuda | vulkan if dp4a => dp4a::call(x, y, 0i32, target),
//!             default => portable::dot4_i8(x, y, 0i32),
//!         };
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! Backend features: `cpu` (default), `cuda`, `vulkan`, `wgpu`, `hip`, `metal`; `spirv` adds the
//! SPIR-V generator alone, for lowering checks of Vulkan arms (`vulkan` and `proofs` bring it).

pub use island_intrinsics::{cp_async, dp4a, exact, ldmatrix, mma, mma_sync, plane, portable, stream};
pub use island_runtime::__private::cubecl;
pub use island_runtime::*;

#[cfg(feature = "proofs")]
pub use proofs;

/// What a kernel with islands needs in scope: CubeCL's prelude (and `cubecl` itself, which
/// `#[cube]` expands to), the island macros and tag, and the built-in intrinsics.
pub mod prelude {
    pub use island_intrinsics::{cp_async, dp4a, exact, ldmatrix, mma, mma_sync, plane, portable, stream};
    pub use island_runtime::__private::cubecl::{self, prelude::*};
    pub use island_runtime::prelude::*;
}
