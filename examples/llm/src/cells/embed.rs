//! The token embedding: one row of the Q8_0 embedding matrix, dequantized. The twin is the
//! engine's [`embed`](crate::kernels::embed), a plain CubeCL kernel (no island: one product per
//! value, exact in f32).

use super::attention::values;
use super::choice::{IncumbentBuffers, arg, run, scalars};
use crate::deciding::matrix;
use crate::kernels::{UNITS, batch_grid, embed as kernel, slots};
use crate::quant::QuantType;
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::cell::{CellError, CellKey, NamedShape, Op, Shape, ShapeRefused};
use island_runtime::inputs::Rng;

pub const KEY: CellKey = CellKey { op: "embed", quant: "q8_0", elems: "f32 = q8_0 row" };

/// The row a cell input looks up: two thirds into the vocabulary, not a power of two.
fn token(s: &Shape) -> u32 {
    (s.rows * 2 / 3) as u32
}

/// Row `token` of a `rows × cols` Q8_0 matrix (the engine's k-major layout), `x = d · q`.
/// Inputs: the words, the scales, `{token, rows, cols}` as u32; output `x` (cols f32).
pub const EMBED: Op = Op {
    key: KEY,
    summary: "x[i] = d · q of row `token`, value i",
    shapes: &[
        NamedShape { name: "SmolLM2-135M token_embd", shape: Shape { rows: 49152, cols: 576 } },
        NamedShape { name: "a small vocabulary (2048 × 1024)", shape: Shape { rows: 2048, cols: 1024 } },
    ],
    oracle_rows: 64,
    check: |s| {
        if s.rows > 0 && s.cols > 0 && s.cols.is_multiple_of(32) {
            Ok(())
        } else {
            Err(ShapeRefused(format!("an embedding needs rows of a multiple of 32 values, got {s}")))
        }
    },
    inputs: |s, seed| {
        let w = matrix(QuantType::Q8_0, s.rows, s.cols, &mut Rng::new(seed)).expect("the shape passed the check");
        vec![
            i32::as_bytes(&w.words).to_vec(),
            f32::as_bytes(&w.scales).to_vec(),
            u32::as_bytes(&[token(s), s.rows as u32, s.cols as u32]).to_vec(),
        ]
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| s.cols * 4,
    in_place: None,
    output: island_runtime::ValueKind::F32,
    reference: |s, i| {
        let w = crate::quant::QuantMatrix {
            ty: QuantType::Q8_0,
            rows: s.rows,
            cols: s.cols,
            words: i32::from_bytes(&i[0]).to_vec(),
            scales: f32::from_bytes(&i[1]).to_vec(),
            mins: Vec::new(),
        };
        let x: Vec<f32> = (0..s.cols).map(|c| w.weight(token(s) as usize, c)).collect();
        f32::as_bytes(&x).to_vec()
    },
    twin: |client, s, b, _| {
        // The token is the first of the cell's scalars, where the twin reads it.
        launch_twin(client, s.rows, s.cols, 1, [&b.inputs[0], &b.inputs[1], b.out, &b.inputs[2]], 0);
        Ok(())
    },
};
island_runtime::op!(EMBED);

/// The engine's [`embed`](crate::kernels::embed) of rows `step[at..at + tokens]` of the `rows ×
/// cols` matrix (words `w`, scales `d`) into `x` (`tokens × cols`).
pub fn launch_twin(client: &Client, rows: usize, cols: usize, tokens: usize, [w, d, x, step]: [&Handle; 4], at: usize) {
    let (count, dim) = batch_grid(cols, UNITS, tokens);
    // SAFETY: the callers allocate `w` with `rows · cols / 4` words, `d` with a scale per block
    // of 32 and `x` with `cols` values.
    unsafe {
        kernel::launch(
            client,
            count,
            dim,
            arg(w, rows * cols / 4),
            arg(d, rows * cols / 32),
            arg(x, tokens * cols),
            arg(step, values(step)),
            at,
            rows,
            cols,
        )
    };
}

/// The rows of a batch's `tokens` tokens (the first `token`) of the embedding into `x`, with
/// the candidate the device's record selects (the twin has no islands: `target` matters only to
/// a forced `default`). The twin reads the tokens from the engine's step buffer `step`
/// ([`slots::TOKEN`]), an incumbent its one token from its own scalars.
pub fn embed(
    client: &Client,
    (rows, cols, tokens): (usize, usize, usize),
    [w, d, x, step]: [&Handle; 4],
    token: u32,
    target: Target,
) -> Result<(), CellError> {
    run(
        client,
        &KEY,
        target,
        (Shape { rows, cols }, tokens),
        |_| launch_twin(client, rows, cols, tokens, [w, d, x, step], slots::TOKEN),
        || IncumbentBuffers {
            inputs: vec![w.clone(), d.clone(), scalars(client, &[token, rows as u32, cols as u32])],
            scratch: Vec::new(),
            out: x.clone(),
        },
    )
}
