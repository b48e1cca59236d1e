//! Intrinsics for islands. Each one carries a native lowering per backend that has the
//! instruction, and an emulation of each target's exact semantics that runs anywhere, the
//! CPU runtime included, so any arm can be proven against `default` on the CPU.
//!
//! Every function takes the kernel's tag: it lowers natively when the tag's executor is the
//! device the arm was selected for, and to its emulation otherwise.

pub mod dp4a;
pub mod mma;
pub mod plane;
pub mod portable;
