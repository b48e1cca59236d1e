//! The quantized matvec with its activation quantizer, `y = W·q8_1(x)`, for Q4_1 and Q8_0
//! weights, and the same with the residual add fused in, `y += W·q8_1(x)` (the attention's
//! output projection and the FFN's down projection add into the residual stream). The twin is
//! the engine's own pair of kernels, [`quantize_q8_1`] and [`qmatvec`].

use super::choice::{IncumbentBuffers, run_choice};
use crate::deciding::{Draw, activations, matrix};
use crate::kernels::{MatvecShape, QUANT_UNITS, TOKENS_PER_UNIT, UNITS, batch_grid, grid, qmatvec};
use crate::lanes::{self, LANES_8};
use crate::quant::{BLOCK, QuantType};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_examples::q8_matvec::quantize_q8_1;
use island_runtime::Target;
use island_runtime::cell::{Buffers, CellError, CellKey, Inputs, NamedShape, Op, Shape, ShapeRefused};
use island_runtime::dispatch::{self, Choice};
use island_runtime::inputs::Rng;

/// The key of the matvec cell of `ty`.
pub const fn key(ty: QuantType) -> CellKey {
    match ty {
        QuantType::Q4_1 => CellKey { op: "matvec", quant: "q4_1", elems: "f32 = q4_1 · q8_1(f32)" },
        QuantType::Q8_0 => CellKey { op: "matvec", quant: "q8_0", elems: "f32 = q8_0 · q8_1(f32)" },
    }
}

/// The key of the matvec cell of `ty` with the residual add.
pub const fn key_add(ty: QuantType) -> CellKey {
    match ty {
        QuantType::Q4_1 => CellKey { op: "matvec_add", quant: "q4_1", elems: "f32 += q4_1 · q8_1(f32)" },
        QuantType::Q8_0 => CellKey { op: "matvec_add", quant: "q8_0", elems: "f32 += q8_0 · q8_1(f32)" },
    }
}

/// The key of the cell `shape` runs in.
pub const fn key_of(shape: &MatvecShape) -> CellKey {
    if shape.accumulate { key_add(shape.ty) } else { key(shape.ty) }
}

/// SmolLM2-135M's matrices (dim 576, 3 KV heads of 64, ffn 1536), and a DRAM-bound one.
const SHAPES: &[NamedShape] = &[
    NamedShape { name: "SmolLM2-135M attn_qkv", shape: Shape { rows: 960, cols: 576 } },
    NamedShape { name: "SmolLM2-135M ffn_gate_up", shape: Shape { rows: 3072, cols: 576 } },
    NamedShape { name: "SmolLM2-135M ffn_down", shape: Shape { rows: 576, cols: 1536 } },
    NamedShape { name: "SmolLM2-135M output (tied embedding)", shape: Shape { rows: 49152, cols: 576 } },
    NamedShape { name: "DRAM-bound (7B ffn_down)", shape: Shape { rows: 4096, cols: 14336 } },
];

/// The projections that add into the residual stream: SmolLM2-135M's and a DRAM-bound one.
const ADD_SHAPES: &[NamedShape] = &[
    NamedShape { name: "SmolLM2-135M attn_output", shape: Shape { rows: 576, cols: 576 } },
    NamedShape { name: "SmolLM2-135M ffn_down", shape: Shape { rows: 576, cols: 1536 } },
    NamedShape { name: "DRAM-bound (7B ffn_down)", shape: Shape { rows: 4096, cols: 14336 } },
];

/// The matvec cell of Q4_1 weights. Inputs: the words, scales and minima in the engine's
/// k-major layout (`crate::quant`), `x` (cols f32), `{rows, cols, 0}` as u32; scratch: the
/// quantized activations (8 words a block) and their scales.
pub const MATVEC_Q4_1: Op = op(QuantType::Q4_1, false);
/// The matvec cell of Q8_0 weights (inputs as [`MATVEC_Q4_1`]'s; the minima are one zero).
pub const MATVEC_Q8_0: Op = op(QuantType::Q8_0, false);
/// The matvec cell of Q4_1 weights with the residual add: inputs as [`MATVEC_Q4_1`]'s with
/// `{rows, cols, 1}`, then the residual stream `y` (rows f32), which the output starts as.
pub const MATVEC_ADD_Q4_1: Op = op(QuantType::Q4_1, true);
/// The matvec cell of Q8_0 weights with the residual add (as [`MATVEC_ADD_Q4_1`]).
pub const MATVEC_ADD_Q8_0: Op = op(QuantType::Q8_0, true);
island_runtime::op!(MATVEC_Q4_1);
island_runtime::op!(MATVEC_Q8_0);
island_runtime::op!(MATVEC_ADD_Q4_1);
island_runtime::op!(MATVEC_ADD_Q8_0);

const fn op(ty: QuantType, add: bool) -> Op {
    Op {
        key: if add { key_add(ty) } else { key(ty) },
        summary: if add {
            "y += W·x with x quantized to Q8_1 blocks (d = amax / 127, q = round(x / d)), blocks summed in order, then added once"
        } else {
            "y = W·x with x quantized to Q8_1 blocks (d = amax / 127, q = round(x / d)), blocks summed in order"
        },
        shapes: if add { ADD_SHAPES } else { SHAPES },
        oracle_rows: 64,
        check: |s| {
            if s.rows == 0 || s.cols == 0 || !s.cols.is_multiple_of(BLOCK) {
                return Err(ShapeRefused(format!("a matvec needs rows of a multiple of {BLOCK} values, got {s}")));
            }
            Ok(())
        },
        inputs: match (ty, add) {
            (QuantType::Q4_1, false) => |s, seed| inputs(QuantType::Q4_1, false, s, seed),
            (QuantType::Q8_0, false) => |s, seed| inputs(QuantType::Q8_0, false, s, seed),
            (QuantType::Q4_1, true) => |s, seed| inputs(QuantType::Q4_1, true, s, seed),
            (QuantType::Q8_0, true) => |s, seed| inputs(QuantType::Q8_0, true, s, seed),
        },
        scratch: |s| vec![s.cols, s.cols / BLOCK * 4],
        out_bytes: |s| s.rows * 4,
        in_place: if add { Some(5) } else { None },
        output: island_runtime::ValueKind::F32,
        reference: match (ty, add) {
            (QuantType::Q4_1, false) => |s, i| reference(QuantType::Q4_1, false, s, i),
            (QuantType::Q8_0, false) => |s, i| reference(QuantType::Q8_0, false, s, i),
            (QuantType::Q4_1, true) => |s, i| reference(QuantType::Q4_1, true, s, i),
            (QuantType::Q8_0, true) => |s, i| reference(QuantType::Q8_0, true, s, i),
        },
        twin: match (ty, add) {
            (QuantType::Q4_1, false) => |c, s, b, t| twin(QuantType::Q4_1, false, c, s, b, t),
            (QuantType::Q8_0, false) => |c, s, b, t| twin(QuantType::Q8_0, false, c, s, b, t),
            (QuantType::Q4_1, true) => |c, s, b, t| twin(QuantType::Q4_1, true, c, s, b, t),
            (QuantType::Q8_0, true) => |c, s, b, t| twin(QuantType::Q8_0, true, c, s, b, t),
        },
    }
}

fn inputs(ty: QuantType, add: bool, s: &Shape, seed: u64) -> Inputs {
    let mut rng = Rng::new(seed);
    let w = matrix(ty, s.rows, s.cols, &mut rng).expect("the shape passed the check");
    let x = activations(s.cols, &mut rng);
    let mins = if w.mins.is_empty() { vec![0.0f32] } else { w.mins };
    let params = [s.rows as u32, s.cols as u32, add as u32];
    let mut all = vec![
        i32::as_bytes(&w.words).to_vec(),
        f32::as_bytes(&w.scales).to_vec(),
        f32::as_bytes(&mins).to_vec(),
        f32::as_bytes(&x).to_vec(),
        u32::as_bytes(&params).to_vec(),
    ];
    if add {
        // A residual stream of the products' magnitudes and far larger (the add rounds), with
        // zeros of both signs.
        let y: Vec<f32> = (0..s.rows)
            .map(|r| match r % 7 {
                0 => -0.0,
                1 => 0.0,
                _ => rng.wide(12),
            })
            .collect();
        all.push(f32::as_bytes(&y).to_vec());
    }
    all
}

fn reference(ty: QuantType, add: bool, s: &Shape, i: &Inputs) -> Vec<u8> {
    let mins = f32::from_bytes(&i[2]);
    let w = crate::quant::QuantMatrix {
        ty,
        rows: s.rows,
        cols: s.cols,
        words: i32::from_bytes(&i[0]).to_vec(),
        scales: f32::from_bytes(&i[1]).to_vec(),
        mins: if ty == QuantType::Q4_1 { mins.to_vec() } else { Vec::new() },
    };
    let mut y = if add { f32::from_bytes(&i[5]).to_vec() } else { vec![0.0f32; s.rows] };
    crate::reference::matvec(&w, f32::from_bytes(&i[3]), &mut y, add);
    f32::as_bytes(&y).to_vec()
}

fn twin(ty: QuantType, add: bool, client: &Client, s: &Shape, b: &Buffers, target: Target) -> Result<(), CellError> {
    let cell = if add { key_add(ty) } else { key(ty) };
    let [w, d, m, x, _, ..] = b.inputs else {
        return Err(CellError::Shape { cell: cell.to_string(), reason: "five input buffers expected".into() });
    };
    let [xq, xd] = b.scratch else {
        return Err(CellError::Shape { cell: cell.to_string(), reason: "two scratch buffers expected".into() });
    };
    let shape = MatvecShape { ty, rows: s.rows, blocks: s.cols / BLOCK, accumulate: add };
    launch_twin(client, (shape, 1), [w, d, m, x, xq, xd, b.out], target);
    Ok(())
}

/// The engine's quantizer then [`qmatvec`] with `target`, for each of `tokens` activation
/// vectors: `bufs` are the words, scales, minima, activations, quantized activations, their
/// scales and the output.
pub fn launch_twin(client: &Client, (shape, tokens): (MatvecShape, usize), bufs: [&Handle; 7], target: Target) {
    let [w, d, m, x, xq, xd, y] = bufs;
    let cols = shape.blocks * BLOCK;
    // Blocks are quantized alone: a batch's vectors are one long vector to the quantizer.
    let words = tokens * cols / 4;
    let (count, dim) = grid(words, QUANT_UNITS);
    // SAFETY: the callers allocate each buffer with at least the element count given here (the
    // engine in `Engine::new`, the gate from the cell's sizes).
    unsafe {
        quantize_q8_1::launch_with(
            client,
            count,
            dim,
            BufferArg::from_raw_parts(x.clone(), words),
            BufferArg::from_raw_parts(xq.clone(), words),
            BufferArg::from_raw_parts(xd.clone(), words / 8),
            words,
            target,
        );
    }
    launch_product(client, (shape, tokens), [w, d, m, xq, xd, y], target);
}

/// The engine's [`qmatvec`] alone with `target`, on `tokens` activation vectors already
/// quantized (`xq`, `xd`: by the quantizer, or by a fused kernel of [`crate::fused`]): `bufs`
/// are the words, scales, minima, quantized activations, their scales and the output. A batch's
/// units take [`TOKENS_PER_UNIT`] tokens each.
pub fn launch_product(client: &Client, (shape, tokens): (MatvecShape, usize), bufs: [&Handle; 6], target: Target) {
    let [w, d, m, xq, xd, y] = bufs;
    let mins = if shape.ty == QuantType::Q4_1 { shape.rows * shape.blocks } else { 1 };
    let per_unit = if tokens > 1 { TOKENS_PER_UNIT } else { 1 };
    let t = tokens;
    // SAFETY: as in `launch_twin`.
    unsafe {
        let width = lanes::units(&target, LANES_8);
        let (count, dim) = batch_grid(shape.rows * width as usize, UNITS, t.div_ceil(per_unit as usize));
        qmatvec::launch_with(
            client,
            count,
            dim,
            BufferArg::from_raw_parts(w.clone(), shape.rows * shape.blocks * shape.ty.vectors()),
            BufferArg::from_raw_parts(d.clone(), shape.rows * shape.blocks),
            BufferArg::from_raw_parts(m.clone(), mins),
            BufferArg::from_raw_parts(xq.clone(), t * shape.blocks * 2),
            BufferArg::from_raw_parts(xd.clone(), t * shape.blocks),
            BufferArg::from_raw_parts(y.clone(), t * shape.rows),
            t as u32,
            shape,
            width,
            per_unit,
            target,
        );
    }
}

/// `y = W·q8_1(x)` (or `y += …` with `shape.accumulate`, the cell with the residual add) for
/// each of `tokens` vectors, with the candidate the device's record selects
/// (`island_runtime::dispatch::choose`). `params` holds `{rows, cols, accumulate}` as u32 (the
/// incumbents' scalars).
pub fn matvec(
    client: &Client,
    (shape, tokens): (MatvecShape, usize),
    bufs: [&Handle; 7],
    params: &Handle,
    target: Target,
) -> Result<(), CellError> {
    launch_choice(dispatch::choose(client, &key_of(&shape))?, client, (shape, tokens), bufs, params, target)
}

/// [`matvec`] with the candidate given: the twin with `target` (or with `default` in every
/// island where the choice forced it), or the incumbent on the same buffers.
pub fn launch_choice(
    choice: Choice,
    client: &Client,
    (shape, tokens): (MatvecShape, usize),
    bufs: [&Handle; 7],
    params: &Handle,
    target: Target,
) -> Result<(), CellError> {
    let [w, d, m, x, xq, xd, y] = bufs;
    let cells_shape = Shape { rows: shape.rows, cols: shape.blocks * BLOCK };
    run_choice(
        choice,
        client,
        target,
        (cells_shape, tokens),
        |t| launch_twin(client, (shape, tokens), bufs, t),
        || IncumbentBuffers {
            inputs: vec![w.clone(), d.clone(), m.clone(), x.clone(), params.clone()],
            scratch: vec![xq.clone(), xd.clone()],
            out: y.clone(),
        },
    )
}
