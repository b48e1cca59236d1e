//! The engine's incumbents: its kernels as engines write them by hand, in CUDA C++ and GLSL, on
//! the buffers of its cells ([`crate::cells`]).
//!
//! | cell | file | CUDA C++ | GLSL |
//! |---|---|---|---|
//! | matvec Q4_1, Q8_0, with and without the residual add | [`matvec`] | thread per row, warp per row | thread per row |
//! | RMSNorm of one vector | [`rmsnorm`] | block reduction | |
//! | attention softmax | [`softmax`] | warp per head | thread per head |
//! | SwiGLU | [`swiglu`] | `expf` | |

pub mod matvec;
pub mod rmsnorm;
pub mod softmax;
pub mod swiglu;
