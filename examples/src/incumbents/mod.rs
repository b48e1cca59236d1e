//! Incumbents: kernels written by hand in a backend's own language, the way engines run them
//! today, for the cells of these examples. `islands incumbent` runs each beside its
//! single-source twin on the same client and buffers (`island_runtime::foreign`).

use island_runtime::foreign::CudaKernel;

/// RMSNorm, one block of 256 threads per row (`rmsnorm.cu`).
pub const RMSNORM_BLOCK: CudaKernel =
    CudaKernel { source: include_str!("rmsnorm.cu"), entry: "rmsnorm_rows", cube_dim: (256, 1, 1) };

/// RMSNorm, one warp per row, four rows a block (`rmsnorm.cu`).
pub const RMSNORM_WARP: CudaKernel =
    CudaKernel { source: include_str!("rmsnorm.cu"), entry: "rmsnorm_rows_warp", cube_dim: (128, 1, 1) };
