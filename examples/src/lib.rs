//! Example kernels with islands, each checked against a plain-Rust reference.
//!
//! - [`q8_matvec`]: Q8_0 matrix × vector with `dp4a`, streaming-load, row-sum and
//!   block-maximum islands.
//! - [`rmsnorm`]: RMSNorm over rows with the plane-sum island of [`rows`].
//! - [`gemm_i8`]: an int8 tile GEMM with a `cmma` island.
//! - [`gemm_i8_mma`]: an int8 GEMM on `mma.sync`, `ldmatrix` and a `cp.async` pipeline.
//! - [`gemm_i8_wgmma`]: an int8 GEMM on Hopper's `wgmma` fed by a `cp.async` pipeline.
//! - [`gemm_i8_persistent`]: the same GEMM persistent and warp-specialized: a TMA producer
//!   warpgroup and two `wgmma` consumer warpgroups per multiprocessor, walking the tiles.
//! - [`gemm_f16`]: an f16 tile GEMM with a `cmma` island, bit-exact on sm_90's tensor cores.
//! - [`machine_code`]: a `dp4a` arm the compiler removes, which the gate declines on CUDA.
//! - [`cell`]: the RMSNorm cell of "verify, then delete", with its hand-written [`incumbents`].
//! - [`error`]: the error they report before launch; [`tile_shape`]: the GEMMs' tile shapes;
//!   [`testing`]: the inputs and comparisons their checks share.

// This crate's evidence ledger (`ledger.json`): what `islands gate` measured per device, and
// what launches of its islands consult.
island_runtime::ledger!();

pub mod cell;
pub mod error;
pub mod gemm_f16;
pub mod gemm_i8;
pub mod gemm_i8_mma;
pub mod gemm_i8_persistent;
pub mod gemm_i8_wgmma;
pub mod incumbents;
pub mod machine_code;
pub mod mmq;
pub mod q8_matvec;
pub mod rmsnorm;
pub mod rows;
pub mod testing;
pub mod tile_shape;
