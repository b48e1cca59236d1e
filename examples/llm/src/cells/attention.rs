//! Attention of one token over the cache: the scores `q·k / 8`, their softmax (in place), and
//! the weighted sum of the values. The twins are the engine's [`scores`](crate::kernels::scores),
//! [`softmax`](crate::kernels::softmax) and [`attend`](crate::kernels::attend).
//!
//! A shape of these cells is `heads × positions`: the query heads (of 64 values, three to a KV
//! head as in SmolLM2) and the cached positions attended to, the cache holding exactly those.
//! Incumbents read their scalars from a `u32` buffer: `{heads, kv_heads, context, n, base}` for
//! the scores and the weighted sum (`base`: the value offset of the layer's cache), `{heads,
//! context, n}` for the softmax.

use super::choice::{IncumbentBuffers, arg, run, scalars};
use crate::deciding::{Draw, softmax_scores};
use crate::kernels::{
    AttnShape, UNITS, attend as attend_kernel, batch_grid, scores as scores_kernel, slots, softmax as softmax_kernel,
};
use crate::lanes::{self, LANES_8, LANES_32};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::cell::{CellError, CellKey, NamedShape, Op, Shape, ShapeRefused};
use island_runtime::inputs::Rng;

/// Query heads per KV head in these cells.
pub const GROUP: usize = 3;
const HD: usize = AttnShape::HEAD_DIM;
const ELEMS: &str = "f32, heads of 64, 3 query heads a KV head";

pub const SCORES_KEY: CellKey = CellKey { op: "attn_scores", quant: "none", elems: ELEMS };
pub const SOFTMAX_KEY: CellKey = CellKey { op: "softmax", quant: "none", elems: ELEMS };
pub const ATTEND_KEY: CellKey = CellKey { op: "attn_values", quant: "none", elems: ELEMS };

/// SmolLM2-135M's heads at a short and at its full context, and a DRAM-bound cache.
pub(crate) const SHAPES: &[NamedShape] = &[
    NamedShape { name: "SmolLM2-135M, 64 positions", shape: Shape { rows: 9, cols: 64 } },
    NamedShape { name: "SmolLM2-135M, 8192 positions", shape: Shape { rows: 9, cols: 8192 } },
    NamedShape { name: "DRAM-bound (24 heads, 8 KV heads, 4096 positions)", shape: Shape { rows: 24, cols: 4096 } },
];

/// The attention shape of a cell shape: `rows` heads, a cache of `cols` positions.
pub(crate) fn attn(s: &Shape) -> AttnShape {
    AttnShape { heads: s.rows, kv_heads: s.rows / GROUP, context: s.cols }
}

pub(crate) fn check(s: &Shape) -> Result<(), ShapeRefused> {
    if s.rows == 0 || !s.rows.is_multiple_of(GROUP) || s.cols == 0 {
        return Err(ShapeRefused(format!(
            "attention takes a multiple of {GROUP} heads and at least one position, got {s}"
        )));
    }
    Ok(())
}

/// The f32 values `h` holds.
pub(crate) fn values(h: &Handle) -> usize {
    h.size() as usize / 4
}

fn f32s(v: &[f32]) -> Vec<u8> {
    f32::as_bytes(v).to_vec()
}

/// The scores: inputs the attention state (the query, `heads × 64`, then the keys, `positions ×
/// kv_heads × 64`) and the scalars; output `heads × positions`.
pub const SCORES: Op = Op {
    key: SCORES_KEY,
    summary: "s[h, j] = (q_h · k_j) / 8, the dot product in order by fma",
    shapes: SHAPES,
    oracle_rows: GROUP,
    check,
    inputs: |s, seed| {
        let a = attn(s);
        let mut rng = Rng::new(seed);
        let state: Vec<f32> = (0..a.heads * HD + s.cols * a.kv_heads * HD).map(|_| rng.wide(10)).collect();
        let p = [a.heads, a.kv_heads, s.cols, s.cols, a.heads * HD].map(|v| v as u32);
        vec![f32s(&state), u32::as_bytes(&p).to_vec()]
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| s.rows * s.cols * 4,
    in_place: None,
    output: island_runtime::ValueKind::F32,
    reference: |s, i| {
        let (a, state) = (attn(s), f32::from_bytes(&i[0]));
        let (dim, kv) = (a.heads * HD, a.kv_heads * HD);
        let mut out = Vec::with_capacity(s.rows * s.cols);
        for h in 0..a.heads {
            for j in 0..s.cols {
                let k0 = dim + j * kv + h / GROUP * HD;
                out.push(crate::reference::score(&state[h * HD..(h + 1) * HD], &state[k0..k0 + HD]));
            }
        }
        f32s(&out)
    },
    twin: |client, s, b, target| {
        // `n` is the fourth of the cell's scalars, where the twin reads it.
        launch_scores(client, (attn(s), 1), [&b.inputs[0], b.out, &b.inputs[1]], 3, s.rows * HD, target);
        Ok(())
    },
};
island_runtime::op!(SCORES);

/// The softmax of each head's scores, in place: input and output `heads × positions` (the
/// output starts as the input), and the scalars.
pub const SOFTMAX: Op = Op {
    key: SOFTMAX_KEY,
    summary: "p_j = exp(s_j − max) / Σ exp(s_k − max), the maximum and the sum in order, exp the engine's own (crate::math), / correctly rounded",
    shapes: SHAPES,
    oracle_rows: GROUP,
    check,
    inputs: |s, seed| {
        let scores = softmax_scores(s.rows, s.cols, &mut Rng::new(seed));
        vec![f32s(&scores), u32::as_bytes(&[s.rows as u32, s.cols as u32, s.cols as u32]).to_vec()]
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| s.rows * s.cols * 4,
    in_place: Some(0),
    output: island_runtime::ValueKind::F32,
    reference: |s, i| {
        let mut p = f32::from_bytes(&i[0]).to_vec();
        p.chunks_exact_mut(s.cols).for_each(crate::reference::softmax);
        f32s(&p)
    },
    twin: |client, s, b, target| {
        // `n` is the third of the cell's scalars, where the twin reads it.
        launch_softmax(client, (attn(s), 1), [b.out, &b.inputs[1]], 2, target);
        Ok(())
    },
};
island_runtime::op!(SOFTMAX);

/// The weighted sum of the values: inputs the weights (`heads × positions`), the values
/// (`positions × kv_heads × 64`) and the scalars; output `heads × 64`.
pub const ATTEND: Op = Op {
    key: ATTEND_KEY,
    summary: "out[h, d] = Σ_j p[h, j] · v_j[d], in order by fma",
    shapes: SHAPES,
    oracle_rows: GROUP,
    check,
    inputs: |s, seed| {
        let a = attn(s);
        let mut rng = Rng::new(seed);
        let p: Vec<f32> = (0..s.rows * s.cols).map(|i| if i % 11 == 0 { 0.0 } else { rng.unit() }).collect();
        let v: Vec<f32> = (0..s.cols * a.kv_heads * HD).map(|_| rng.wide(12)).collect();
        let params = [a.heads, a.kv_heads, s.cols, s.cols, 0].map(|v| v as u32);
        vec![f32s(&p), f32s(&v), u32::as_bytes(&params).to_vec()]
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| s.rows * HD * 4,
    in_place: None,
    output: island_runtime::ValueKind::F32,
    reference: |s, i| {
        let a = attn(s);
        let (p, v, kv) = (f32::from_bytes(&i[0]), f32::from_bytes(&i[1]), a.kv_heads * HD);
        let mut out = Vec::with_capacity(s.rows * HD);
        for h in 0..a.heads {
            for d in 0..HD {
                let ph = &p[h * s.cols..(h + 1) * s.cols];
                out.push(crate::reference::weighted_sum(ph, (0..s.cols).map(|j| v[j * kv + h / GROUP * HD + d])));
            }
        }
        f32s(&out)
    },
    twin: |client, s, b, target| {
        // `n` is the fourth of the cell's scalars, where the twin reads it.
        launch_attend(client, (attn(s), 1), [&b.inputs[0], &b.inputs[1], b.out, &b.inputs[2]], 3, 0, target);
        Ok(())
    },
};
island_runtime::op!(ATTEND);

/// The engine's [`scores`](crate::kernels::scores) of each of `tokens` queries at the start of
/// `state` against `step[at] + t` keys from value offset `base`, into `s` (`heads × context` a
/// token).
pub fn launch_scores(
    client: &Client,
    (a, tokens): (AttnShape, usize),
    [state, s, step]: [&Handle; 3],
    at: usize,
    base: usize,
    target: Target,
) {
    let (count, dim) = batch_grid(a.heads * a.context, UNITS, tokens);
    // SAFETY: the lengths are the handles' own.
    unsafe {
        scores_kernel::launch_with(
            client,
            count,
            dim,
            arg(state, values(state)),
            arg(s, values(s)),
            arg(step, values(step)),
            base as u32,
            at,
            a,
            target,
        )
    };
}

/// The engine's [`softmax`](crate::kernels::softmax) of the first `step[at] + t` scores of each
/// head of each token `t` of `tokens` in `s`.
pub fn launch_softmax(
    client: &Client,
    (a, tokens): (AttnShape, usize),
    [s, step]: [&Handle; 2],
    at: usize,
    target: Target,
) {
    let width = lanes::units(&target, LANES_32);
    let (count, dim) = batch_grid(a.heads * width as usize, UNITS, tokens);
    // SAFETY: the lengths are the handles' own.
    let (s, step) = unsafe { (arg(s, values(s)), arg(step, values(step))) };
    softmax_kernel::launch_with(client, count, dim, s, step, at, a, width, target);
}

/// The engine's [`attend`](crate::kernels::attend): each of `tokens` tokens' weights `p` over
/// `step[at] + t` values of `vc` from value offset `base`, into `out` (`heads × 64` a token).
pub fn launch_attend(
    client: &Client,
    (a, tokens): (AttnShape, usize),
    [p, vc, out, step]: [&Handle; 4],
    at: usize,
    base: usize,
    target: Target,
) {
    let width = lanes::units(&target, LANES_8);
    let (count, dim) = batch_grid(a.heads * HD * width as usize, UNITS, tokens);
    // SAFETY: the lengths are the handles' own.
    unsafe {
        attend_kernel::launch_with(
            client,
            count,
            dim,
            arg(p, values(p)),
            arg(vc, values(vc)),
            arg(out, values(out)),
            arg(step, values(step)),
            base as u32,
            at,
            a,
            width,
            target,
        )
    };
}

/// The scores of `n` cached positions (keys from value offset `base` of `state`; token `t` of
/// `tokens` over `n + t`), with the candidate the device's record selects: the twin reads `n`
/// from the engine's step buffer `step` ([`slots::N`]), an incumbent its one token's from its
/// own scalars.
pub fn scores(
    client: &Client,
    (a, tokens): (AttnShape, usize),
    [state, s, step]: [&Handle; 3],
    n: usize,
    base: usize,
    target: Target,
) -> Result<(), CellError> {
    run(
        client,
        &SCORES_KEY,
        target,
        (Shape { rows: a.heads, cols: n }, tokens),
        |t| launch_scores(client, (a, tokens), [state, s, step], slots::N, base, t),
        || IncumbentBuffers {
            inputs: vec![state.clone(), scalars(client, &[a.heads, a.kv_heads, a.context, n, base].map(|v| v as u32))],
            scratch: Vec::new(),
            out: s.clone(),
        },
    )
}

/// The softmax of each head's first `n` scores in `s` (`n + t` of token `t`), in place, with
/// the candidate the device's record selects (`n` read as by [`scores`]).
pub fn softmax(
    client: &Client,
    (a, tokens): (AttnShape, usize),
    [s, step]: [&Handle; 2],
    n: usize,
    target: Target,
) -> Result<(), CellError> {
    run(
        client,
        &SOFTMAX_KEY,
        target,
        (Shape { rows: a.heads, cols: n }, tokens),
        |t| launch_softmax(client, (a, tokens), [s, step], slots::N, t),
        || IncumbentBuffers {
            inputs: vec![s.clone(), scalars(client, &[a.heads as u32, a.context as u32, n as u32])],
            scratch: Vec::new(),
            out: s.clone(),
        },
    )
}

/// The weighted sum of `n` cached values (from value offset `base` of `vc`; `n + t` of token
/// `t`), with the candidate the device's record selects (`n` read as by [`scores`]).
pub fn attend(
    client: &Client,
    (a, tokens): (AttnShape, usize),
    [p, vc, out, step]: [&Handle; 4],
    n: usize,
    base: usize,
    target: Target,
) -> Result<(), CellError> {
    run(
        client,
        &ATTEND_KEY,
        target,
        (Shape { rows: a.heads, cols: n }, tokens),
        |t| launch_attend(client, (a, tokens), [p, vc, out, step], slots::N, base, t),
        || IncumbentBuffers {
            inputs: vec![
                p.clone(),
                vc.clone(),
                scalars(client, &[a.heads, a.kv_heads, a.context, n, base].map(|v| v as u32)),
            ],
            scratch: Vec::new(),
            out: out.clone(),
        },
    )
}
