//! Paths the macros expand to (`inventory`, CubeCL). Not a public API.

pub use cubecl;
pub use inventory;
pub use std::sync::Arc;
