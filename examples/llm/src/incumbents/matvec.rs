//! The quantized matvec written by hand, a quantizer kernel then a matvec kernel on the cell's
//! buffers ([`crate::cells::matvec`]), for both cells (`y = W·x` and `y += W·x`, the flag in
//! the scalars): in CUDA C++ (`qmatvec.cu`, thread and warp per row) and in GLSL for Vulkan
//! (`quantize_q8_1.comp`, `qmatvec_rows.comp`).

use crate::cells::matvec::{key, key_add};
use crate::quant::QuantType;
use cubecl::prelude::*;
use island_runtime::cell::{Buffers, CellError, CellKey, Incumbent, Lang, Shape};
use island_runtime::foreign::CudaKernel;
use island_runtime::glsl_kernel::GlslKernel;

const SOURCE: &str = include_str!("qmatvec.cu");

/// The quantizer: a warp per block of 32 activations, 8 blocks a CUDA block.
const QUANTIZE: CudaKernel = CudaKernel { source: SOURCE, entry: "quantize_q8_1_blocks", cube_dim: (256, 1, 1) };

/// How a matvec kernel spreads rows over threads.
#[derive(Clone, Copy)]
enum Design {
    /// One thread per row, 128 rows a block.
    ThreadPerRow,
    /// One warp per row, 4 rows a block.
    WarpPerRow,
}

fn launch(
    cell: CellKey,
    ty: QuantType,
    design: Design,
    client: &Client,
    s: &Shape,
    b: &Buffers,
) -> Result<(), CellError> {
    let entry = match (ty, design) {
        (QuantType::Q4_1, Design::ThreadPerRow) => "matvec_q4_1_rows",
        (QuantType::Q8_0, Design::ThreadPerRow) => "matvec_q8_0_rows",
        (QuantType::Q4_1, Design::WarpPerRow) => "matvec_q4_1_warp",
        (QuantType::Q8_0, Design::WarpPerRow) => "matvec_q8_0_warp",
    };
    let error = |reason: String| CellError::Launch { cell: cell.to_string(), candidate: entry.into(), reason };
    let ([w, d, m, x, params, ..], [xq, xd]) = (b.inputs, b.scratch) else {
        return Err(error("five inputs and two scratch buffers expected".into()));
    };
    let blocks = (s.cols / 32) as u32;
    QUANTIZE
        .launch(client, CubeCount::Static(blocks.div_ceil(8), 1, 1), &[x, xq, xd, params])
        .map_err(|e| error(e.to_string()))?;
    let blocks_of_rows = match design {
        Design::ThreadPerRow => (s.rows as u32).div_ceil(128),
        Design::WarpPerRow => (s.rows as u32).div_ceil(4),
    };
    let kernel = CudaKernel { source: SOURCE, entry, cube_dim: (128, 1, 1) };
    kernel
        .launch(client, CubeCount::Static(blocks_of_rows, 1, 1), &[w, d, m, xq, xd, params, b.out])
        .map_err(|e| error(e.to_string()))
}

macro_rules! incumbent {
    ($name:ident, $cell:expr, $ty:expr, $design:expr, $label:literal) => {
        pub const $name: Incumbent = Incumbent {
            cell: $cell,
            name: $label,
            lang: Lang::CudaCpp,
            runtime: "cuda",
            source: SOURCE,
            launch: |c, s, b| launch($cell, $ty, $design, c, s, b),
        };
        island_runtime::incumbent!($name);
    };
}

incumbent!(Q4_1_THREAD_PER_ROW, key(QuantType::Q4_1), QuantType::Q4_1, Design::ThreadPerRow, "thread per row");
incumbent!(Q4_1_WARP_PER_ROW, key(QuantType::Q4_1), QuantType::Q4_1, Design::WarpPerRow, "warp per row");
incumbent!(Q8_0_THREAD_PER_ROW, key(QuantType::Q8_0), QuantType::Q8_0, Design::ThreadPerRow, "thread per row");
incumbent!(Q8_0_WARP_PER_ROW, key(QuantType::Q8_0), QuantType::Q8_0, Design::WarpPerRow, "warp per row");
incumbent!(ADD_Q4_1_THREAD_PER_ROW, key_add(QuantType::Q4_1), QuantType::Q4_1, Design::ThreadPerRow, "thread per row");
incumbent!(ADD_Q4_1_WARP_PER_ROW, key_add(QuantType::Q4_1), QuantType::Q4_1, Design::WarpPerRow, "warp per row");
incumbent!(ADD_Q8_0_THREAD_PER_ROW, key_add(QuantType::Q8_0), QuantType::Q8_0, Design::ThreadPerRow, "thread per row");
incumbent!(ADD_Q8_0_WARP_PER_ROW, key_add(QuantType::Q8_0), QuantType::Q8_0, Design::WarpPerRow, "warp per row");

/// The GLSL quantizer, one invocation per block.
const QUANTIZE_GLSL: GlslKernel = GlslKernel { source: include_str!("quantize_q8_1.comp"), workgroup: (64, 1, 1) };

/// The GLSL matvec, one invocation per row, for Q4_1 and Q8_0 weights.
const MATVEC_GLSL_Q4_1: GlslKernel = GlslKernel {
    source: concat!("#version 450\nconst bool Q4_1 = true;\n", include_str!("qmatvec_rows.comp")),
    workgroup: (64, 1, 1),
};
const MATVEC_GLSL_Q8_0: GlslKernel = GlslKernel {
    source: concat!("#version 450\nconst bool Q4_1 = false;\n", include_str!("qmatvec_rows.comp")),
    workgroup: (64, 1, 1),
};

fn launch_glsl(cell: CellKey, ty: QuantType, client: &Client, s: &Shape, b: &Buffers) -> Result<(), CellError> {
    let error = |reason: String| CellError::Launch { cell: cell.to_string(), candidate: "GLSL".into(), reason };
    let ([w, d, m, x, params, ..], [xq, xd]) = (b.inputs, b.scratch) else {
        return Err(error("five inputs and two scratch buffers expected".into()));
    };
    let blocks = (s.cols / 32) as u32;
    QUANTIZE_GLSL
        .launch(client, (blocks.div_ceil(64), 1, 1), &[x, xq, xd, params])
        .map_err(|e| error(e.to_string()))?;
    let matvec = match ty {
        QuantType::Q4_1 => MATVEC_GLSL_Q4_1,
        QuantType::Q8_0 => MATVEC_GLSL_Q8_0,
    };
    matvec
        .launch(client, ((s.rows as u32).div_ceil(64), 1, 1), &[w, d, m, xq, xd, params, b.out])
        .map_err(|e| error(e.to_string()))
}

/// Both GLSL texts, as hashed into the records.
const GLSL_SOURCE: &str = concat!(include_str!("quantize_q8_1.comp"), include_str!("qmatvec_rows.comp"));

macro_rules! glsl_incumbent {
    ($name:ident, $cell:expr, $ty:expr) => {
        pub const $name: Incumbent = Incumbent {
            cell: $cell,
            name: "thread per row (GLSL)",
            lang: Lang::Glsl,
            runtime: "wgpu<spirv>",
            source: GLSL_SOURCE,
            launch: |c, s, b| launch_glsl($cell, $ty, c, s, b),
        };
        island_runtime::incumbent!($name);
    };
}

glsl_incumbent!(Q4_1_GLSL, key(QuantType::Q4_1), QuantType::Q4_1);
glsl_incumbent!(Q8_0_GLSL, key(QuantType::Q8_0), QuantType::Q8_0);
glsl_incumbent!(ADD_Q4_1_GLSL, key_add(QuantType::Q4_1), QuantType::Q4_1);
glsl_incumbent!(ADD_Q8_0_GLSL, key_add(QuantType::Q8_0), QuantType::Q8_0);
