//! Every kernel of the forward pass, one source for every backend.
//!
//! The order of every float operation is the definition's, on the CPU runtime as on a GPU: each
//! long sum (a matvec row, RMSNorm's squares, softmax's exponentials, attention's weighted sum)
//! is a lane sum ([`crate::lanes`]), whose tree a GPU shares between units with plane shuffles
//! and the CPU runtime computes in one unit; every other output is one unit's, in order. Every
//! `a·b + c` is
//! [`island_intrinsics::exact::fma`] (one rounding on every backend, Vulkan drivers that round
//! the product first included), so no compiler can contract or split one; divisions and square roots go through
//! [`island_intrinsics::exact`] (correctly rounded everywhere); `exp` is [`crate::math::exp`];
//! RoPE's cosines and sines come from host tables. The islands are the dp4a in the matvec (the
//! examples' [`dot_word`]), the lane sums' exchanges ([`lanes::tree8`], [`lanes::tree32`]) and
//! the activation quantizer's block maximum ([`island_examples::q8_matvec::quantize_q8_1`]).

use crate::lanes::{self, LANES_8, LANES_32};
use crate::math::{exp, flush};
use crate::quant::QuantType;
use cubecl::prelude::*;
use island_examples::q8_matvec::dot_word;
use island_intrinsics::exact;
use island_runtime::Target;
use island_runtime::prelude::*;

/// Units per cube of every kernel.
pub const UNITS: u32 = 64;
/// Units per cube of the activation quantizer: a multiple of 8, so that a block's 8 units are
/// aligned lanes of one plane where its block maximum is a plane exchange.
pub const QUANT_UNITS: u32 = 32;

/// The launch grid of `units` units, `per_cube` a cube.
pub fn grid(units: usize, per_cube: u32) -> (CubeCount, CubeDim) {
    batch_grid(units, per_cube, 1)
}

/// The launch grid of `units` units for each of `rows` rows of cubes, `per_cube` a cube: a
/// batch's tokens (or groups of tokens) on the second axis, each row the one-token launch.
pub fn batch_grid(units: usize, per_cube: u32, rows: usize) -> (CubeCount, CubeDim) {
    (CubeCount::Static((units as u32).div_ceil(per_cube), rows as u32, 1), CubeDim::new_1d(per_cube))
}

/// The unit's index among its token's units (the launch's first axis).
#[cube]
pub fn unit() -> usize {
    ABSOLUTE_POS_X as usize
}

/// The row of cubes of the unit: in a batch, its token (or its group of tokens); 0 in a
/// one-token launch.
#[cube]
pub fn cube_row() -> usize {
    CUBE_POS_Y as usize
}

/// The most terms a lane folds in an unrolled loop (every load in flight at once); a longer
/// lane loops. Either way the same operations in the same order.
pub const UNROLL: usize = 24;

/// The tokens of a batch one matvec unit computes ([`qmatvec`]'s `batch`): each weight block
/// loaded once serves them all. Any count gives the same bits.
pub const TOKENS_PER_UNIT: u32 = 8;

/// Where the engine's step buffer (`u32`s) holds what changes from one step to the next. No
/// kernel takes these as launch arguments: each reads them from the buffer (at a comptime
/// index, so a cell's own scalar buffer serves as well), and one recorded launch of a step
/// serves every step. A batch of tokens (a prompt) is positions `POS, POS + 1, …`: token `t`
/// of the batch is at position `step[POS] + t`, attends to `step[N] + t` positions and is
/// `step[TOKEN + t]`.
pub mod slots {
    /// The position of the (first) token: where RoPE rotates and the caches take its key and
    /// value.
    pub const POS: usize = 0;
    /// Positions the (first) token attends to, `POS + 1`.
    pub const N: usize = 1;
    /// The (first) token embedded; a batch's other tokens follow it.
    pub const TOKEN: usize = 2;

    /// The buffer's length for batches of up to `tokens` tokens.
    pub const fn len(tokens: usize) -> usize {
        TOKEN + tokens
    }
}

/// The comptime shape of a matvec: one kernel source for both quantization types.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct MatvecShape {
    pub ty: QuantType,
    pub rows: usize,
    pub blocks: usize,
    /// `y[row] += W·x` (a residual add fused into the projection) instead of `y[row] = W·x`.
    pub accumulate: bool,
}

/// `y = W·x` for Q8_0 or Q4_1 `W` (k-major, see [`crate::quant`]) and activations quantized
/// per block of 32 (`xq`: 8 words a block, `xd`: its scale), for each of `tokens` activation
/// vectors (`xq`, `xd` and `y` one vector after another). Row `row`'s value is the lane sum
/// ([`crate::lanes`]) of its blocks on [`LANES_8`] lanes, a lane folding its blocks with
/// [`block_terms`]; `width` units share a row ([`lanes::units`]); each unit computes its lanes
/// for `batch` consecutive tokens (the cube row's), loading each weight block once for all of
/// them. The integer sums are [`dot_word`]s (`dp4a` where the device has it), exact in any
/// order. Every token's bits are those of the one-token launch.
#[islands]
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn qmatvec(
    w: &[Vector<i32, Const<4>>],
    d: &[f32],
    m: &[f32],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    y: &mut [f32],
    tokens: u32,
    #[comptime] shape: MatvecShape,
    #[comptime] width: u32,
    #[comptime] batch: u32,
) {
    let rows = comptime!(shape.rows);
    let units = comptime!(width as usize);
    let per = comptime!((LANES_8 / width) as usize);
    let nb = comptime!(batch as usize);
    let row = unit() / units;
    // Units past the last row take part in the exchange on row 0's values and write nothing;
    // tokens past the last compute on the last one's values and write nothing.
    let r = select(row < rows, row, 0);
    let first = unit() % units * per;
    let t0 = cube_row() * nb;
    let last = tokens as usize - 1;
    let mut p = Array::<f32>::new(comptime!(per * nb));
    if comptime!(per == 1) {
        // Every index into `p` a constant: the partials stay in registers.
        lane_blocks(w, d, m, xq, xd, r, first, &mut p, 0, t0, last, shape, per, nb, target);
    } else {
        for k in 0..per {
            lane_blocks(w, d, m, xq, xd, r, first + k, &mut p, k, t0, last, shape, per, nb, target);
        }
    }
    #[unroll]
    for j in 0..nb {
        lanes::fold_at(&mut p, j * per, comptime!(per as u32));
        let sum = lanes::across(p[j * per], LANES_8, width, target);
        let tok = t0 + j;
        if row < rows && first == 0 && tok <= last {
            let at = tok * rows + row;
            if comptime!(shape.accumulate) {
                y[at] += sum;
            } else {
                y[at] = sum;
            }
        }
    }
}

/// Lane `lane`'s blocks of row `row` folded into its partial `k` of each of `batch` tokens
/// from `t0` (see [`block_terms`]), in order from `+0.0`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn lane_blocks(
    w: &[Vector<i32, Const<4>>],
    d: &[f32],
    m: &[f32],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    row: usize,
    lane: usize,
    p: &mut Array<f32>,
    k: usize,
    t0: usize,
    last: usize,
    #[comptime] shape: MatvecShape,
    #[comptime] per: usize,
    #[comptime] batch: usize,
    #[comptime] target: Target,
) {
    let blocks = comptime!(shape.blocks);
    #[unroll]
    for j in 0..batch {
        p[j * per + k] = 0.0f32;
    }
    if comptime!(blocks <= UNROLL * 8) {
        // Unrolled, so that every block's loads are in flight at once; a lane's last block may
        // lie past the row's end.
        #[unroll]
        for t in 0..comptime!(blocks.div_ceil(8)) {
            let b = lane + 8 * t;
            if b < blocks {
                block_terms(w, d, m, xq, xd, row, b, p, k, t0, last, shape, per, batch, target);
            }
        }
    } else {
        for t in 0..(blocks + 7 - lane) / 8 {
            block_terms(w, d, m, xq, xd, row, lane + 8 * t, p, k, t0, last, shape, per, batch, target);
        }
    }
}

/// Block `b` of row `row` folded into lane `k`'s partial of each of `batch` tokens from `t0`
/// (`p[j·per + k]` for token `t0 + j`, read at token `min(t0 + j, last)`): `acc = fma(d·dx,
/// Σ q·qx, acc)`, and for Q4_1 then `acc = fma(m·dx, Σ qx, acc)`. The block's weights are
/// loaded once for every token.
#[cube]
#[allow(clippy::too_many_arguments)]
pub fn block_terms(
    w: &[Vector<i32, Const<4>>],
    d: &[f32],
    m: &[f32],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    row: usize,
    b: usize,
    p: &mut Array<f32>,
    k: usize,
    t0: usize,
    last: usize,
    #[comptime] shape: MatvecShape,
    #[comptime] per: usize,
    #[comptime] batch: usize,
    #[comptime] target: Target,
) {
    let rows = comptime!(shape.rows);
    let blocks = comptime!(shape.blocks);
    let ws = d[b * rows + row];
    // Q8_0: the block's two weight vectors; Q4_1: one (byte i of a word holds weight i in its
    // low nibble and weight i + 16 in its high), its minimum.
    let w0 = w[comptime!(shape.ty.vectors()) * b * rows + row];
    let mut w1 = w0;
    let mut wm = 0.0f32;
    if comptime!(shape.ty == QuantType::Q8_0) {
        w1 = w[(2 * b + 1) * rows + row];
    } else {
        wm = m[b * rows + row];
    }
    #[unroll]
    for j in 0..batch {
        let tok = min(t0 + j, last);
        let x0 = xq[tok * 2 * blocks + 2 * b];
        let x1 = xq[tok * 2 * blocks + 2 * b + 1];
        let dx = xd[tok * blocks + b];
        p[j * per + k] = block_acc(w0, w1, ws, wm, x0, x1, dx, p[j * per + k], shape.ty, target);
    }
}

/// One block's terms folded into `acc`: for Q8_0 `fma(d·dx, Σ q·qx, acc)` over the weight
/// vectors `w0`, `w1`; for Q4_1 (`w0` the packed nibbles) `fma(m·dx, Σ qx, fma(d·dx, Σ q·qx,
/// acc))`. `x0`, `x1` are the block's activation words, `dx` their scale; the integer sums are
/// [`dot_word`]s.
#[cube]
#[allow(clippy::too_many_arguments)]
pub fn block_acc(
    w0: Vector<i32, Const<4>>,
    w1: Vector<i32, Const<4>>,
    ws: f32,
    wm: f32,
    x0: Vector<i32, Const<4>>,
    x1: Vector<i32, Const<4>>,
    dx: f32,
    acc: f32,
    #[comptime] ty: QuantType,
    #[comptime] target: Target,
) -> f32 {
    let mut sumi = 0i32;
    let mut out = acc;
    if comptime!(ty == QuantType::Q8_0) {
        let scale = ws * dx;
        #[unroll]
        for i in 0..4usize {
            sumi = dot_word(w0.extract(i), x0.extract(i), sumi, target);
        }
        #[unroll]
        for i in 0..4usize {
            sumi = dot_word(w1.extract(i), x1.extract(i), sumi, target);
        }
        out = exact::fma(scale, f32::cast_from(sumi), out, target);
    } else {
        let mut sumx = 0i32;
        #[unroll]
        for i in 0..4usize {
            let word = w0.extract(i);
            sumi = dot_word(word & 0x0f0f_0f0f, x0.extract(i), sumi, target);
            sumi = dot_word((word >> 4) & 0x0f0f_0f0f, x1.extract(i), sumi, target);
            sumx = dot_word(0x0101_0101, x0.extract(i), sumx, target);
            sumx = dot_word(0x0101_0101, x1.extract(i), sumx, target);
        }
        out = exact::fma(ws * dx, f32::cast_from(sumi), out, target);
        out = exact::fma(wm * dx, f32::cast_from(sumx), out, target);
    }
    out
}

/// RMSNorm of each token's vector (`n` values, one vector after another): the sum of squares
/// is the lane sum ([`crate::lanes`]) on [`LANES_32`] lanes of `fma(v, v, ss)`, then `y[i] =
/// x[i] · (1 / sqrt(ss / n + eps)) · w[i]`. Unit `i` of a token writes its `y[i]`; each aligned
/// group of `width` units shares the sum.
#[islands]
#[cube(launch)]
pub fn rmsnorm(x: &[f32], w: &[f32], y: &mut [f32], eps: f32, #[comptime] n: usize, #[comptime] width: u32) {
    let i = unit();
    let base = cube_row() * n;
    let inv = inv_rms(x, base, eps, n, width, target);
    if i < n {
        y[base + i] = x[base + i] * inv * w[i];
    }
}

/// `1 / sqrt(ss / n + eps)` of the `n` values of `x` from `base`, `ss` their squares' lane sum
/// on [`LANES_32`] lanes, shared by each aligned group of `width` units (all of which must call
/// it).
#[cube]
pub fn inv_rms(
    x: &[f32],
    base: usize,
    eps: f32,
    #[comptime] n: usize,
    #[comptime] width: u32,
    #[comptime] target: Target,
) -> f32 {
    let units = comptime!(width as usize);
    let per = comptime!((LANES_32 / width) as usize);
    let first = unit() % units * per;
    let mut p = Array::<f32>::new(per);
    for k in 0..per {
        let lane = first + k;
        let mut ss = 0.0f32;
        if comptime!(n <= UNROLL * 32) {
            #[unroll]
            for t in 0..comptime!(n.div_ceil(32)) {
                let j = lane + 32 * t;
                if j < n {
                    let v = x[base + j];
                    ss = exact::fma(v, v, ss, target);
                }
            }
        } else {
            for t in 0..(n + 31 - lane) / 32 {
                let v = x[base + lane + 32 * t];
                ss = exact::fma(v, v, ss, target);
            }
        }
        p[k] = ss;
    }
    lanes::fold(&mut p, comptime!(per as u32));
    let ss = lanes::across(p[0], LANES_32, width, target);
    let mean = exact::div(ss, n as f32, target);
    exact::div(1.0f32, exact::sqrt(mean + eps, target), target)
}

/// Row `step[at + t]` of a Q8_0 matrix (`rows × cols`, k-major words read as `i32`),
/// dequantized for each token `t` of the batch (see [`slots`]): `x[t·cols + i] = d · q`.
#[cube(launch)]
pub fn embed(
    w: &[i32],
    d: &[f32],
    x: &mut [f32],
    step: &[u32],
    #[comptime] at: usize,
    #[comptime] rows: usize,
    #[comptime] cols: usize,
) {
    let i = unit();
    if i < cols {
        let tok = cube_row();
        let t = usize::cast_from(step[at + tok]);
        let (b, k) = (i / 32, i % 32);
        let word = w[((2 * b + k / 16) * rows + t) * 4 + (k % 16) / 4];
        let q = ((word >> (8 * (k % 4)) as i32) & 0xff ^ 0x80) - 0x80;
        x[tok * cols + i] = d[b * rows + t] * f32::cast_from(q);
    }
}

/// The attention's comptime shape.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct AttnShape {
    pub heads: usize,
    pub kv_heads: usize,
    /// Positions the cache holds.
    pub context: usize,
}

impl AttnShape {
    pub const HEAD_DIM: usize = 64;
}

/// RoPE on the query and key heads of `qkv` (`q`, `k`, `v` stacked; a batch's tokens one after
/// another), adjacent pairs `(2i, 2i + 1)` of each head rotated by the host's table entry
/// `(pos, i)`, `pos = step[at] + t` for token `t`: `(fma(x0, c, −x1·s), fma(x0, s, x1·c))`.
/// `state` is the engine's attention state (the batch's queries, then the key caches, then the
/// value caches): token `t`'s rotated query goes to `state[t·dim..]`, its rotated key to value
/// offset `keys + pos·kv_dim` and its value to `values + pos·kv_dim` (the layer's slots for
/// `pos`, `keys` and `values` the starts of its caches). One unit per pair.
#[islands]
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn rope_store(
    qkv: &[f32],
    state: &mut [f32],
    cos: &[f32],
    sin: &[f32],
    step: &[u32],
    keys: u32,
    values: u32,
    #[comptime] at: usize,
    #[comptime] shape: AttnShape,
) {
    let u = unit();
    let tok = cube_row();
    let pos = usize::cast_from(step[at]) + tok;
    let kv_dim = comptime!(shape.kv_heads * AttnShape::HEAD_DIM);
    let dim = comptime!(shape.heads * AttnShape::HEAD_DIM);
    let half = comptime!(AttnShape::HEAD_DIM / 2);
    let qp = comptime!(shape.heads * AttnShape::HEAD_DIM / 2);
    let kp = comptime!(shape.kv_heads * AttnShape::HEAD_DIM / 2);
    let row = tok * comptime!(shape.heads * AttnShape::HEAD_DIM + 2 * shape.kv_heads * AttnShape::HEAD_DIM);
    if u < qp + kp {
        let t = pos * half + u % half;
        let (c, s) = (cos[t], sin[t]);
        let (x0, x1) = (qkv[row + 2 * u], qkv[row + 2 * u + 1]);
        let y0 = exact::fma(x0, c, -(x1 * s), target);
        let y1 = exact::fma(x0, s, x1 * c, target);
        if u < qp {
            state[tok * dim + 2 * u] = y0;
            state[tok * dim + 2 * u + 1] = y1;
        } else {
            let k = usize::cast_from(keys) + pos * kv_dim + 2 * (u - qp);
            state[k] = y0;
            state[k + 1] = y1;
        }
    } else if u < qp + 2 * kp {
        let v = 2 * (u - qp - kp);
        let src = row + 2 * (qp + kp) + v;
        let to = usize::cast_from(values) + pos * kv_dim + v;
        state[to] = qkv[src];
        state[to + 1] = qkv[src + 1];
    }
}

/// `s[t, h, j] = (q_{t,h} · k_j) / 8` for every token `t` of the batch, head `h` and cached
/// position `j < n`, `n = step[at] + t`, the dot in order `fma(q[d], k[d], acc)`. `state` holds
/// the batch's queries at its start and the layer's keys from value offset `base` (as
/// [`rope_store`] wrote them); `s` holds `heads × context` scores a token. One unit per (head,
/// position the cache can hold): the grid does not depend on `n`, so one recorded launch serves
/// every step.
#[islands]
#[cube(launch)]
pub fn scores(
    state: &[f32],
    s: &mut [f32],
    step: &[u32],
    base: u32,
    #[comptime] at: usize,
    #[comptime] shape: AttnShape,
) {
    let u = unit();
    let tok = cube_row();
    let n = usize::cast_from(step[at]) + tok;
    let hd = comptime!(AttnShape::HEAD_DIM);
    let kv_dim = comptime!(shape.kv_heads * AttnShape::HEAD_DIM);
    let context = comptime!(shape.context);
    let (h, j) = (u / context, u % context);
    if h < comptime!(shape.heads) && j < n {
        let q0 = tok * comptime!(shape.heads * AttnShape::HEAD_DIM) + h * hd;
        let k0 = usize::cast_from(base) + j * kv_dim + h / comptime!(shape.heads / shape.kv_heads) * hd;
        let mut acc = 0.0f32;
        #[unroll]
        for d in 0..hd {
            acc = exact::fma(state[q0 + d], state[k0 + d], acc, target);
        }
        s[(tok * comptime!(shape.heads) + h) * context + j] = acc * 0.125f32;
    }
}

/// The softmax of each head's `n = step[at] + t` scores of each token `t`, in place: the
/// maximum `m` in order, `e_j = exp(s_j − m)`, their lane sum ([`crate::lanes`]) on
/// [`LANES_32`] lanes, then `e_j / sum` (correctly rounded). Each aligned group of `width` units
/// computes one head: a unit reads every score for the maximum, but writes only its own lanes'
/// positions, after the group's exchange (so no unit overwrites a score another still reads).
#[islands]
#[cube(launch)]
pub fn softmax(
    s: &mut [f32],
    step: &[u32],
    #[comptime] at: usize,
    #[comptime] shape: AttnShape,
    #[comptime] width: u32,
) {
    let units = comptime!(width as usize);
    let per = comptime!((LANES_32 / width) as usize);
    let h = unit() / units;
    let tok = cube_row();
    let n = usize::cast_from(step[at]) + tok;
    // Units past the last head take part in the exchange on head 0's values and write nothing.
    let row = (tok * comptime!(shape.heads) + select(h < comptime!(shape.heads), h, 0)) * comptime!(shape.context);
    let mut m = s[row];
    for j in 1..n {
        m = max(m, s[row + j]);
    }
    let first = unit() % units * per;
    let mut p = Array::<f32>::new(per);
    for k in 0..per {
        let lane = first + k;
        let mut sum = 0.0f32;
        for t in 0..(n + 31 - lane) / 32 {
            sum += exp(s[row + lane + 32 * t] - m, target);
        }
        p[k] = sum;
    }
    lanes::fold(&mut p, comptime!(per as u32));
    let sum = lanes::across(p[0], LANES_32, width, target);
    if h < comptime!(shape.heads) {
        for k in 0..per {
            let lane = first + k;
            for t in 0..(n + 31 - lane) / 32 {
                let j = row + lane + 32 * t;
                s[j] = exact::div(exp(s[j] - m, target), sum, target);
            }
        }
    }
}

/// `out[t, h, d] = Σ_j p[t, h, j] · v_j[d]` over the `n = step[at] + t` cached positions of
/// each token `t`: the lane sum ([`crate::lanes`]) on [`LANES_8`] lanes of `fma(p, v, acc)`.
/// Each aligned group of `width` units computes one (head, dimension).
#[islands]
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn attend(
    p: &[f32],
    vc: &[f32],
    out: &mut [f32],
    step: &[u32],
    base: u32,
    #[comptime] at: usize,
    #[comptime] shape: AttnShape,
    #[comptime] width: u32,
) {
    let units = comptime!(width as usize);
    let per = comptime!((LANES_8 / width) as usize);
    let hd = comptime!(AttnShape::HEAD_DIM);
    let kv_dim = comptime!(shape.kv_heads * AttnShape::HEAD_DIM);
    let outputs = comptime!(shape.heads * AttnShape::HEAD_DIM);
    let o = unit() / units;
    let tok = cube_row();
    // Units past the last output take part in the exchange on output 0's values and write nothing.
    let oo = select(o < outputs, o, 0);
    let (h, d) = (oo / hd, oo % hd);
    let v0 = usize::cast_from(base) + h / comptime!(shape.heads / shape.kv_heads) * hd + d;
    let n = usize::cast_from(step[at]) + tok;
    let row = (tok * comptime!(shape.heads) + h) * comptime!(shape.context);
    let first = unit() % units * per;
    let mut part = Array::<f32>::new(per);
    for k in 0..per {
        let lane = first + k;
        let mut acc = 0.0f32;
        for t in 0..(n + 7 - lane) / 8 {
            let j = lane + 8 * t;
            acc = exact::fma(p[row + j], vc[v0 + j * kv_dim], acc, target);
        }
        part[k] = acc;
    }
    lanes::fold(&mut part, comptime!(per as u32));
    let sum = lanes::across(part[0], LANES_8, width, target);
    if o < outputs && first == 0 {
        out[tok * outputs + o] = sum;
    }
}

/// SwiGLU over `gate_up` (`gate`, `up` stacked, `n` each; a batch's tokens one after another):
/// `a[i] = (g / (1 + exp(−g))) · u`, with `g`, `u` and the result [`flush`]ed: a device that
/// flushes subnormals (the H200's Vulkan driver) computes the same bits.
#[islands]
#[cube(launch)]
pub fn swiglu(gate_up: &[f32], a: &mut [f32], #[comptime] n: usize) {
    let i = unit();
    let tok = cube_row();
    if i < n {
        a[tok * n + i] = swiglu_value(gate_up, tok * 2 * n, i, n, target);
    }
}

/// [`swiglu`]'s value `i` of the pairs from `base`.
#[cube]
pub fn swiglu_value(gate_up: &[f32], base: usize, i: usize, #[comptime] n: usize, #[comptime] target: Target) -> f32 {
    swiglu_of(gate_up[base + i], gate_up[base + n + i], target)
}

/// SwiGLU of a gate value `g` and its up projection's value `up`.
#[cube]
pub fn swiglu_of(g: f32, up: f32, #[comptime] target: Target) -> f32 {
    let g = flush(g);
    flush(exact::div(g, 1.0f32 + exp(-g, target), target) * flush(up))
}
