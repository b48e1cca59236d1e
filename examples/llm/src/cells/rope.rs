//! RoPE of one token's query and key, stored with its value into the attention state (the
//! query, then the key caches, then the value caches: one buffer, so that one output holds
//! everything the op writes). The twin is the engine's [`rope_store`](crate::kernels::rope_store).
//!
//! A shape is `heads × positions` as in [`super::attention`]: the token is the last of
//! `positions`, and the state holds a cache of exactly those.

use super::attention::{SHAPES, attn, check, values};
use super::choice::{IncumbentBuffers, arg, run, scalars};
use crate::deciding::Draw;
use crate::kernels::{AttnShape, UNITS, batch_grid, rope_store, slots};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::cell::{CellError, CellKey, Op, Shape};
use island_runtime::inputs::Rng;

pub const KEY: CellKey = CellKey { op: "rope", quant: "none", elems: "f32, heads of 64, 3 query heads a KV head" };

const HD: usize = AttnShape::HEAD_DIM;
/// SmolLM2's RoPE base.
const BASE: f32 = 100000.0;

/// Where the token of a cell shape goes: its position, and the value offsets of its key and
/// value slots in the state.
fn slots(s: &Shape) -> (usize, usize, usize) {
    let a = attn(s);
    let (dim, kv) = (a.heads * HD, a.kv_heads * HD);
    let pos = s.cols - 1;
    (pos, dim + pos * kv, dim + s.cols * kv + pos * kv)
}

/// RoPE into the state. Inputs: `qkv` (`q`, `k`, `v` stacked), the cosines and sines of the
/// positions (host tables), `{heads, kv_heads, pos, k_at, v_at}` as u32, and the state before
/// (which the output starts as: every value the op does not write must stay).
pub const ROPE: Op = Op {
    key: KEY,
    summary: "(x0, x1) of each pair → (fma(x0, c, −x1·s), fma(x0, s, x1·c)), the query to the state's start, the key and value to their slots",
    shapes: SHAPES,
    oracle_rows: 3,
    check,
    inputs: |s, seed| {
        let a = attn(s);
        let (dim, kv) = (a.heads * HD, a.kv_heads * HD);
        let mut rng = Rng::new(seed);
        let qkv: Vec<f32> = (0..dim + 2 * kv).map(|i| if i % 17 == 0 { -0.0 } else { rng.wide(12) }).collect();
        let (cos, sin) = crate::rope::tables(HD, BASE, s.cols);
        let state: Vec<f32> = (0..dim + 2 * s.cols * kv).map(|_| rng.wide(4)).collect();
        let (pos, k_at, v_at) = slots(s);
        let params = [a.heads, a.kv_heads, pos, k_at, v_at].map(|v| v as u32);
        [f32::as_bytes(&qkv), f32::as_bytes(&cos), f32::as_bytes(&sin), u32::as_bytes(&params), f32::as_bytes(&state)]
            .map(<[u8]>::to_vec)
            .to_vec()
    },
    scratch: |_| Vec::new(),
    out_bytes: |s| {
        let a = attn(s);
        (a.heads * HD + 2 * s.cols * a.kv_heads * HD) * 4
    },
    in_place: Some(4),
    output: island_runtime::ValueKind::F32,
    reference: |s, i| {
        let a = attn(s);
        let (dim, kv) = (a.heads * HD, a.kv_heads * HD);
        let (qkv, cos, sin) = (f32::from_bytes(&i[0]), f32::from_bytes(&i[1]), f32::from_bytes(&i[2]));
        let mut state = f32::from_bytes(&i[4]).to_vec();
        let (pos, k_at, v_at) = slots(s);
        for u in 0..(dim + kv) / 2 {
            let t = pos * HD / 2 + u % (HD / 2);
            let (y0, y1) = crate::reference::rope_pair(qkv[2 * u], qkv[2 * u + 1], cos[t], sin[t]);
            let at = if 2 * u < dim { 2 * u } else { k_at + 2 * u - dim };
            (state[at], state[at + 1]) = (y0, y1);
        }
        state[v_at..v_at + kv].copy_from_slice(&qkv[dim + kv..]);
        f32::as_bytes(&state).to_vec()
    },
    twin: |client, s, b, target| {
        // The position is the third of the cell's scalars, where the twin reads it; the caches
        // start where `slots` puts them.
        let a = attn(s);
        let keys = a.heads * HD;
        let bufs = [&b.inputs[0], b.out, &b.inputs[1], &b.inputs[2], &b.inputs[3]];
        launch_twin(client, (a, 1), bufs, 2, [keys, keys + s.cols * a.kv_heads * HD], target);
        Ok(())
    },
};
island_runtime::op!(ROPE);

/// The engine's [`rope_store`](crate::kernels::rope_store) of each of `tokens` tokens' `qkv`
/// into `state` with the tables `cos`, `sin`, at positions from `step[at]`, the layer's key and
/// value caches starting at value offsets `keys` and `values` of the state.
pub fn launch_twin(
    client: &Client,
    (a, tokens): (AttnShape, usize),
    [qkv, state, cos, sin, step]: [&Handle; 5],
    at: usize,
    [keys, values_at]: [usize; 2],
    target: Target,
) {
    let (count, dim) = batch_grid(a.heads * HD / 2 + a.kv_heads * HD, UNITS, tokens);
    // SAFETY: the lengths are the handles' own.
    unsafe {
        rope_store::launch_with(
            client,
            count,
            dim,
            arg(qkv, values(qkv)),
            arg(state, values(state)),
            arg(cos, values(cos)),
            arg(sin, values(sin)),
            arg(step, values(step)),
            keys as u32,
            values_at as u32,
            at,
            a,
            target,
        )
    };
}

/// RoPE of each of `tokens` tokens' `qkv` into `state` from position `pos` (see
/// [`launch_twin`]), with the candidate the device's record selects: the twin reads the position
/// from the engine's step buffer `step` ([`slots::POS`]), an incumbent its one token's from its
/// own scalars.
pub fn rope(
    client: &Client,
    (a, tokens): (AttnShape, usize),
    [qkv, state, cos, sin, step]: [&Handle; 5],
    pos: usize,
    [keys, values_at]: [usize; 2],
    target: Target,
) -> Result<(), CellError> {
    let kv = a.kv_heads * HD;
    let (k_at, v_at) = (keys + pos * kv, values_at + pos * kv);
    run(
        client,
        &KEY,
        target,
        (Shape { rows: a.heads, cols: a.context }, tokens),
        |t| launch_twin(client, (a, tokens), [qkv, state, cos, sin, step], slots::POS, [keys, values_at], t),
        || IncumbentBuffers {
            inputs: vec![
                qkv.clone(),
                cos.clone(),
                sin.clone(),
                scalars(client, &[a.heads, a.kv_heads, pos, k_at, v_at].map(|v| v as u32)),
                state.clone(),
            ],
            scratch: Vec::new(),
            out: state.clone(),
        },
    )
}
