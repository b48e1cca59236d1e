//! The byte swap as a cell of "verify, then delete": the op (its shapes, reference and twin,
//! [`crate::byte_swap`]) and the CUDA C++ kernel this crate's engine ran before it
//! (`byte_swap.cu`), registered so that `islands gate --ops` measures them against each other
//! and keeps the record in this crate's ledger.

use islands::cell::{Buffers, CellError, CellKey, Incumbent, Inputs, Lang, NamedShape, Op, Shape, ShapeRefused};
use islands::cubecl::prelude::*;
use islands::foreign::CudaKernel;
use islands::inputs::Rng;
use islands::{Target, ValueKind};

pub const KEY: CellKey = CellKey { op: "byte_swap", quant: "none", elems: "u32" };

pub const BYTE_SWAP: Op = Op {
    key: KEY,
    summary: "out[i] = the bytes of words[i] in reverse order",
    shapes: &[
        NamedShape { name: "4 MiB of words", shape: Shape { rows: 1, cols: 1 << 20 } },
        NamedShape { name: "DRAM-bound (64 MiB)", shape: Shape { rows: 16, cols: 1 << 20 } },
    ],
    oracle_rows: 1,
    check: |s| if s.rows * s.cols == 0 { Err(ShapeRefused(format!("an empty shape {s}"))) } else { Ok(()) },
    inputs: |s, seed| {
        let mut rng = Rng::new(seed);
        let words: Vec<u32> = (0..s.rows * s.cols).map(|_| rng.next_u64() as u32).collect();
        vec![u32::as_bytes(&words).to_vec(), u32::as_bytes(&[(s.rows * s.cols) as u32]).to_vec()]
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| s.rows * s.cols * 4,
    in_place: None,
    output: ValueKind::U32,
    reference: |_, inputs: &Inputs| {
        let words = u32::from_bytes(&inputs[0]);
        let swapped: Vec<u32> = words.iter().map(|w| w.swap_bytes()).collect();
        u32::as_bytes(&swapped).to_vec()
    },
    twin: |client: &Client, s: &Shape, b: &Buffers, target: Target| {
        let n = s.rows * s.cols;
        // SAFETY: the words and the output hold `n` values.
        unsafe {
            crate::byte_swap::launch_with(
                client,
                CubeCount::Static((n as u32).div_ceil(1024), 1, 1),
                CubeDim::new_1d(1024),
                BufferArg::from_raw_parts(b.inputs[0].clone(), n),
                BufferArg::from_raw_parts(b.out.clone(), n),
                target,
            )
        };
        Ok(())
    },
};
islands::op!(BYTE_SWAP);

const KERNEL: CudaKernel =
    CudaKernel { source: include_str!("byte_swap.cu"), entry: "byte_swap_words", cube_dim: (256, 1, 1) };

pub const BYTE_SWAP_CUDA: Incumbent = Incumbent {
    cell: KEY,
    name: "__byte_perm (CUDA C++)",
    lang: Lang::CudaCpp,
    runtime: "cuda",
    source: KERNEL.source,
    launch: |client: &Client, s: &Shape, b: &Buffers| {
        let count = CubeCount::Static(((s.rows * s.cols) as u32).div_ceil(256), 1, 1);
        KERNEL.launch(client, count, &[&b.inputs[0], b.out, &b.inputs[1]]).map_err(|e| CellError::Launch {
            cell: KEY.to_string(),
            candidate: "__byte_perm (CUDA C++)".into(),
            reason: e.to_string(),
        })
    },
};
islands::incumbent!(BYTE_SWAP_CUDA);
