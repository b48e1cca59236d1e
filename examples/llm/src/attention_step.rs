//! A decode step's attention in one launch, one cube a query head: RoPE on the head's query and
//! on its key head's key, the key and value stored in the caches, the scores, their softmax and
//! the weighted sum of the values.
//!
//! Every value is computed by the operations of the unfused kernels ([`rope_store`],
//! [`scores`], [`softmax`], [`attend`]) in their order, so a step of this kernel gives the
//! bits of a step of those; `proofs/tests/llm_ops.rs` compares them. The work is spread over
//! the cube's units through shared memory, not over the definition:
//!
//! - a score is one unit's dot, in order; the current position's key comes from the cube's
//!   own rotation, not from the cache another cube writes in the same launch;
//! - softmax's sum is the lane sum on [`LANES_32`] lanes (lane `l` adds positions `l, l + 32,
//!   …` in order), its tree added pairwise, neighbours first;
//! - the maximum is taken lane by lane, then across lanes. A maximum does not depend on its
//!   order but for the sign of a zero maximum, and `s − (+0)` and `s − (−0)` differ only for
//!   `s = ±0`, where [`exp`] of either zero is 1: the probabilities are the same bits;
//! - each output is the lane sum on [`LANES_8`] lanes of `fma(p, v, acc)`, one unit a lane of
//!   two dimensions, its tree added pairwise.
//!
//! [`rope_store`]: crate::kernels::rope_store
//! [`scores`]: crate::kernels::scores
//! [`softmax`]: crate::kernels::softmax
//! [`attend`]: crate::kernels::attend

use crate::error::LlmError;
use crate::kernels::{AttnShape, slots};
use crate::lanes::{self, LANES_8, LANES_32};
use crate::math::exp;
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_intrinsics::exact;
use island_runtime::Target;
use island_runtime::prelude::*;

/// Units of a head's cube: a multiple of [`AttnShape::HEAD_DIM`] · [`LANES_8`] / 2 (each unit
/// sums one lane of two dimensions), and WebGPU's default limit of a workgroup.
pub const UNITS: u32 = 256;

/// Positions the weighted sum's loop takes at a time (two loads each, all in flight together).
const DEPTH: usize = 16;

/// The most positions a cache may hold for [`attention_step`]: its scores live in the cube's
/// shared memory (8 KiB), within WebGPU's default 16 KiB of it.
pub const MAX_CONTEXT: usize = 2048;

/// The most positions a cache holds where the engine runs [`attention_step`]: one cube a head
/// walks every position, and past about 500 the four unfused kernels, spread over the GPU, are
/// faster (H200, 2026-12-04: decode after a 512-token prompt 378–387 tokens/s with it, 449–455
/// without).
pub const FAST_CONTEXT: usize = 512;

/// The attention of one token at position `step[POS]` (see [`slots`]) over the `n = POS + 1`
/// cached positions, head `CUBE_POS_X`: `qkv` holds the token's query, key and value (`q`,
/// `k`, `v` stacked, before RoPE), `state` the layer's key cache from value offset `keys` and
/// value cache from `values`, which take the token's rotated key and its value; `att` takes
/// the heads' outputs.
#[islands]
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
#[allow(clippy::manual_div_ceil)] // a loop bound CubeCL lowers as written: `+` and `/`
pub fn attention_step(
    qkv: &[f32],
    state: &mut [f32],
    cos: &[f32],
    sin: &[f32],
    step: &[u32],
    att: &mut [f32],
    keys: u32,
    values: u32,
    #[comptime] shape: AttnShape,
) {
    let hd = comptime!(AttnShape::HEAD_DIM);
    let half = comptime!(AttnShape::HEAD_DIM / 2);
    let kv_dim = comptime!(shape.kv_heads * AttnShape::HEAD_DIM);
    let dim = comptime!(shape.heads * AttnShape::HEAD_DIM);
    let group = comptime!(shape.heads / shape.kv_heads);
    let h = CUBE_POS_X as usize;
    let g = h / group;
    let u = UNIT_POS as usize;
    let pos = usize::cast_from(step[slots::POS]);
    let n = pos + 1;
    // The last query head of a key head stores its key and value in the caches. (The last:
    // where cubes run in order, as on the CPU runtime, a cube that read the token's slot from
    // the cache instead of its own rotation would read it stale, and the checks see it.)
    let writer = h % group == group - 1;
    let key_at = keys as usize + pos * kv_dim + g * hd;
    let value_at = values as usize + pos * kv_dim + g * hd;
    let v_src = dim + kv_dim + g * hd;
    let mut q = Shared::<[f32]>::new_slice(hd);
    let mut k = Shared::<[f32]>::new_slice(hd);
    let mut ps = Shared::<[f32]>::new_slice(comptime!(shape.context));
    let mut lane_values = Shared::<[f32]>::new_slice(comptime!(LANES_32 as usize));
    let mut parts = Shared::<[f32]>::new_slice(comptime!(hd * LANES_8 as usize));

    // RoPE: the query's pairs, the key's pairs, the value's copy.
    if u < 2 * half {
        let i = u % half;
        let from = select(u < half, h * hd, dim + g * hd) + 2 * i;
        let t = pos * half + i;
        let (c, s) = (cos[t], sin[t]);
        let (x0, x1) = (qkv[from], qkv[from + 1]);
        let y0 = exact::fma(x0, c, -(x1 * s), target);
        let y1 = exact::fma(x0, s, x1 * c, target);
        if u < half {
            q[2 * i] = y0;
            q[2 * i + 1] = y1;
        } else {
            k[2 * i] = y0;
            k[2 * i + 1] = y1;
            if writer {
                state[key_at + 2 * i] = y0;
                state[key_at + 2 * i + 1] = y1;
            }
        }
    } else if u < 2 * half + hd && writer {
        let d = u - 2 * half;
        state[value_at + d] = qkv[v_src + d];
    }
    sync_cube();

    // The scores, one unit a position.
    let units = comptime!(UNITS as usize);
    for t in 0..(n + units - 1 - u) / units {
        let j = u + units * t;
        let mut acc = 0.0f32;
        if j == pos {
            #[unroll]
            for d in 0..hd {
                acc = exact::fma(q[d], k[d], acc, target);
            }
        } else {
            let k0 = keys as usize + j * kv_dim + g * hd;
            #[unroll]
            for d in 0..hd {
                acc = exact::fma(q[d], state[k0 + d], acc, target);
            }
        }
        ps[j] = acc * 0.125f32;
    }
    sync_cube();

    // The maximum: each lane's, then across the lanes.
    let lanes32 = comptime!(LANES_32 as usize);
    if u < lanes32 {
        let mut m = f32::reinterpret(0xff80_0000u32);
        for t in 0..(n + lanes32 - 1 - u) / lanes32 {
            m = max(m, ps[u + lanes32 * t]);
        }
        lane_values[u] = m;
    }
    sync_cube();
    let mut m = lane_values[0];
    #[unroll]
    for l in 1..lanes32 {
        m = max(m, lane_values[l]);
    }
    sync_cube();

    // The exponentials, in place, and their lane sum (one term at a time: no loads to overlap,
    // and an exponential's range checks are branches); then the probabilities.
    if u < lanes32 {
        let mut sum = 0.0f32;
        for t in 0..(n + lanes32 - 1 - u) / lanes32 {
            let j = u + lanes32 * t;
            let e = exp(ps[j] - m, target);
            ps[j] = e;
            sum += e;
        }
        lane_values[u] = sum;
    }
    sync_cube();
    let mut sums = Array::<f32>::new(lanes32);
    #[unroll]
    for l in 0..lanes32 {
        sums[l] = lane_values[l];
    }
    lanes::fold(&mut sums, LANES_32);
    let sum = sums[0];
    for t in 0..(n + units - 1 - u) / units {
        let j = u + units * t;
        ps[j] = exact::div(ps[j], sum, target);
    }
    sync_cube();

    // The weighted sum: unit `u` sums lane `u / 32` of dimensions `u % 32` and `u % 32 + 32`
    // (a plane's loads are one row's consecutive values), `DEPTH` positions at a time. Every
    // load is made, the current position's too, and the rotation's value selected after: loads
    // under a condition are not issued ahead of the sums before them.
    let lanes8 = comptime!(LANES_8 as usize);
    let lane = u / half;
    let d0 = u % half;
    let d1 = d0 + half;
    let (now0, now1) = (qkv[v_src + d0], qkv[v_src + d1]);
    let cache = values as usize + g * hd;
    let terms = (n + lanes8 - 1 - lane) / lanes8;
    let mut acc0 = 0.0f32;
    let mut acc1 = 0.0f32;
    for c in 0..(terms + DEPTH - 1) / DEPTH {
        let mut c0 = Array::<f32>::new(DEPTH);
        let mut c1 = Array::<f32>::new(DEPTH);
        #[unroll]
        for k in 0..DEPTH {
            let j = lane + lanes8 * select(DEPTH * c + k < terms, DEPTH * c + k, 0);
            c0[k] = state[cache + j * kv_dim + d0];
            c1[k] = state[cache + j * kv_dim + d1];
        }
        #[unroll]
        for k in 0..DEPTH {
            let live = DEPTH * c + k < terms;
            let j = lane + lanes8 * select(live, DEPTH * c + k, 0);
            let now = j == pos;
            let p = ps[j];
            acc0 = select(live, exact::fma(p, select(now, now0, c0[k]), acc0, target), acc0);
            acc1 = select(live, exact::fma(p, select(now, now1, c1[k]), acc1, target), acc1);
        }
    }
    parts[d0 * lanes8 + lane] = acc0;
    parts[d1 * lanes8 + lane] = acc1;
    sync_cube();
    if u < hd {
        let mut p = Array::<f32>::new(lanes8);
        #[unroll]
        for l in 0..lanes8 {
            p[l] = parts[u * lanes8 + l];
        }
        lanes::fold(&mut p, LANES_8);
        att[h * hd + u] = p[0];
    }
}

/// The buffers of [`launch`]: the token's `qkv`, the attention state, RoPE's tables, the step
/// buffer and the output.
pub struct StepBuffers<'a> {
    pub qkv: &'a Handle,
    pub state: &'a Handle,
    pub cos: &'a Handle,
    pub sin: &'a Handle,
    pub step: &'a Handle,
    pub att: &'a Handle,
}

/// Launches [`attention_step`] with `target`: `state` holds `state_len` values, the layer's
/// caches from `keys` and `values`. A cache of more than [`MAX_CONTEXT`] positions is refused.
pub fn launch(
    client: &Client,
    shape: AttnShape,
    b: StepBuffers<'_>,
    (state_len, keys, values): (usize, usize, usize),
    target: Target,
) -> Result<(), LlmError> {
    if shape.context > MAX_CONTEXT {
        return Err(LlmError::Setting(format!(
            "the fused attention holds at most {MAX_CONTEXT} positions, not {}",
            shape.context
        )));
    }
    let hd = AttnShape::HEAD_DIM;
    let (dim, kv_dim) = (shape.heads * hd, shape.kv_heads * hd);
    let table = shape.context * hd / 2;
    // SAFETY: the engine allocates `qkv` with a token's `dim + 2·kv_dim` values, the state with
    // `state_len`, the tables with `context · 32` values, the step buffer with its slots and
    // `att` with `dim` values (`Engine::new`). The kernel runs unchecked (no bounds test before
    // each access): every index is below those counts for a position below the context, which
    // `Engine` checks before it writes the step buffer, and its shared memory is read below the
    // `n ≤ context` positions, 64 dimensions and 8 lanes it writes.
    unsafe {
        attention_step::launch_unchecked_with(
            client,
            CubeCount::Static(shape.heads as u32, 1, 1),
            CubeDim::new_1d(UNITS),
            BufferArg::from_raw_parts(b.qkv.clone(), dim + 2 * kv_dim),
            BufferArg::from_raw_parts(b.state.clone(), state_len),
            BufferArg::from_raw_parts(b.cos.clone(), table),
            BufferArg::from_raw_parts(b.sin.clone(), table),
            BufferArg::from_raw_parts(b.step.clone(), slots::len(1)),
            BufferArg::from_raw_parts(b.att.clone(), dim),
            keys as u32,
            values as u32,
            shape,
            target,
        );
    }
    Ok(())
}
