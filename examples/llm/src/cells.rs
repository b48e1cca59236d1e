//! The engine's cells of "verify, then delete" (`island_runtime::cell`): the quantized matvec
//! with its activation quantizer, `y = W·q8_1(x)`, for Q4_1 and Q8_0 weights (the twin is the
//! engine's own pair of kernels, [`quantize_q8_1`] and [`qmatvec`]), and SwiGLU (its
//! [`swiglu`](crate::kernels::swiglu)). The incumbents are in [`crate::incumbents`]. [`matvec`]
//! and [`swiglu`] are what the engine calls: each runs the candidate the device's record selects
//! (`island_runtime::dispatch`).

use crate::deciding::{activations, matrix, swiglu_pairs};
use crate::kernels::{MatvecShape, QUANT_UNITS, UNITS, grid, qmatvec};
use crate::quant::{BLOCK, QuantType};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_examples::q8_matvec::quantize_q8_1;
use island_runtime::Target;
use island_runtime::cell::{Buffers, CellError, CellKey, Inputs, NamedShape, Op, Shape};
use island_runtime::dispatch::{self, Choice};
use island_runtime::inputs::Rng;

/// The key of the matvec cell of `ty`.
pub const fn key(ty: QuantType) -> CellKey {
    match ty {
        QuantType::Q4_1 => CellKey { op: "matvec", quant: "q4_1", elems: "f32 = q4_1 · q8_1(f32)" },
        QuantType::Q8_0 => CellKey { op: "matvec", quant: "q8_0", elems: "f32 = q8_0 · q8_1(f32)" },
    }
}

/// SmolLM2-135M's matrices (dim 576, 3 KV heads of 64, ffn 1536), and a DRAM-bound one.
const SHAPES: &[NamedShape] = &[
    NamedShape { name: "SmolLM2-135M attn_qkv", shape: Shape { rows: 960, cols: 576 } },
    NamedShape { name: "SmolLM2-135M ffn_gate_up", shape: Shape { rows: 3072, cols: 576 } },
    NamedShape { name: "SmolLM2-135M ffn_down", shape: Shape { rows: 576, cols: 1536 } },
    NamedShape { name: "SmolLM2-135M output (tied embedding)", shape: Shape { rows: 49152, cols: 576 } },
    NamedShape { name: "DRAM-bound (7B ffn_down)", shape: Shape { rows: 4096, cols: 14336 } },
];

/// The matvec cell of Q4_1 weights. Inputs: the words, scales and minima in the engine's
/// k-major layout (`crate::quant`), `x` (cols f32), `{rows, cols}` as u32; scratch: the
/// quantized activations (8 words a block) and their scales.
pub const MATVEC_Q4_1: Op = op(QuantType::Q4_1);
/// The matvec cell of Q8_0 weights (inputs as [`MATVEC_Q4_1`]'s; the minima are one zero).
pub const MATVEC_Q8_0: Op = op(QuantType::Q8_0);
island_runtime::op!(MATVEC_Q4_1);
island_runtime::op!(MATVEC_Q8_0);

const fn op(ty: QuantType) -> Op {
    Op {
        key: key(ty),
        summary: "y = W·x with x quantized to Q8_1 blocks (d = amax / 127, q = round(x / d)), blocks summed in order",
        shapes: SHAPES,
        oracle_rows: 64,
        check: |s| {
            if s.rows == 0 || s.cols == 0 || !s.cols.is_multiple_of(BLOCK) {
                return Err(format!("a matvec needs rows of a multiple of {BLOCK} values, got {s}"));
            }
            Ok(())
        },
        inputs: match ty {
            QuantType::Q4_1 => |s, seed| inputs(QuantType::Q4_1, s, seed),
            QuantType::Q8_0 => |s, seed| inputs(QuantType::Q8_0, s, seed),
        },
        scratch: |s| vec![s.cols, s.cols / BLOCK * 4],
        out_bytes: |s| s.rows * 4,
        output: island_runtime::ValueKind::F32,
        reference: match ty {
            QuantType::Q4_1 => |s, i| reference(QuantType::Q4_1, s, i),
            QuantType::Q8_0 => |s, i| reference(QuantType::Q8_0, s, i),
        },
        twin: match ty {
            QuantType::Q4_1 => |c, s, b, t| twin(QuantType::Q4_1, c, s, b, t),
            QuantType::Q8_0 => |c, s, b, t| twin(QuantType::Q8_0, c, s, b, t),
        },
        twin_source: &[include_str!("kernels.rs"), include_str!("../../src/q8_matvec/kernels.rs")],
    }
}

fn inputs(ty: QuantType, s: &Shape, seed: u64) -> Inputs {
    let mut rng = Rng::new(seed);
    let w = matrix(ty, s.rows, s.cols, &mut rng).expect("the shape passed the check");
    let x = activations(s.cols, &mut rng);
    let mins = if w.mins.is_empty() { vec![0.0f32] } else { w.mins };
    let params = [s.rows as u32, s.cols as u32];
    vec![
        i32::as_bytes(&w.words).to_vec(),
        f32::as_bytes(&w.scales).to_vec(),
        f32::as_bytes(&mins).to_vec(),
        f32::as_bytes(&x).to_vec(),
        u32::as_bytes(&params).to_vec(),
    ]
}

fn reference(ty: QuantType, s: &Shape, i: &Inputs) -> Vec<u8> {
    let mins = f32::from_bytes(&i[2]);
    let w = crate::quant::QuantMatrix {
        ty,
        rows: s.rows,
        cols: s.cols,
        words: i32::from_bytes(&i[0]).to_vec(),
        scales: f32::from_bytes(&i[1]).to_vec(),
        mins: if ty == QuantType::Q4_1 { mins.to_vec() } else { Vec::new() },
    };
    let mut y = vec![0.0f32; s.rows];
    crate::reference::matvec(&w, f32::from_bytes(&i[3]), &mut y, false);
    f32::as_bytes(&y).to_vec()
}

fn twin(ty: QuantType, client: &Client, s: &Shape, b: &Buffers, target: Target) -> Result<(), CellError> {
    let [w, d, m, x, _] = b.inputs else {
        return Err(CellError::Shape { cell: key(ty).to_string(), reason: "five input buffers expected".into() });
    };
    let [xq, xd] = b.scratch else {
        return Err(CellError::Shape { cell: key(ty).to_string(), reason: "two scratch buffers expected".into() });
    };
    let shape = MatvecShape { ty, rows: s.rows, blocks: s.cols / BLOCK, accumulate: false };
    launch_twin(client, shape, [w, d, m, x, xq, xd, b.out], target);
    Ok(())
}

/// The engine's quantizer then [`qmatvec`] with `target`: `bufs` are the words, scales, minima,
/// activations, quantized activations, their scales and the output.
pub fn launch_twin(client: &Client, shape: MatvecShape, bufs: [&Handle; 7], target: Target) {
    let [w, d, m, x, xq, xd, y] = bufs;
    let cols = shape.blocks * BLOCK;
    let words = cols / 4;
    let mins = if shape.ty == QuantType::Q4_1 { shape.rows * shape.blocks } else { 1 };
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
        let (count, dim) = grid(shape.rows, UNITS);
        qmatvec::launch_with(
            client,
            count,
            dim,
            BufferArg::from_raw_parts(w.clone(), shape.rows * shape.blocks * shape.ty.vectors()),
            BufferArg::from_raw_parts(d.clone(), shape.rows * shape.blocks),
            BufferArg::from_raw_parts(m.clone(), mins),
            BufferArg::from_raw_parts(xq.clone(), shape.blocks * 2),
            BufferArg::from_raw_parts(xd.clone(), shape.blocks),
            BufferArg::from_raw_parts(y.clone(), shape.rows),
            shape,
            target,
        );
    }
}

/// `y = W·q8_1(x)` (or `y += …` with `shape.accumulate`) with the candidate the device's record
/// selects (`island_runtime::dispatch::choose`): the twin with `target` where the cell flipped or
/// was not measured, the incumbent where it was declined. `params` holds `{rows, cols}` as u32
/// (the incumbents' scalars). Fused residual adds (`accumulate`) have no cell yet: the twin runs.
pub fn matvec(
    client: &Client,
    shape: MatvecShape,
    bufs: [&Handle; 7],
    params: &Handle,
    target: Target,
) -> Result<(), CellError> {
    let choice = if shape.accumulate { Choice::Twin(target) } else { dispatch::choose(client, &key(shape.ty))? };
    launch_choice(choice, client, shape, bufs, params, target)
}

/// [`matvec`] with the candidate given: the twin with `target` (or with `default` in every
/// island where the choice forced it), or the incumbent on the same buffers.
pub fn launch_choice(
    choice: Choice,
    client: &Client,
    shape: MatvecShape,
    bufs: [&Handle; 7],
    params: &Handle,
    target: Target,
) -> Result<(), CellError> {
    match choice {
        Choice::Twin(forced) => {
            launch_twin(client, shape, bufs, if choice.name() == "default" { forced } else { target });
            Ok(())
        }
        Choice::Incumbent(inc) => {
            let [w, d, m, x, xq, xd, y] = bufs;
            let inputs = [w.clone(), d.clone(), m.clone(), x.clone(), params.clone()];
            let scratch = [xq.clone(), xd.clone()];
            let s = Shape { rows: shape.rows, cols: shape.blocks * BLOCK };
            (inc.launch)(client, &s, &Buffers { inputs: &inputs, scratch: &scratch, out: y })
        }
    }
}

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
    check: |s| if s.rows == 1 && s.cols > 0 { Ok(()) } else { Err(format!("SwiGLU takes one row of pairs, got {s}")) },
    inputs: |s, seed| {
        let (gate, up) = swiglu_pairs(s.cols, &mut Rng::new(seed));
        let n = s.cols;
        let gate_up: Vec<f32> = gate.into_iter().chain(up).collect();
        vec![f32::as_bytes(&gate_up).to_vec(), u32::as_bytes(&[n as u32]).to_vec()]
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| s.cols * 4,
    output: island_runtime::ValueKind::F32,
    reference: |s, i| {
        let gate_up = f32::from_bytes(&i[0]);
        let a: Vec<f32> = (0..s.cols).map(|j| crate::reference::swiglu(gate_up[j], gate_up[s.cols + j])).collect();
        f32::as_bytes(&a).to_vec()
    },
    twin: |client, s, b, target| {
        launch_swiglu(client, s.cols, &b.inputs[0], b.out, target);
        Ok(())
    },
    twin_source: &[include_str!("kernels.rs"), include_str!("math.rs")],
};
island_runtime::op!(SWIGLU);

/// The engine's [`swiglu`](crate::kernels::swiglu) kernel over `n` pairs with `target`.
pub fn launch_swiglu(client: &Client, n: usize, gate_up: &Handle, a: &Handle, target: Target) {
    let (count, dim) = grid(n, UNITS);
    // SAFETY: the callers allocate `gate_up` with 2n values and `a` with n.
    unsafe {
        crate::kernels::swiglu::launch_with(
            client,
            count,
            dim,
            BufferArg::from_raw_parts(gate_up.clone(), 2 * n),
            BufferArg::from_raw_parts(a.clone(), n),
            n,
            target,
        );
    }
}

/// SwiGLU over `n` pairs with the candidate the device's record selects (as [`matvec`]);
/// `params` holds `{n}` as u32.
pub fn swiglu(
    client: &Client,
    n: usize,
    gate_up: &Handle,
    a: &Handle,
    params: &Handle,
    target: Target,
) -> Result<(), CellError> {
    match dispatch::choose(client, &SWIGLU_KEY)? {
        choice @ Choice::Twin(forced) => {
            launch_swiglu(client, n, gate_up, a, if choice.name() == "default" { forced } else { target });
            Ok(())
        }
        Choice::Incumbent(inc) => {
            let inputs = [gate_up.clone(), params.clone()];
            (inc.launch)(client, &Shape { rows: 1, cols: n }, &Buffers { inputs: &inputs, scratch: &[], out: a })
        }
    }
}
