//! Incumbents: kernels written by hand in a backend's own language, the way engines run them
//! today, for the cells of these examples ([`crate::cell`]): CUDA C++ (`rmsnorm.cu`,
//! `island_runtime::foreign`) and a GLSL compute shader for Vulkan (`rmsnorm.comp`,
//! `island_runtime::glsl_kernel`). `islands gate --ops` runs each beside its single-source twin
//! on the same client and buffers.

use crate::cell::RMSNORM_KEY;
use cubecl::prelude::*;
use island_runtime::cell::{Buffers, CellError, Incumbent, Lang, Shape};
use island_runtime::foreign::CudaKernel;
use island_runtime::glsl_kernel::GlslKernel;

/// RMSNorm, one block of 256 threads per row (`rmsnorm.cu`).
pub const RMSNORM_BLOCK: CudaKernel =
    CudaKernel { source: include_str!("rmsnorm.cu"), entry: "rmsnorm_rows", cube_dim: (256, 1, 1) };

/// RMSNorm, one warp per row, four rows a block (`rmsnorm.cu`).
pub const RMSNORM_WARP: CudaKernel =
    CudaKernel { source: include_str!("rmsnorm.cu"), entry: "rmsnorm_rows_warp", cube_dim: (128, 1, 1) };

fn launch_error(name: &str, e: impl ToString) -> CellError {
    CellError::Launch { cell: RMSNORM_KEY.to_string(), candidate: name.into(), reason: e.to_string() }
}

pub const RMSNORM_BLOCK_INCUMBENT: Incumbent = Incumbent {
    cell: RMSNORM_KEY,
    name: "block per row",
    lang: Lang::CudaCpp,
    runtime: "cuda",
    source: RMSNORM_BLOCK.source,
    launch: |client: &Client, s: &Shape, b: &Buffers| {
        let (x, w, p) = (&b.inputs[0], &b.inputs[1], &b.inputs[2]);
        RMSNORM_BLOCK
            .launch(client, CubeCount::Static(s.rows as u32, 1, 1), &[x, w, b.out, p])
            .map_err(|e| launch_error("block per row", e))
    },
};
island_runtime::incumbent!(RMSNORM_BLOCK_INCUMBENT);

pub const RMSNORM_WARP_INCUMBENT: Incumbent = Incumbent {
    cell: RMSNORM_KEY,
    name: "warp per row",
    lang: Lang::CudaCpp,
    runtime: "cuda",
    source: RMSNORM_WARP.source,
    launch: |client: &Client, s: &Shape, b: &Buffers| {
        let (x, w, p) = (&b.inputs[0], &b.inputs[1], &b.inputs[2]);
        RMSNORM_WARP
            .launch(client, CubeCount::Static((s.rows as u32).div_ceil(4), 1, 1), &[x, w, b.out, p])
            .map_err(|e| launch_error("warp per row", e))
    },
};
island_runtime::incumbent!(RMSNORM_WARP_INCUMBENT);

/// RMSNorm in GLSL, one workgroup of 32 per row (`rmsnorm.comp`).
pub const RMSNORM_GLSL: GlslKernel = GlslKernel { source: include_str!("rmsnorm.comp"), workgroup: (32, 1, 1) };

pub const RMSNORM_GLSL_INCUMBENT: Incumbent = Incumbent {
    cell: RMSNORM_KEY,
    name: "workgroup per row (GLSL)",
    lang: Lang::Glsl,
    runtime: "wgpu<spirv>",
    source: RMSNORM_GLSL.source,
    launch: |client: &Client, s: &Shape, b: &Buffers| {
        let (x, w, p) = (&b.inputs[0], &b.inputs[1], &b.inputs[2]);
        RMSNORM_GLSL
            .launch(client, (s.rows as u32, 1, 1), &[x, w, b.out, p])
            .map_err(|e| launch_error("workgroup per row (GLSL)", e))
    },
};
island_runtime::incumbent!(RMSNORM_GLSL_INCUMBENT);
