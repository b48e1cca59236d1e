//! Intrinsics for islands. Each one carries a native lowering per backend that has the
//! instruction, and an emulation of each target's exact semantics that runs anywhere, the
//! CPU runtime included, so any arm can be proven against `default` on the CPU.
//!
//! Each is defined with `#[intrinsic]`, as a vendor crate defines its own: a module holding the
//! emulation, the native lowerings and their rows of the table (backend ↔ capability ↔
//! instruction, listed by `islands intrinsics`). Its `call(…, target)` lowers natively when the
//! tag's executor is the device the arm was selected for, and to the emulation otherwise.
//! Beside each intrinsic, in its file, are its checks: islands whose accelerated arm calls it and
//! whose `default` computes the same function another way.

// This crate's evidence ledger (`ledger.json`): what `islands gate` measured per device, and
// what launches of its islands consult.
island_runtime::ledger!();

pub mod cp_async;
pub mod dp4a;
pub mod exact;
pub mod flushed;
pub mod ldmatrix;
pub mod mbarrier;
pub mod mma;
pub mod mma_sync;
pub mod plane;
pub mod stream;
pub mod tensor_core;
pub mod tma;
pub mod wgmma;
pub mod wgmma_consume;
pub mod wgmma_loop;

/// The portable formulations `default` arms use, in a crate of their own that cannot reach an
/// emulation.
pub use island_portable as portable;
