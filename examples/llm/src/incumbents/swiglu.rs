//! SwiGLU written by hand in CUDA C++ (`swiglu.cu`), on the cell's buffers
//! ([`crate::cells::swiglu`]).

use crate::cells::SWIGLU_KEY;
use cubecl::prelude::*;
use island_runtime::cell::{CellError, Incumbent, Lang};
use island_runtime::foreign::CudaKernel;

const SWIGLU_CUDA: CudaKernel =
    CudaKernel { source: include_str!("swiglu.cu"), entry: "swiglu_f32", cube_dim: (256, 1, 1) };

pub const SWIGLU_EXPF: Incumbent = Incumbent {
    cell: SWIGLU_KEY,
    name: "expf (CUDA C++)",
    lang: Lang::CudaCpp,
    runtime: "cuda",
    source: SWIGLU_CUDA.source,
    launch: |client, s, b| {
        let count = CubeCount::Static((s.cols as u32).div_ceil(256), 1, 1);
        SWIGLU_CUDA.launch(client, count, &[&b.inputs[0], b.out, &b.inputs[1]]).map_err(|e| CellError::Launch {
            cell: SWIGLU_KEY.to_string(),
            candidate: "expf (CUDA C++)".into(),
            reason: e.to_string(),
        })
    },
};
island_runtime::incumbent!(SWIGLU_EXPF);
