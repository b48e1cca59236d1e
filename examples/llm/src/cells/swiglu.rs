//! SwiGLU, the FFN's gate: the twin is the engine's [`swiglu`](crate::kernels::swiglu).

use super::choice::{IncumbentBuffers, run};
use crate::deciding::swiglu_pairs;
use crate::kernels::{UNITS, batch_grid};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::cell::{CellError, CellKey, NamedShape, Op, Shape, ShapeRefused};
use island_runtime::inputs::Rng;

pub const SWIGLU_KEY: CellKey = CellKey { op: "swiglu", quant: "none", elems: "f32" };

/// SwiGLU, `a[i] = (g / (1 + exp(−g))) · u` over `n` (gate, up) pairs stacked as `gate_up`. Inputs:
/// `gate_up` (2n f32), `{n}` as u32; output `a` (n f32). A shape is 1 × n.
pub const SWIGLU: Op = Op {
    key: SWIGLU_KEY,
    summary: "a = g / (1 + exp(-g)) · u, exp the engine's own (crate::math)",
    shapes: &[
        NamedShape { name: "SmolLM2-135M ffn (1536)", shape: Shape { rows: 1, cols: 1536 } },
        NamedShape { name: "7B ffn (14336)", shape: Shape { rows: 1, cols: 14336 } },
        // The largest the engine's one-dimensional grid reaches on Vulkan (65535 cubes of 64).
        NamedShape { name: "wide (4.19M pairs, 48 MiB moved)", shape: Shape { rows: 1, cols: 65535 * 64 } },
    ],
    oracle_rows: 1,
    check: |s| {
        if s.rows == 1 && s.cols > 0 {
            Ok(())
        } else {
            Err(ShapeRefused(format!("SwiGLU takes one row of pairs, got {s}")))
        }
    },
    inputs: |s, seed| {
        let (gate, up) = swiglu_pairs(s.cols, &mut Rng::new(seed));
        let n = s.cols;
        let gate_up: Vec<f32> = gate.into_iter().chain(up).collect();
        vec![f32::as_bytes(&gate_up).to_vec(), u32::as_bytes(&[n as u32]).to_vec()]
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| s.cols * 4,
    in_place: None,
    output: island_runtime::ValueKind::F32,
    reference: |s, i| {
        let gate_up = f32::from_bytes(&i[0]);
        let a: Vec<f32> = (0..s.cols).map(|j| crate::reference::swiglu(gate_up[j], gate_up[s.cols + j])).collect();
        f32::as_bytes(&a).to_vec()
    },
    twin: |client, s, b, target| {
        launch_swiglu(client, s.cols, 1, &b.inputs[0], b.out, target);
        Ok(())
    },
};
island_runtime::op!(SWIGLU);

/// The engine's [`swiglu`](crate::kernels::swiglu) kernel over `n` pairs of each of `tokens`
/// tokens with `target`.
pub fn launch_swiglu(client: &Client, n: usize, tokens: usize, gate_up: &Handle, a: &Handle, target: Target) {
    let (count, dim) = batch_grid(n, UNITS, tokens);
    // SAFETY: the callers allocate `gate_up` with `tokens · 2n` values and `a` with `tokens · n`.
    unsafe {
        crate::kernels::swiglu::launch_with(
            client,
            count,
            dim,
            BufferArg::from_raw_parts(gate_up.clone(), tokens * 2 * n),
            BufferArg::from_raw_parts(a.clone(), tokens * n),
            n,
            target,
        );
    }
}

/// SwiGLU over `n` pairs of each of `tokens` tokens with the candidate the device's record
/// selects; `params` holds `{n}` as u32.
pub fn swiglu(
    client: &Client,
    (n, tokens): (usize, usize),
    gate_up: &Handle,
    a: &Handle,
    params: &Handle,
    target: Target,
) -> Result<(), CellError> {
    run(
        client,
        &SWIGLU_KEY,
        target,
        (Shape { rows: 1, cols: n }, tokens),
        |t| launch_swiglu(client, n, tokens, gate_up, a, t),
        || IncumbentBuffers { inputs: vec![gate_up.clone(), params.clone()], scratch: Vec::new(), out: a.clone() },
    )
}
