//! The attention softmax written by hand, in place on the cell's scores
//! ([`crate::cells::attention::softmax`]): in CUDA C++ (`softmax.cu`, a warp per head, `expf`,
//! the sum's reciprocal multiplied in) and in GLSL (`softmax.comp`, an invocation per head,
//! `exp`, a division).

use crate::cells::attention::SOFTMAX_KEY;
use cubecl::prelude::*;
use island_runtime::cell::{Buffers, CellError, Incumbent, Lang, Shape};
use island_runtime::foreign::CudaKernel;
use island_runtime::glsl_kernel::GlslKernel;

const CUDA: CudaKernel =
    CudaKernel { source: include_str!("softmax.cu"), entry: "softmax_warp", cube_dim: (128, 1, 1) };
const GLSL: GlslKernel = GlslKernel { source: include_str!("softmax.comp"), workgroup: (64, 1, 1) };

fn error(candidate: &str, reason: String) -> CellError {
    CellError::Launch { cell: SOFTMAX_KEY.to_string(), candidate: candidate.into(), reason }
}

/// The scores (the output, updated in place) and the scalars.
fn buffers<'a>(b: &'a Buffers, candidate: &str) -> Result<[&'a cubecl::server::Handle; 2], CellError> {
    match b.inputs {
        [_, params, ..] => Ok([b.out, params]),
        _ => Err(error(candidate, "the scores and the scalars expected".into())),
    }
}

pub const SOFTMAX_WARP: Incumbent = Incumbent {
    cell: SOFTMAX_KEY,
    name: "warp per head (CUDA C++)",
    lang: Lang::CudaCpp,
    runtime: "cuda",
    source: CUDA.source,
    launch: |client: &Client, s: &Shape, b: &Buffers| {
        let name = "warp per head (CUDA C++)";
        let count = CubeCount::Static((s.rows as u32).div_ceil(4), 1, 1);
        CUDA.launch(client, count, &buffers(b, name)?).map_err(|e| error(name, e.to_string()))
    },
};
island_runtime::incumbent!(SOFTMAX_WARP);

pub const SOFTMAX_GLSL: Incumbent = Incumbent {
    cell: SOFTMAX_KEY,
    name: "thread per head (GLSL)",
    lang: Lang::Glsl,
    runtime: "wgpu<spirv>",
    source: GLSL.source,
    launch: |client: &Client, s: &Shape, b: &Buffers| {
        let name = "thread per head (GLSL)";
        GLSL.launch(client, ((s.rows as u32).div_ceil(64), 1, 1), &buffers(b, name)?)
            .map_err(|e| error(name, e.to_string()))
    },
};
island_runtime::incumbent!(SOFTMAX_GLSL);
