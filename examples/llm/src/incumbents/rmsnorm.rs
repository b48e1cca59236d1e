//! RMSNorm of one vector written by hand in CUDA C++ (`rmsnorm_vector.cu`: one block, a
//! shuffle and shared-memory sum of the squares, `rsqrtf`), on the cell's buffers
//! ([`crate::cells::rmsnorm`]).

use crate::cells::rmsnorm::KEY;
use cubecl::prelude::*;
use island_runtime::cell::{Buffers, CellError, Incumbent, Lang, Shape};
use island_runtime::foreign::CudaKernel;

const CUDA: CudaKernel =
    CudaKernel { source: include_str!("rmsnorm_vector.cu"), entry: "rmsnorm_vector", cube_dim: (1024, 1, 1) };

pub const RMSNORM_BLOCK: Incumbent = Incumbent {
    cell: KEY,
    name: "block reduction (CUDA C++)",
    lang: Lang::CudaCpp,
    runtime: "cuda",
    source: CUDA.source,
    launch: |client: &Client, _: &Shape, b: &Buffers| {
        let error = |reason: String| CellError::Launch {
            cell: KEY.to_string(),
            candidate: "block reduction (CUDA C++)".into(),
            reason,
        };
        let [x, w, params] = b.inputs else {
            return Err(error("x, w and the scalars expected".into()));
        };
        CUDA.launch(client, CubeCount::Static(1, 1, 1), &[x, w, b.out, params]).map_err(|e| error(e.to_string()))
    },
};
island_runtime::incumbent!(RMSNORM_BLOCK);
