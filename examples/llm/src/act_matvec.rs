//! A decode step's matvec with the op before it in the same launch: each cube computes the
//! activation vector (RMSNorm of the residual stream, SwiGLU of the gate and up projections,
//! or the values as they are), quantizes it to Q8_1 blocks in its shared memory, and then its
//! rows of `W·x` from there.
//!
//! Every value is computed by the operations of the unfused kernels in their order: the
//! activation as [`crate::kernels::rmsnorm`] and [`crate::kernels::swiglu`] compute it, the
//! quantization as [`crate::fused`]'s (one unit a word, the block maximum over its 8 units with
//! [`lanes::max8`]), each row as [`qmatvec`] sums it ([`block_acc`] on [`LANES_8`] lanes, the
//! tree across units with [`lanes::across`]). So a step of these kernels gives the bits of a
//! step of the unfused ones; `proofs/tests/llm_ops.rs` compares them. Every cube repeats the
//! activation's work (576 or 1,536 values): on a GPU that costs less than a launch.
//!
//! [`qmatvec`]: crate::kernels::qmatvec

use crate::fused::pack;
use crate::kernels::{MatvecShape, UNROLL, block_acc, grid, inv_rms, swiglu_of, unit};
use crate::lanes::{self, LANES_8, LANES_32};
use crate::quant::{BLOCK, QuantType};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::prelude::*;

/// Units of a cube: the activation's words in one round (576 values) or two (1,536), and
/// WebGPU's default limit of a workgroup.
pub const UNITS: u32 = 256;

/// What a cube computes before the matvec: the activation vector of `n` values.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Act {
    /// The values of `src` as they are (attention's output before its projection).
    Plain,
    /// RMSNorm of `src` with the weights `norm` and `eps`.
    Norm,
    /// SwiGLU of `src`, the gate's `n` values then the up projection's.
    Swiglu,
}

/// `y = W·q8_1(act(src))` (or `y += …` with `shape.accumulate`) for one token. `units`
/// units share a row ([`lanes::units`] of [`LANES_8`]), `norm_units` the sum of squares
/// ([`lanes::units`] of [`LANES_32`]).
#[islands]
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn act_qmatvec(
    src: &[f32],
    norm: &[f32],
    w: &[Vector<i32, Const<4>>],
    d: &[f32],
    m: &[f32],
    y: &mut [f32],
    eps: f32,
    #[comptime] act: Act,
    #[comptime] shape: MatvecShape,
    #[comptime] width: u32,
    #[comptime] norm_width: u32,
) {
    let blocks = comptime!(shape.blocks);
    let n = comptime!(shape.blocks * BLOCK);
    let words = comptime!(n / 4);
    let mut sq = Shared::<[i32]>::new_slice(words);
    let mut sd = Shared::<[f32]>::new_slice(blocks);
    let rows = comptime!(shape.rows);
    let units = comptime!(width as usize);
    let per = comptime!((LANES_8 / width) as usize);
    let row = unit() / units;
    // Units past the last row take part in the exchange on row 0's values and write nothing.
    let r = select(row < rows, row, 0);
    let first = unit() % units * per;
    // Where a unit holds one lane of few blocks, its weights are loaded before the activation
    // is computed, so that their latency passes under it.
    let early = comptime!(per == 1 && blocks <= UNROLL * 8);
    let held = comptime!(if early { blocks.div_ceil(8) } else { 1 });
    let mut w0s = Array::<Vector<i32, Const<4>>>::new(held);
    let mut w1s = Array::<Vector<i32, Const<4>>>::new(held);
    let mut wss = Array::<f32>::new(held);
    let mut wms = Array::<f32>::new(held);
    if comptime!(early) {
        #[unroll]
        for t in 0..held {
            let b = min(first + 8 * t, blocks - 1);
            load_block(w, d, m, r, b, &mut w0s, &mut w1s, &mut wss, &mut wms, t, shape);
        }
    }
    // Every source value of the unit's words, loaded before any arithmetic: loads after a
    // branch (the norm's shuffles, an exponential's range checks) are not issued ahead of it.
    let rounds = comptime!(words.div_ceil(UNITS as usize));
    let mut xs = Array::<f32>::new(comptime!(4 * rounds));
    let mut ys = Array::<f32>::new(comptime!(4 * rounds));
    #[unroll]
    for round in 0..rounds {
        let word = min(round * comptime!(UNITS as usize) + UNIT_POS as usize, words - 1);
        #[unroll]
        for j in 0..4usize {
            let i = 4 * word + j;
            xs[4 * round + j] = src[i];
            if comptime!(act == Act::Norm) {
                ys[4 * round + j] = norm[i];
            } else if comptime!(act == Act::Swiglu) {
                ys[4 * round + j] = src[n + i];
            } else {
                ys[4 * round + j] = 0.0f32;
            }
        }
    }
    let mut inv = 1.0f32;
    if comptime!(act == Act::Norm) {
        inv = inv_rms(src, 0, eps, n, norm_width, target);
    }
    // One unit a word, in rounds of the cube's units: a block's 8 words are 8 aligned units of
    // one round. Units past the last word take part in the exchanges on it and store nothing.
    #[unroll]
    for round in 0..rounds {
        let at = round * comptime!(UNITS as usize) + UNIT_POS as usize;
        let word = min(at, words - 1);
        let mut v = Array::<f32>::new(4usize);
        let mut amax = 0.0f32;
        #[unroll]
        for j in 0..4usize {
            let (x, y) = (xs[4 * round + j], ys[4 * round + j]);
            if comptime!(act == Act::Norm) {
                v[j] = x * inv * y;
            } else if comptime!(act == Act::Swiglu) {
                v[j] = swiglu_of(x, y, target);
            } else {
                v[j] = x;
            }
        }
        #[unroll]
        for j in 0..4usize {
            amax = max(amax, v[j].abs());
        }
        amax = lanes::max8(amax, target);
        if at < words {
            pack(v, amax, word, &mut sq, &mut sd, target);
        }
    }
    sync_cube();
    let mut p = Array::<f32>::new(per);
    #[unroll]
    for k in 0..per {
        let lane = first + k;
        let mut acc = 0.0f32;
        if comptime!(early) {
            #[unroll]
            for t in 0..held {
                let b = lane + 8 * t;
                if b < blocks {
                    let (x0, x1) = (words_at(&sq, 8 * b), words_at(&sq, 8 * b + 4));
                    acc = block_acc(w0s[t], w1s[t], wss[t], wms[t], x0, x1, sd[b], acc, shape.ty, target);
                }
            }
        } else if comptime!(blocks <= UNROLL * 8) {
            #[unroll]
            for t in 0..comptime!(blocks.div_ceil(8)) {
                let b = lane + 8 * t;
                if b < blocks {
                    acc = shared_block(w, d, m, &sq, &sd, r, b, acc, shape, target);
                }
            }
        } else {
            for t in 0..(blocks + 7 - lane) / 8 {
                acc = shared_block(w, d, m, &sq, &sd, r, lane + 8 * t, acc, shape, target);
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

/// Block `b` of row `row`'s weights into slot `t` of the unit's held weights: its vectors
/// (Q8_0: two; Q4_1: one, twice), its scale and (Q4_1) its minimum.
#[cube]
#[allow(clippy::too_many_arguments)]
fn load_block(
    w: &[Vector<i32, Const<4>>],
    d: &[f32],
    m: &[f32],
    row: usize,
    b: usize,
    w0s: &mut Array<Vector<i32, Const<4>>>,
    w1s: &mut Array<Vector<i32, Const<4>>>,
    wss: &mut Array<f32>,
    wms: &mut Array<f32>,
    #[comptime] t: usize,
    #[comptime] shape: MatvecShape,
) {
    let rows = comptime!(shape.rows);
    wss[t] = d[b * rows + row];
    w0s[t] = w[comptime!(shape.ty.vectors()) * b * rows + row];
    if comptime!(shape.ty == QuantType::Q8_0) {
        w1s[t] = w[(2 * b + 1) * rows + row];
        wms[t] = 0.0f32;
    } else {
        w1s[t] = w0s[t];
        wms[t] = m[b * rows + row];
    }
}

/// The four activation words of shared memory `sq` from `at`, as one vector.
#[cube]
fn words_at(sq: &[i32], at: usize) -> Vector<i32, Const<4>> {
    let mut x = Vector::<i32, Const<4>>::new(0i32);
    #[unroll]
    for i in 0..4usize {
        x.insert(i, sq[at + i]);
    }
    x
}

/// Block `b` of row `row` folded into `acc` ([`block_acc`]), the activation words and scale
/// read from the cube's shared memory.
#[cube]
#[allow(clippy::too_many_arguments)]
fn shared_block(
    w: &[Vector<i32, Const<4>>],
    d: &[f32],
    m: &[f32],
    sq: &[i32],
    sd: &[f32],
    row: usize,
    b: usize,
    acc: f32,
    #[comptime] shape: MatvecShape,
    #[comptime] target: Target,
) -> f32 {
    let rows = comptime!(shape.rows);
    let ws = d[b * rows + row];
    let w0 = w[comptime!(shape.ty.vectors()) * b * rows + row];
    let mut w1 = w0;
    let mut wm = 0.0f32;
    if comptime!(shape.ty == QuantType::Q8_0) {
        w1 = w[(2 * b + 1) * rows + row];
    } else {
        wm = m[b * rows + row];
    }
    block_acc(w0, w1, ws, wm, words_at(sq, 8 * b), words_at(sq, 8 * b + 4), sd[b], acc, shape.ty, target)
}

/// The buffers of [`launch`]: the source values (`n` a token, `2n` for SwiGLU), the norm's
/// weights (any buffer where the activation is no norm), the matrix's words, scales and minima,
/// and the output.
pub struct ActBuffers<'a> {
    pub src: &'a Handle,
    pub norm: &'a Handle,
    pub words: &'a Handle,
    pub scales: &'a Handle,
    pub mins: &'a Handle,
    pub y: &'a Handle,
}

/// Launches [`act_qmatvec`] for one token with `target`.
pub fn launch(client: &Client, act: Act, shape: MatvecShape, eps: f32, b: ActBuffers<'_>, target: Target) {
    let n = shape.blocks * BLOCK;
    let width = lanes::units(&target, LANES_8);
    let norm_width = lanes::units(&target, LANES_32);
    let (count, dim) = grid(shape.rows * width as usize, UNITS);
    let src_len = if act == Act::Swiglu { 2 * n } else { n };
    let norm_len = if act == Act::Norm { n } else { 1 };
    let mins = if shape.ty == QuantType::Q4_1 { shape.rows * shape.blocks } else { 1 };
    // SAFETY: the engine allocates each buffer with at least these element counts
    // (`Engine::new`): the source and norm as the model's dimensions, the matrix as its shape.
    // The kernel runs unchecked (no bounds test before each access): it reads the source below
    // `n` (SwiGLU `2n`), the norm's weights only for RMSNorm, each matrix at a row below `rows`
    // and a block below `blocks` (the minima only for Q4_1), its shared memory below `words`
    // and `blocks`, and writes `y` below `rows`.
    unsafe {
        act_qmatvec::launch_unchecked_with(
            client,
            count,
            dim,
            BufferArg::from_raw_parts(b.src.clone(), src_len),
            BufferArg::from_raw_parts(b.norm.clone(), norm_len),
            BufferArg::from_raw_parts(b.words.clone(), shape.rows * shape.blocks * shape.ty.vectors()),
            BufferArg::from_raw_parts(b.scales.clone(), shape.rows * shape.blocks),
            BufferArg::from_raw_parts(b.mins.clone(), mins),
            BufferArg::from_raw_parts(b.y.clone(), shape.rows),
            eps,
            act,
            shape,
            width,
            norm_width,
            target,
        );
    }
}
