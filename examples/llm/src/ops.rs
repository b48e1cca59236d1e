//! Each kernel of the forward pass launched alone on host values, with a given tag (the one a
//! launch on the client takes, or another profile's arms emulated on the CPU runtime): what the kernel-level checks compare with [`crate::reference`]'s operations, on
//! inputs built to reach every rounding decision (the whole-model check only meets the model's
//! own activations).

use crate::act_matvec::{Act, ActBuffers};
use crate::attention_step::StepBuffers;
use crate::error::LlmError;
use crate::kernels::{
    AttnShape, MatvecShape, QUANT_UNITS, UNITS, attend, grid, qmatvec, rmsnorm, rope_store, scores, slots, softmax,
    swiglu,
};
use crate::lanes::{self, LANES_8, LANES_32};
use crate::quant::{BLOCK, QuantMatrix};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_examples::q8_matvec::quantize_q8_1;
use island_runtime::Target;

/// A kernel's buffers on one client, and its tag.
struct Launch<'a> {
    client: &'a Client,
    target: Target,
}

impl<'a> Launch<'a> {
    fn new(client: &'a Client, target: Target) -> Launch<'a> {
        Launch { client, target }
    }

    fn f32s(&self, v: &[f32]) -> (Handle, usize) {
        (self.client.create_from_slice(f32::as_bytes(v)), v.len())
    }

    fn i32s(&self, v: &[i32]) -> (Handle, usize) {
        (self.client.create_from_slice(i32::as_bytes(v)), v.len())
    }

    /// A step buffer ([`slots`]) at position `pos` (`pos + 1` positions attended to).
    fn step(&self, pos: u32) -> (Handle, usize) {
        let mut v = [0u32; slots::len(1)];
        (v[slots::POS], v[slots::N]) = (pos, pos + 1);
        (self.client.create_from_slice(u32::as_bytes(&v)), v.len())
    }

    fn read<T: CubeElement>(&self, h: &(Handle, usize)) -> Result<Vec<T>, LlmError> {
        let bytes =
            island_runtime::readback::read(self.client, h.0.clone()).map_err(|e| LlmError::Runtime(e.to_string()))?;
        Ok(T::from_bytes(&bytes)[..h.1].to_vec())
    }
}

/// `n` values in `h` as a kernel argument.
fn arg(h: &(Handle, usize)) -> BufferArg {
    // SAFETY: every handle here was created from a slice of exactly `h.1` values.
    unsafe { BufferArg::from_raw_parts(h.0.clone(), h.1) }
}

/// [`rmsnorm`] of each row of `rows` (each `w.len()` values).
pub fn rmsnorm_rows(
    client: &Client,
    target: Target,
    rows: &[Vec<f32>],
    w: &[f32],
    eps: f32,
) -> Result<Vec<Vec<f32>>, LlmError> {
    let l = Launch::new(client, target);
    let wb = l.f32s(w);
    rows.iter()
        .map(|x| {
            let (xb, yb) = (l.f32s(x), l.f32s(&vec![0.0; x.len()]));
            let (count, dim) = grid(x.len(), UNITS);
            let width = lanes::units(&l.target, LANES_32);
            let (x, w, y) = (arg(&xb), arg(&wb), arg(&yb));
            rmsnorm::launch_with(client, count, dim, x, w, y, eps, xb.1, width, l.target);
            l.read(&yb)
        })
        .collect()
}

/// The activation quantizer, then [`qmatvec`]: `y = W·x`, or `y0 + W·x` with `y0`.
pub fn matvec(
    client: &Client,
    target: Target,
    w: &QuantMatrix,
    x: &[f32],
    y0: Option<&[f32]>,
) -> Result<Vec<f32>, LlmError> {
    let l = Launch::new(client, target);
    let words = x.len() / 4;
    let blocks = x.len() / BLOCK;
    let xb = l.f32s(x);
    let (xq, xd) = (l.i32s(&vec![0; words]), l.f32s(&vec![0.0; blocks]));
    let (count, dim) = grid(words, QUANT_UNITS);
    // The quantizer reads `x` as vectors of four.
    // SAFETY: `xb` holds `4·words` values.
    let x4 = unsafe { BufferArg::from_raw_parts(xb.0.clone(), words) };
    quantize_q8_1::launch_with(client, count, dim, x4, arg(&xq), arg(&xd), words, l.target);
    let wb = l.i32s(&w.words);
    let mins = if w.mins.is_empty() { vec![0.0f32] } else { w.mins.clone() };
    let (sb, mb) = (l.f32s(&w.scales), l.f32s(&mins));
    let yb = l.f32s(&y0.map_or_else(|| vec![0.0; w.rows], <[f32]>::to_vec));
    let shape = MatvecShape { ty: w.ty, rows: w.rows, blocks, accumulate: y0.is_some() };
    let width = lanes::units(&l.target, LANES_8);
    let (count, dim) = grid(w.rows * width as usize, UNITS);
    // SAFETY: `wb` holds `w.words.len()` words, read as vectors of four; `xq` `words` words.
    let (w4, xq4) = unsafe {
        (BufferArg::from_raw_parts(wb.0.clone(), wb.1 / 4), BufferArg::from_raw_parts(xq.0.clone(), words / 4))
    };
    let (x, y) = (arg(&xd), arg(&yb));
    qmatvec::launch_with(client, count, dim, w4, arg(&sb), arg(&mb), xq4, x, y, 1, shape, width, 1, l.target);
    l.read(&yb)
}

/// What [`rope_store`] writes: the rotated query, and the caches with the key and value of
/// position `pos` in its slots.
pub struct Rotated {
    pub q: Vec<f32>,
    pub kc: Vec<f32>,
    pub vc: Vec<f32>,
}

/// [`rope_store`] of `qkv` at position `pos` (read from a step buffer, as the engine's), into
/// caches of `cache` values (the engine's attention state: the query, the key cache, the value
/// cache, one buffer).
pub fn rope(
    client: &Client,
    target: Target,
    qkv: &[f32],
    (cos, sin): (&[f32], &[f32]),
    pos: u32,
    cache: usize,
    shape: AttnShape,
) -> Result<Rotated, LlmError> {
    let l = Launch::new(client, target);
    let dim = shape.heads * AttnShape::HEAD_DIM;
    let kv = shape.kv_heads * AttnShape::HEAD_DIM;
    let (qkvb, state) = (l.f32s(qkv), l.f32s(&vec![0.0; dim + 2 * cache]));
    let (cb, sb) = (l.f32s(cos), l.f32s(sin));
    let (count, cube) = grid(dim / 2 + kv, UNITS);
    let step = l.step(pos);
    let (keys, values) = (dim as u32, (dim + cache) as u32);
    let bufs = (arg(&qkvb), arg(&state), arg(&cb), arg(&sb), arg(&step));
    rope_store::launch_with(
        client,
        count,
        cube,
        bufs.0,
        bufs.1,
        bufs.2,
        bufs.3,
        bufs.4,
        keys,
        values,
        slots::POS,
        shape,
        l.target,
    );
    let all = l.read(&state)?;
    Ok(Rotated { q: all[..dim].to_vec(), kc: all[dim..dim + cache].to_vec(), vc: all[dim + cache..].to_vec() })
}

/// [`scores`] of the query `q` against the first `n` keys of the cache `kc` (from `base`):
/// `heads × context` values, those past `n` left at zero.
pub fn attention_scores(
    client: &Client,
    target: Target,
    q: &[f32],
    kc: &[f32],
    n: u32,
    base: u32,
    shape: AttnShape,
) -> Result<Vec<f32>, LlmError> {
    let l = Launch::new(client, target);
    let state: Vec<f32> = q.iter().chain(kc).copied().collect();
    let (stb, sb) = (l.f32s(&state), l.f32s(&vec![0.0; shape.heads * shape.context]));
    let (count, dim) = grid(shape.heads * shape.context, UNITS);
    let step = l.step(n - 1);
    let base = q.len() as u32 + base;
    scores::launch_with(client, count, dim, arg(&stb), arg(&sb), arg(&step), base, slots::N, shape, l.target);
    l.read(&sb)
}

/// [`softmax`] of the first `n` scores of each head of `s` (`heads × context`).
pub fn softmax_heads(
    client: &Client,
    target: Target,
    s: &[f32],
    n: u32,
    shape: AttnShape,
) -> Result<Vec<f32>, LlmError> {
    let l = Launch::new(client, target);
    let sb = l.f32s(s);
    let width = lanes::units(&l.target, LANES_32);
    let (count, dim) = grid(shape.heads * width as usize, UNITS);
    let step = l.step(n - 1);
    softmax::launch_with(client, count, dim, arg(&sb), arg(&step), slots::N, shape, width, l.target);
    l.read(&sb)
}

/// [`attend`]: each head's weights `p` (`heads × context`) over the first `n` values of `vc`.
pub fn attention_values(
    client: &Client,
    target: Target,
    p: &[f32],
    vc: &[f32],
    n: u32,
    base: u32,
    shape: AttnShape,
) -> Result<Vec<f32>, LlmError> {
    let l = Launch::new(client, target);
    let dim = shape.heads * AttnShape::HEAD_DIM;
    let (pb, vb, ob) = (l.f32s(p), l.f32s(vc), l.f32s(&vec![0.0; dim]));
    let width = lanes::units(&l.target, LANES_8);
    let (count, cube) = grid(dim * width as usize, UNITS);
    let step = l.step(n - 1);
    let (p, v, o, s) = (arg(&pb), arg(&vb), arg(&ob), arg(&step));
    attend::launch_with(client, count, cube, p, v, o, s, base, slots::N, shape, width, l.target);
    l.read(&ob)
}

/// [`swiglu`] of `gate_up` (`gate`, `up` stacked).
pub fn swiglu_all(client: &Client, target: Target, gate_up: &[f32]) -> Result<Vec<f32>, LlmError> {
    let l = Launch::new(client, target);
    let n = gate_up.len() / 2;
    let (gb, ab) = (l.f32s(gate_up), l.f32s(&vec![0.0; n]));
    let (count, dim) = grid(n, UNITS);
    swiglu::launch_with(client, count, dim, arg(&gb), arg(&ab), n, l.target);
    l.read(&ab)
}

/// [`crate::fused::norm_quant`] of `x` with `w`: the quantized words and block scales.
pub fn norm_quant(
    client: &Client,
    target: Target,
    x: &[f32],
    w: &[f32],
    eps: f32,
) -> Result<(Vec<i32>, Vec<f32>), LlmError> {
    let l = Launch::new(client, target);
    let n = x.len();
    let (xb, wb) = (l.f32s(x), l.f32s(w));
    let (xq, xd) = (l.i32s(&vec![0; n / 4]), l.f32s(&vec![0.0; n / 32]));
    crate::fused::launch_norm_quant(client, n, eps, 1, [&xb.0, &wb.0, &xq.0, &xd.0], target);
    Ok((l.read(&xq)?, l.read(&xd)?))
}

/// [`crate::fused::swiglu_quant`] of `gate_up` (`gate`, `up` stacked): the quantized words
/// and block scales.
pub fn swiglu_quant(client: &Client, target: Target, gate_up: &[f32]) -> Result<(Vec<i32>, Vec<f32>), LlmError> {
    let l = Launch::new(client, target);
    let n = gate_up.len() / 2;
    let gb = l.f32s(gate_up);
    let (xq, xd) = (l.i32s(&vec![0; n / 4]), l.f32s(&vec![0.0; n / 32]));
    crate::fused::launch_swiglu_quant(client, n, 1, [&gb.0, &xq.0, &xd.0], target);
    Ok((l.read(&xq)?, l.read(&xd)?))
}

/// [`crate::act_matvec::act_qmatvec`] for one token: `y = W·q8_1(act(src))`, or `y0 + …` with
/// `y0`; `norm` holds the RMSNorm's weights where `act` is [`Act::Norm`] (else it is not read).
#[allow(clippy::too_many_arguments)]
pub fn act_matvec(
    client: &Client,
    target: Target,
    act: Act,
    w: &QuantMatrix,
    src: &[f32],
    norm: &[f32],
    eps: f32,
    y0: Option<&[f32]>,
) -> Result<Vec<f32>, LlmError> {
    let l = Launch::new(client, target);
    let (sb, nb) = (l.f32s(src), l.f32s(if norm.is_empty() { &[0.0] } else { norm }));
    let mins = if w.mins.is_empty() { vec![0.0f32] } else { w.mins.clone() };
    let (wb, db, mb) = (l.i32s(&w.words), l.f32s(&w.scales), l.f32s(&mins));
    let yb = l.f32s(&y0.map_or_else(|| vec![0.0; w.rows], <[f32]>::to_vec));
    let shape = MatvecShape { ty: w.ty, rows: w.rows, blocks: w.cols / BLOCK, accumulate: y0.is_some() };
    let b = ActBuffers { src: &sb.0, norm: &nb.0, words: &wb.0, scales: &db.0, mins: &mb.0, y: &yb.0 };
    crate::act_matvec::launch(client, act, shape, eps, b, target);
    l.read(&yb)
}

/// What [`crate::attention_step::attention_step`] computes: the heads' outputs, and the caches
/// with the token's key and value in their slots.
pub struct Attended {
    pub att: Vec<f32>,
    pub kc: Vec<f32>,
    pub vc: Vec<f32>,
}

/// [`crate::attention_step::attention_step`] of `qkv` at position `pos` (read from a step
/// buffer) over the caches `kc` and `vc` (`shape.context` positions each, in the engine's
/// attention state after a query's room).
pub fn attention_step(
    client: &Client,
    target: Target,
    qkv: &[f32],
    (cos, sin): (&[f32], &[f32]),
    pos: u32,
    (kc, vc): (&[f32], &[f32]),
    shape: AttnShape,
) -> Result<Attended, LlmError> {
    let l = Launch::new(client, target);
    let dim = shape.heads * AttnShape::HEAD_DIM;
    let cache = kc.len();
    let state: Vec<f32> = std::iter::repeat_n(0.0, dim).chain(kc.iter().copied()).chain(vc.iter().copied()).collect();
    let (qkvb, stb, ab) = (l.f32s(qkv), l.f32s(&state), l.f32s(&vec![0.0; dim]));
    let (cb, snb) = (l.f32s(cos), l.f32s(sin));
    let step = l.step(pos);
    let bufs = StepBuffers { qkv: &qkvb.0, state: &stb.0, cos: &cb.0, sin: &snb.0, step: &step.0, att: &ab.0 };
    crate::attention_step::launch(client, shape, bufs, (state.len(), dim, dim + cache), target)?;
    let all = l.read(&stb)?;
    Ok(Attended { att: l.read(&ab)?, kc: all[dim..dim + cache].to_vec(), vc: all[dim + cache..].to_vec() })
}
