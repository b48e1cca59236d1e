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
    (CubeCount::Static((units as u32).div_ceil(per_cube), 1, 1), CubeDim::new_1d(per_cube))
}

/// The most terms a lane folds in an unrolled loop (every load in flight at once); a longer
/// lane loops. Either way the same operations in the same order.
pub const UNROLL: usize = 24;

/// Where the engine's step buffer (`u32`s) holds what changes from one token to the next. No
/// kernel takes these as launch arguments: each reads them from the buffer (at a comptime
/// index, so a cell's own scalar buffer serves as well), and one recorded launch of a step
/// serves every step.
pub mod slots {
    /// The token embedded.
    pub const TOKEN: usize = 0;
    /// Its position: where RoPE rotates and the caches take its key and value.
    pub const POS: usize = 1;
    /// Positions attended to, `POS + 1`.
    pub const N: usize = 2;
    /// The buffer's length.
    pub const LEN: usize = 3;
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
/// per block of 32 (`xq`: 8 words a block, `xd`: its scale). Row `row`'s value is the lane sum
/// ([`crate::lanes`]) of its blocks on [`LANES_8`] lanes, a lane folding its blocks with
/// [`block_term`]; `width` units share a row ([`lanes::units`]). The integer sums are
/// [`dot_word`]s (`dp4a` where the device has it), exact in any order.
#[islands]
#[cube(launch)]
pub fn qmatvec(
    w: &[Vector<i32, Const<4>>],
    d: &[f32],
    m: &[f32],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    y: &mut [f32],
    #[comptime] shape: MatvecShape,
    #[comptime] width: u32,
) {
    let rows = comptime!(shape.rows);
    let blocks = comptime!(shape.blocks);
    let units = comptime!(width as usize);
    let per = comptime!((LANES_8 / width) as usize);
    let row = ABSOLUTE_POS / units;
    // Units past the last row take part in the exchange on row 0's values and write nothing.
    let r = select(row < rows, row, 0);
    let first = ABSOLUTE_POS % units * per;
    let mut p = Array::<f32>::new(per);
    for k in 0..per {
        let lane = first + k;
        let mut acc = 0.0f32;
        if comptime!(blocks <= UNROLL * 8) {
            // Unrolled, so that every block's loads are in flight at once; a lane's last block
            // may lie past the row's end.
            #[unroll]
            for t in 0..comptime!(blocks.div_ceil(8)) {
                let b = lane + 8 * t;
                if b < blocks {
                    acc = block_term(w, d, m, xq, xd, r, b, acc, shape, target);
                }
            }
        } else {
            for t in 0..(blocks + 7 - lane) / 8 {
                acc = block_term(w, d, m, xq, xd, r, lane + 8 * t, acc, shape, target);
            }
        }
        p[k] = acc;
    }
    lanes::fold(&mut p, comptime!(per as u32));
    let sum = lanes::across(p[0], LANES_8, width, target);
    if row < rows && first == 0 {
        if comptime!(shape.accumulate) {
            y[row] += sum;
        } else {
            y[row] = sum;
        }
    }
}

/// One block `b` of row `row` folded into a lane's `acc`: `acc = fma(d·dx, Σ q·qx, acc)`, and
/// for Q4_1 then `acc = fma(m·dx, Σ qx, acc)`.
#[cube]
#[allow(clippy::too_many_arguments)]
pub fn block_term(
    w: &[Vector<i32, Const<4>>],
    d: &[f32],
    m: &[f32],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    row: usize,
    b: usize,
    acc: f32,
    #[comptime] shape: MatvecShape,
    #[comptime] target: Target,
) -> f32 {
    let rows = comptime!(shape.rows);
    let x0 = xq[2 * b];
    let x1 = xq[2 * b + 1];
    let scale = d[b * rows + row] * xd[b];
    let mut sumi = 0i32;
    let mut out = acc;
    if comptime!(shape.ty == QuantType::Q8_0) {
        let w0 = w[2 * b * rows + row];
        let w1 = w[(2 * b + 1) * rows + row];
        #[unroll]
        for j in 0..4usize {
            sumi = dot_word(w0.extract(j), x0.extract(j), sumi, target);
        }
        #[unroll]
        for j in 0..4usize {
            sumi = dot_word(w1.extract(j), x1.extract(j), sumi, target);
        }
        out = exact::fma(scale, f32::cast_from(sumi), out, target);
    } else {
        // Byte j of a word holds weight j (low nibble) and weight j + 16 (high).
        let v = w[b * rows + row];
        let mut sumx = 0i32;
        #[unroll]
        for j in 0..4usize {
            let word = v.extract(j);
            sumi = dot_word(word & 0x0f0f_0f0f, x0.extract(j), sumi, target);
            sumi = dot_word((word >> 4) & 0x0f0f_0f0f, x1.extract(j), sumi, target);
            sumx = dot_word(0x0101_0101, x0.extract(j), sumx, target);
            sumx = dot_word(0x0101_0101, x1.extract(j), sumx, target);
        }
        out = exact::fma(scale, f32::cast_from(sumi), out, target);
        out = exact::fma(m[b * rows + row] * xd[b], f32::cast_from(sumx), out, target);
    }
    out
}

/// RMSNorm of one vector: the sum of squares is the lane sum ([`crate::lanes`]) on
/// [`LANES_32`] lanes of `fma(v, v, ss)`, then `y[i] = x[i] · (1 / sqrt(ss / n + eps)) · w[i]`.
/// Unit `i` writes `y[i]`; each aligned group of `width` units shares the sum.
#[islands]
#[cube(launch)]
pub fn rmsnorm(x: &[f32], w: &[f32], y: &mut [f32], eps: f32, #[comptime] n: usize, #[comptime] width: u32) {
    let i = ABSOLUTE_POS;
    let inv = inv_rms(x, eps, n, width, target);
    if i < n {
        y[i] = x[i] * inv * w[i];
    }
}

/// `1 / sqrt(ss / n + eps)` of `x`'s `n` values, `ss` their squares' lane sum on [`LANES_32`]
/// lanes, shared by each aligned group of `width` units (all of which must call it).
#[cube]
pub fn inv_rms(x: &[f32], eps: f32, #[comptime] n: usize, #[comptime] width: u32, #[comptime] target: Target) -> f32 {
    let units = comptime!(width as usize);
    let per = comptime!((LANES_32 / width) as usize);
    let first = ABSOLUTE_POS % units * per;
    let mut p = Array::<f32>::new(per);
    for k in 0..per {
        let lane = first + k;
        let mut ss = 0.0f32;
        if comptime!(n <= UNROLL * 32) {
            #[unroll]
            for t in 0..comptime!(n.div_ceil(32)) {
                let j = lane + 32 * t;
                if j < n {
                    let v = x[j];
                    ss = exact::fma(v, v, ss, target);
                }
            }
        } else {
            for t in 0..(n + 31 - lane) / 32 {
                let v = x[lane + 32 * t];
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

/// Row `token` of a Q8_0 matrix (`rows × cols`, k-major words read as `i32`), dequantized:
/// `x[i] = d · q`, the token read from `step[at]` (see [`slots`]).
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
    let i = ABSOLUTE_POS;
    if i < cols {
        let t = usize::cast_from(step[at]);
        let (b, k) = (i / 32, i % 32);
        let word = w[((2 * b + k / 16) * rows + t) * 4 + (k % 16) / 4];
        let q = ((word >> (8 * (k % 4)) as i32) & 0xff ^ 0x80) - 0x80;
        x[i] = d[b * rows + t] * f32::cast_from(q);
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

/// RoPE on the query and key heads of `qkv` (`q`, `k`, `v` stacked), adjacent pairs
/// `(2i, 2i + 1)` of each head rotated by the host's table entry `(pos, i)`, `pos = step[at]`:
/// `(fma(x0, c, −x1·s), fma(x0, s, x1·c))`. `state` is the engine's attention state (the query,
/// then the key caches, then the value caches): the rotated query goes to its start, the rotated
/// key to value offset `keys + pos·kv_dim` and the value to `values + pos·kv_dim` (the layer's
/// slots for `pos`, `keys` and `values` the starts of its caches). One unit per pair.
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
    let u = ABSOLUTE_POS;
    let pos = usize::cast_from(step[at]);
    let kv_dim = comptime!(shape.kv_heads * AttnShape::HEAD_DIM);
    let half = comptime!(AttnShape::HEAD_DIM / 2);
    let qp = comptime!(shape.heads * AttnShape::HEAD_DIM / 2);
    let kp = comptime!(shape.kv_heads * AttnShape::HEAD_DIM / 2);
    if u < qp + kp {
        let t = pos * half + u % half;
        let (c, s) = (cos[t], sin[t]);
        let (x0, x1) = (qkv[2 * u], qkv[2 * u + 1]);
        let y0 = exact::fma(x0, c, -(x1 * s), target);
        let y1 = exact::fma(x0, s, x1 * c, target);
        if u < qp {
            state[2 * u] = y0;
            state[2 * u + 1] = y1;
        } else {
            let k = usize::cast_from(keys) + pos * kv_dim + 2 * (u - qp);
            state[k] = y0;
            state[k + 1] = y1;
        }
    } else if u < qp + 2 * kp {
        let v = 2 * (u - qp - kp);
        let src = 2 * (qp + kp) + v;
        let to = usize::cast_from(values) + pos * kv_dim + v;
        state[to] = qkv[src];
        state[to + 1] = qkv[src + 1];
    }
}

/// `s[h, j] = (q_h · k_j) / 8` for every head `h` and cached position `j < n`, `n = step[at]`,
/// the dot in order `fma(q[d], k[d], acc)`. `state` holds the query at its start and the layer's
/// keys from value offset `base` (as [`rope_store`] wrote them). One unit per (head, position
/// the cache can hold): the grid does not depend on `n`, so one recorded launch serves every step.
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
    let u = ABSOLUTE_POS;
    let n = usize::cast_from(step[at]);
    let hd = comptime!(AttnShape::HEAD_DIM);
    let kv_dim = comptime!(shape.kv_heads * AttnShape::HEAD_DIM);
    let context = comptime!(shape.context);
    let (h, j) = (u / context, u % context);
    if h < comptime!(shape.heads) && j < n {
        let k0 = usize::cast_from(base) + j * kv_dim + h / comptime!(shape.heads / shape.kv_heads) * hd;
        let mut acc = 0.0f32;
        #[unroll]
        for d in 0..hd {
            acc = exact::fma(state[h * hd + d], state[k0 + d], acc, target);
        }
        s[h * comptime!(shape.context) + j] = acc * 0.125f32;
    }
}

/// The softmax of each head's `n = step[at]` scores, in place: the maximum `m` in order,
/// `e_j = exp(s_j − m)`, their lane sum ([`crate::lanes`]) on [`LANES_32`] lanes, then
/// `e_j / sum` (correctly rounded). Each aligned group of `width` units computes one head: a
/// unit reads every score for the maximum, but writes only its own lanes' positions, after the
/// group's exchange (so no unit overwrites a score another still reads).
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
    let h = ABSOLUTE_POS / units;
    let n = usize::cast_from(step[at]);
    // Units past the last head take part in the exchange on head 0's values and write nothing.
    let row = select(h < comptime!(shape.heads), h, 0) * comptime!(shape.context);
    let mut m = s[row];
    for j in 1..n {
        m = max(m, s[row + j]);
    }
    let first = ABSOLUTE_POS % units * per;
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

/// `out[h, d] = Σ_j p[h, j] · v_j[d]` over the `n = step[at]` cached positions: the lane sum
/// ([`crate::lanes`]) on [`LANES_8`] lanes of `fma(p, v, acc)`. Each aligned group of `width`
/// units computes one (head, dimension).
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
    let o = ABSOLUTE_POS / units;
    // Units past the last output take part in the exchange on output 0's values and write nothing.
    let oo = select(o < outputs, o, 0);
    let (h, d) = (oo / hd, oo % hd);
    let v0 = usize::cast_from(base) + h / comptime!(shape.heads / shape.kv_heads) * hd + d;
    let n = usize::cast_from(step[at]);
    let row = h * comptime!(shape.context);
    let first = ABSOLUTE_POS % units * per;
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
        out[o] = sum;
    }
}

/// SwiGLU over `gate_up` (`gate`, `up` stacked, `n` each): `a[i] = (g / (1 + exp(−g))) · u`,
/// with `g`, `u` and the result [`flush`]ed: a device that flushes subnormals (the H200's Vulkan
/// driver) computes the same bits.
#[islands]
#[cube(launch)]
pub fn swiglu(gate_up: &[f32], a: &mut [f32], #[comptime] n: usize) {
    let i = ABSOLUTE_POS;
    if i < n {
        a[i] = swiglu_value(gate_up, i, n, target);
    }
}

/// [`swiglu`]'s value `i`.
#[cube]
pub fn swiglu_value(gate_up: &[f32], i: usize, #[comptime] n: usize, #[comptime] target: Target) -> f32 {
    let g = flush(gate_up[i]);
    flush(exact::div(g, 1.0f32 + exp(-g, target), target) * flush(gate_up[n + i]))
}
