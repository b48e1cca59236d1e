//! SmolLM2-135M on island kernels: one source for every backend, and the same logits, byte for
//! byte, on each.
//!
//! - [`model_file`]: where the GGUF lives and whether it is the checked one; [`gguf`]: the
//!   checked reader of its header, metadata and tensor directory.
//! - [`weights`]: the model read from the GGUF; [`quant`]: its Q8_0 and Q4_1 matrices in the
//!   kernels' layout.
//! - [`tokenizer`]: the GGUF's vocabulary as a byte-level BPE tokenizer.
//! - [`kernels`]: every op of the forward pass; [`lanes`]: the fixed order of their long sums;
//!   [`fused`]: an op and the quantizer after it in one kernel; [`act_matvec`] and
//!   [`attention_step`]: a decode step in five launches a layer; [`math`]: the engine's `exp`.
//! - [`engine`]: the forward pass on a device, with a KV cache; [`ops`]: each kernel launched
//!   alone on host values, for the kernel-level checks, on inputs from [`deciding`].
//! - [`cells`]: every op of the decode step as a cell of "verify, then delete", which the engine
//!   dispatches through, with hand-written CUDA C++ and GLSL [`incumbents`].
//! - [`reference`]: the same forward pass in plain Rust, operation for operation ([`rope`]: its
//!   and the engine's RoPE tables);
//!   [`float_reference`]: the textbook forward pass in f64, to show the engine is also correct.
//! - [`choose`]: the next token chosen on the device, so that two steps can be in flight.
//! - [`generate`]: greedy decoding, logit hashes and the comparison of two runs; [`record`]:
//!   a run's tokens and hashes as a file.

// This crate's evidence ledger (`ledger.json`): its cell records (`islands gate --ops`).
island_runtime::ledger!();

pub mod act_matvec;
pub mod attention_step;
pub mod cells;
pub mod choose;
pub mod deciding;
pub mod engine;
pub mod error;
pub mod float_reference;
pub mod fused;
pub mod generate;
pub mod gguf;
pub mod incumbents;
pub mod kernels;
pub mod lane_divergences;
pub mod lanes;
pub mod math;
pub mod model_file;
pub mod ops;
pub mod quant;
pub mod record;
pub mod reference;
pub mod rope;
pub mod tokenizer;
pub mod weights;

pub use engine::Engine;
pub use error::LlmError;
pub use weights::Model;
