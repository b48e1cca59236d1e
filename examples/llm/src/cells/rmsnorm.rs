//! RMSNorm of one vector (the engine normalizes one token's residual stream before attention,
//! before the FFN and before the logits): the twin is the engine's
//! [`rmsnorm`](crate::kernels::rmsnorm), every unit summing the squares itself in order.

use super::choice::{IncumbentBuffers, arg, run, scalars};
use crate::deciding::Draw;
use crate::kernels::{UNITS, batch_grid, rmsnorm as kernel};
use crate::lanes::{self, LANES_32};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::cell::{CellError, CellKey, NamedShape, Op, Shape, ShapeRefused};
use island_runtime::inputs::Rng;

pub const KEY: CellKey = CellKey { op: "rmsnorm", quant: "none", elems: "f32, one vector" };

/// The cell's `eps` (SmolLM2's and Llama's).
pub const EPS: f32 = 1e-5;

/// RMSNorm of one vector, `y = x · (1 / sqrt(Σx² / n + eps)) · w`. Inputs: `x`, `w` (n f32 each),
/// `{n, eps's bits}` as u32; output `y` (n f32). A shape is 1 × n.
pub const RMSNORM: Op = Op {
    key: KEY,
    summary: "y = x · (1 / sqrt(Σ x² / n + eps)) · w, eps = 1e-5, the squares summed in order by fma, / and sqrt correctly rounded",
    shapes: &[
        NamedShape { name: "SmolLM2-135M dim (576)", shape: Shape { rows: 1, cols: 576 } },
        NamedShape { name: "7B dim (4096)", shape: Shape { rows: 1, cols: 4096 } },
        NamedShape { name: "70B dim (8192)", shape: Shape { rows: 1, cols: 8192 } },
    ],
    oracle_rows: 1,
    check: |s| {
        if s.rows == 1 && s.cols > 0 {
            Ok(())
        } else {
            Err(ShapeRefused(format!("RMSNorm of one vector takes 1 × n, got {s}")))
        }
    },
    inputs: |s, seed| {
        let mut rng = Rng::new(seed);
        // Values over nine binades, so that every square counts and the order of the sum
        // decides (with a few values far larger, the rest would be absorbed in any order), and
        // zeros of both signs. No subnormal results: NVIDIA's Vulkan driver flushes them
        // (docs/design.md), a divergence this op's definition does not cover yet (SwiGLU's does).
        let x: Vec<f32> = (0..s.cols)
            .map(|i| match i % 11 {
                0 => -0.0,
                1 => 0.0,
                _ => rng.wide(4),
            })
            .collect();
        let w: Vec<f32> = (0..s.cols).map(|_| rng.wide(2)).collect();
        vec![
            f32::as_bytes(&x).to_vec(),
            f32::as_bytes(&w).to_vec(),
            u32::as_bytes(&[s.cols as u32, EPS.to_bits()]).to_vec(),
        ]
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| s.cols * 4,
    in_place: None,
    output: island_runtime::ValueKind::F32,
    reference: |_, i| {
        let y = crate::reference::rmsnorm(f32::from_bytes(&i[0]), f32::from_bytes(&i[1]), EPS);
        f32::as_bytes(&y).to_vec()
    },
    twin: |client, s, b, target| {
        launch_twin(client, s.cols, EPS, 1, [&b.inputs[0], &b.inputs[1], b.out], target);
        Ok(())
    },
};
island_runtime::op!(RMSNORM);

/// The engine's [`rmsnorm`](crate::kernels::rmsnorm) of each of `tokens` vectors `x` (`n`
/// values) with `w` into `y`.
pub fn launch_twin(client: &Client, n: usize, eps: f32, tokens: usize, [x, w, y]: [&Handle; 3], target: Target) {
    let (count, dim) = batch_grid(n, UNITS, tokens);
    let width = lanes::units(&target, LANES_32);
    let t = tokens;
    // SAFETY: the callers allocate `x` and `y` with `tokens · n` values, `w` with `n`.
    unsafe { kernel::launch_with(client, count, dim, arg(x, t * n), arg(w, n), arg(y, t * n), eps, n, width, target) };
}

/// RMSNorm of each of `tokens` vectors `x` (`n` values) with `w` into `y`, with the candidate
/// the device's record selects.
pub fn rmsnorm(
    client: &Client,
    (n, tokens): (usize, usize),
    eps: f32,
    [x, w, y]: [&Handle; 3],
    target: Target,
) -> Result<(), CellError> {
    run(
        client,
        &KEY,
        target,
        (Shape { rows: 1, cols: n }, tokens),
        |t| launch_twin(client, n, eps, tokens, [x, w, y], t),
        || IncumbentBuffers {
            inputs: vec![x.clone(), w.clone(), scalars(client, &[n as u32, eps.to_bits()])],
            scratch: Vec::new(),
            out: y.clone(),
        },
    )
}
