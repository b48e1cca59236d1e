//! An op and the activation quantizer after it in one launch: RMSNorm then the quantizer
//! (before the attention's and the FFN's first matvecs), SwiGLU then the quantizer (before the
//! down projection). The op's output is never stored: each unit packs one word (4 values) of
//! the quantized activations, `xq` and `xd` exactly as [`quantize_q8_1`] writes them from the
//! op's stored output, so the fused and unfused steps give the same bits.
//!
//! A block's maximum magnitude is shared by its 8 units through [`lanes::max8`] (`block` = 8)
//! where a device's planes exchange it, or computed whole by each unit (`block` = 1: the CPU
//! runtime, whose barriers cost a thread per unit). A maximum does not depend on its order, so
//! both are the bits of the quantizer's.
//!
//! [`quantize_q8_1`]: island_examples::q8_matvec::quantize_q8_1

use crate::kernels::{UNITS, batch_grid, cube_row, inv_rms, swiglu_value, unit};
use crate::lanes::{self, LANES_32};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_examples::q8_matvec::round_half_away;
use island_intrinsics::exact;
use island_runtime::Target;
use island_runtime::prelude::*;

/// [`crate::kernels::rmsnorm`] of each token's `x` (`n` values) with `w`, quantized into `xq`,
/// `xd` (a batch's tokens one after another). One unit a word; each aligned group of `width`
/// units shares the sum of squares.
#[islands]
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn norm_quant(
    x: &[f32],
    w: &[f32],
    xq: &mut [i32],
    xd: &mut [f32],
    eps: f32,
    #[comptime] n: usize,
    #[comptime] width: u32,
    #[comptime] block: u32,
) {
    let words = comptime!(n / 4);
    // Units past the last word take part in the exchanges on the last word and store nothing.
    let word = min(unit(), words - 1);
    let tok = cube_row();
    let base = tok * n;
    let inv = inv_rms(x, base, eps, n, width, target);
    let b = word / 8;
    let mut v = Array::<f32>::new(4usize);
    let mut amax = 0.0f32;
    #[unroll]
    for j in 0..4usize {
        let i = 4 * word + j;
        v[j] = x[base + i] * inv * w[i];
    }
    if comptime!(block == 8) {
        #[unroll]
        for j in 0..4usize {
            amax = max(amax, v[j].abs());
        }
        amax = lanes::max8(amax, target);
    } else {
        for i in 32 * b..32 * b + 32 {
            amax = max(amax, (x[base + i] * inv * w[i]).abs());
        }
    }
    if unit() < words {
        pack(v, amax, tok * words + word, xq, xd, target);
    }
}

/// [`crate::kernels::swiglu`] of each token's `gate_up` (`gate`, `up` stacked, `n` each),
/// quantized into `xq`, `xd` (a batch's tokens one after another). One unit a word.
#[islands]
#[cube(launch)]
pub fn swiglu_quant(gate_up: &[f32], xq: &mut [i32], xd: &mut [f32], #[comptime] n: usize, #[comptime] block: u32) {
    let words = comptime!(n / 4);
    let word = min(unit(), words - 1);
    let tok = cube_row();
    let base = tok * 2 * n;
    let b = word / 8;
    let mut v = Array::<f32>::new(4usize);
    let mut amax = 0.0f32;
    #[unroll]
    for j in 0..4usize {
        v[j] = swiglu_value(gate_up, base, 4 * word + j, n, target);
    }
    if comptime!(block == 8) {
        #[unroll]
        for j in 0..4usize {
            amax = max(amax, v[j].abs());
        }
        amax = lanes::max8(amax, target);
    } else {
        for i in 32 * b..32 * b + 32 {
            amax = max(amax, swiglu_value(gate_up, base, i, n, target).abs());
        }
    }
    if unit() < words {
        pack(v, amax, tok * words + word, xq, xd, target);
    }
}

/// The quantizer's step for one word of values `v` of a block of maximum magnitude `amax`:
/// `d = amax / 127` (written by the block's first word), `q = round(v / d)` half away from zero
/// (0 where `amax` is 0), four bytes packed low first.
#[cube]
#[allow(clippy::manual_is_multiple_of)] // `%` is what CubeCL lowers in a kernel
pub(crate) fn pack(v: Array<f32>, amax: f32, word: usize, xq: &mut [i32], xd: &mut [f32], #[comptime] target: Target) {
    let d = exact::div(amax, 127.0f32, target);
    if word % 8 == 0 {
        xd[word / 8] = d;
    }
    let mut packed = 0i32;
    #[unroll]
    for j in 0..4usize {
        let mut q = 0i32;
        if amax != 0.0 {
            q = round_half_away(exact::div(v[j], d, target));
        }
        packed |= (q & 0xff) << (8 * j as i32);
    }
    xq[word] = packed;
}

/// [`norm_quant`] of each of `tokens` vectors `x` (`n` values, a multiple of 32) with `w` into
/// `xq`, `xd`, with `target`.
pub fn launch_norm_quant(
    client: &Client,
    n: usize,
    eps: f32,
    tokens: usize,
    [x, w, xq, xd]: [&Handle; 4],
    target: Target,
) {
    let (width, block) = (lanes::units(&target, LANES_32), lanes::block_units(&target));
    let (count, dim) = batch_grid(n / 4, UNITS, tokens);
    let t = tokens;
    // SAFETY: the callers allocate `x` with `tokens · n` values, `w` with `n`, `xq` with
    // `tokens · n / 4` words and `xd` with `tokens · n / 32` scales.
    unsafe {
        let (x, w) = (BufferArg::from_raw_parts(x.clone(), t * n), BufferArg::from_raw_parts(w.clone(), n));
        let q = BufferArg::from_raw_parts(xq.clone(), t * n / 4);
        let d = BufferArg::from_raw_parts(xd.clone(), t * n / 32);
        norm_quant::launch_with(client, count, dim, x, w, q, d, eps, n, width, block, target);
    }
}

/// [`swiglu_quant`] of each of `tokens` vectors `gate_up` (`2n` values, `n` a multiple of 32)
/// into `xq`, `xd`, with `target`.
pub fn launch_swiglu_quant(client: &Client, n: usize, tokens: usize, [gate_up, xq, xd]: [&Handle; 3], target: Target) {
    let block = lanes::block_units(&target);
    let (count, dim) = batch_grid(n / 4, UNITS, tokens);
    let t = tokens;
    // SAFETY: the callers allocate `gate_up` with `tokens · 2n` values, `xq` with `tokens · n / 4`
    // words and `xd` with `tokens · n / 32` scales.
    unsafe {
        let g = BufferArg::from_raw_parts(gate_up.clone(), t * 2 * n);
        let q = BufferArg::from_raw_parts(xq.clone(), t * n / 4);
        let d = BufferArg::from_raw_parts(xd.clone(), t * n / 32);
        swiglu_quant::launch_with(client, count, dim, g, q, d, n, block, target);
    }
}
