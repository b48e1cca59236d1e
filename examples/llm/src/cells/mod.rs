//! The engine's cells of "verify, then delete" (`island_runtime::cell`): every op of its decode
//! step is one, and the engine calls each through its op function here, which runs the candidate
//! the device's record selects (`island_runtime::dispatch`): the twin (the engine's own kernel
//! in [`crate::kernels`]) where the cell flipped or was not measured, an incumbent
//! ([`crate::incumbents`]) where it was declined and that incumbent is kept.
//!
//! | cell | file | op function |
//! |---|---|---|
//! | embedding row, Q8_0 | [`embed`] | [`embed::embed`] |
//! | RMSNorm of one vector | [`rmsnorm`] | [`rmsnorm::rmsnorm`] |
//! | matvec Q4_1, Q8_0 (`y = W·x`), and with the residual add (`y += W·x`) | [`matvec`] | [`matvec::matvec`] |
//! | RoPE into the attention state | [`rope`] | [`rope::rope`] |
//! | attention scores, softmax, weighted values | [`attention`] | [`attention::scores`], [`attention::softmax`], [`attention::attend`] |
//! | SwiGLU | [`swiglu`] | [`swiglu::swiglu`] |
//!
//! Each op function takes the engine's tag; an incumbent gets the cell's buffers in the op's
//! layout, its scalars in a small `u32` buffer that the op function builds only when an
//! incumbent runs.

pub mod attention;
mod choice;
pub mod embed;
pub mod matvec;
pub mod rmsnorm;
pub mod rope;
pub mod swiglu;

pub use choice::{incumbent_launches, twin_target};
pub use matvec::{MATVEC_Q4_1, MATVEC_Q8_0, key, launch_choice, launch_twin};
pub use swiglu::{SWIGLU, SWIGLU_KEY};
