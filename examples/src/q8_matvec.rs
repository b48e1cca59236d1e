//! Q8_0 matrix × vector, the way llama.cpp runs a quantized linear layer for one token.
//!
//! Weights are GGUF `block_q8_0`: 32 signed bytes and one f16 scale per block, row-major.
//! [`Q8Weights::from_gguf`] splits the blocks into a word array (4 bytes per `u32`, group-major:
//! see [`Q8Weights::words`]) and a scale array, once at load time, so the kernel loads 16-byte
//! vectors. The
//! activations are quantized per block of 32 as llama.cpp does for `mmvq`
//! (`d = amax / 127`, `q = round(x / d)`, half away from zero), which is part of the work.
//!
//! The dot of a weight word with an activation word is an island: `dp4a` where the backend has
//! it, portable byte arithmetic in `default`. Each weight load is an island too (a load that
//! skips L1 on CUDA, the plain load elsewhere). So is the quantizer's block maximum (the
//! block's 8 units exchange their maxima by plane shuffles, or each reads the whole block in
//! `default`). The sum over a row's 32 lanes is an island:
//! a plane sum where planes are 32 wide, a shared-memory tree in `default`, both in butterfly
//! order. Every float operation is an explicit `fma`, a product or a sum in a fixed order, so
//! no backend can contract or reorder it: the CPU's `default` result is the definition, and
//! each backend's output is byte-equal to it.

pub use crate::error::ShapeError;
use cubecl::prelude::*;
use half::f16;
use crate::rows::{LANES, pairwise_sum, row_sum};
use island_intrinsics::{dp4a, exact, plane, portable, stream};
use island_runtime::prelude::*;

/// Values per quantization block.
pub const BLOCK: usize = 32;
/// The dot product of one weight word with one activation word, accumulated.
#[islands]
#[cube]
pub fn dot_word(w: i32, x: i32, acc: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(w: i32, x: i32, acc: i32) -> i32;
        cuda | vulkan if dp4a => dp4a::call(w, x, acc, target),
        default => portable::dot4_i8(w, x, acc),
    }
}

/// One 16-byte vector of weights. Each weight byte is read once, so on CUDA the load does not
/// allocate in L1, which keeps the activations (read by every row) cached there; elsewhere it
/// is the plain load, the same bytes.
#[islands]
#[cube]
pub fn fetch(src: &[Vector<i32, Const<4>>], index: usize, #[comptime] target: Target) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 64], index: usize = UNIT_POS as usize) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda => stream::load_x4::call(src, index, target),
        default => src[index],
    }
}

/// A weight vector: the [`fetch`] island, or without a tag the CUDA streaming load itself.
#[cube]
fn weight(wq: &[Vector<i32, Const<4>>], index: usize, #[comptime] tag: Option<Target>) -> Vector<i32, Const<4>> {
    if comptime!(tag.is_some()) { fetch(wq, index, comptime!(tag.unwrap())) } else { stream::load_x4::cuda(wq, index) }
}

/// `round(v)`, half away from zero (C's `roundf`), exactly: `v - floor(|v|)` is exact, so no
/// `+ 0.5` rounding can creep in.
#[cube]
fn round_half_away(v: f32) -> i32 {
    let a = v.abs();
    let t = a.floor();
    let mut r = i32::cast_from(t);
    if a - t >= 0.5 {
        r += 1;
    }
    if v < 0.0 {
        r = -r;
    }
    r
}

/// The largest `|x|` of the quantization block that word `word` belongs to: its 32 values are
/// the 16-byte vectors `x[8·block .. 8·block + 8]`, one per word. Where planes exist, each of
/// the block's 8 units loads only its own vector and the 8 exchange their maxima by xor
/// shuffles ([`plane::group_max`]; a block's units are 8 aligned lanes of a plane); in
/// `default`, every unit reads the whole block. Both take the maximum of the block's
/// magnitudes starting from `+0.0`, and a maximum does not depend on the order it is taken in,
/// so both are the same bits (NaN inputs included where `max` returns the other operand, as
/// CUDA's `fmaxf` and LLVM's `maxnum` do; the proof draws NaN payloads). Every unit of the
/// cube must call it (the exchange may go through the cube), with `word` in bounds.
#[islands]
#[cube]
pub fn block_amax(x: &[Vector<f32, Const<4>>], word: usize, #[comptime] target: Target) -> f32 {
    island! {
        proof(x: &[Vector<f32, Const<4>>; 64], word: usize = UNIT_POS as usize) -> f32, cube_dim = 64;
        cuda | hip | vulkan | metal | webgpu if plane >= 8 => {
            plane::group_max::call::<f32>(magnitude(x[word], 0.0f32), 8u32, target)
        },
        default => {
            let block = word / 8;
            let mut m = 0.0f32;
            #[unroll]
            for i in 0..8usize {
                m = magnitude(x[block * 8 + i], m);
            }
            m
        },
    }
}

/// `max(m, |v_0|, …, |v_3|)`, left to right.
#[cube]
fn magnitude(v: Vector<f32, Const<4>>, m: f32) -> f32 {
    let mut m = m;
    #[unroll]
    for j in 0..4usize {
        m = max(m, v.extract(j).abs());
    }
    m
}

/// Quantizes `x` into blocks of 32, one unit per packed word: the block's `amax` is the
/// [`block_amax()`] island, then each unit packs its own four values; `xq` gets the packed bytes,
/// `xd` each block's scale. The word count is comptime, so no unit waits on a metadata load
/// before its first load of `x`.
#[islands]
#[cube(launch, create_dummy_kernel)]
pub fn quantize_q8_1(x: &[Vector<f32, Const<4>>], xq: &mut [i32], xd: &mut [f32], #[comptime] words: usize) {
    quantize_body(x, xq, xd, words, comptime!(Some(target)));
}

/// The same quantizer written for CUDA by hand, with no island: the block maximum's plane
/// shuffles called directly ([`plane::group_max_native`]; the [`matvec_q8_0_direct()`] path).
#[cube(launch, create_dummy_kernel)]
pub fn quantize_q8_1_direct(x: &[Vector<f32, Const<4>>], xq: &mut [i32], xd: &mut [f32], #[comptime] words: usize) {
    quantize_body(x, xq, xd, words, comptime!(None::<Target>));
}

/// The quantizer, written once for both kernels (with `tag`, the block maximum is the island).
#[cube]
#[allow(clippy::manual_is_multiple_of)] // `%` is what CubeCL lowers in a kernel
fn quantize_body(
    x: &[Vector<f32, Const<4>>],
    xq: &mut [i32],
    xd: &mut [f32],
    #[comptime] words: usize,
    #[comptime] tag: Option<Target>,
) {
    // Every unit takes part in the block maximum (its exchange may be a plane shuffle); the
    // units past the end read the last word and store nothing.
    let word = min(ABSOLUTE_POS, words - 1);
    let amax = if comptime!(tag.is_some()) {
        block_amax(x, word, comptime!(tag.unwrap()))
    } else {
        plane::group_max::native::<f32>(magnitude(x[word], 0.0f32), 8u32)
    };
    if ABSOLUTE_POS < words {
        let block = word / 8;
        let d = quotient(amax, 127.0f32, tag);
        if word % 8 == 0 {
            xd[block] = d;
        }
        let v = x[word];
        let mut packed = 0i32;
        #[unroll]
        for j in 0..4usize {
            let mut q = 0i32;
            if amax != 0.0 {
                q = round_half_away(quotient(v.extract(j), d, tag));
            }
            packed |= (q & 0xff) << (8 * j as i32);
        }
        xq[word] = packed;
    }
}

/// `a / b`, correctly rounded on every backend: the [`exact::div`] island with a tag, CUDA's
/// own `/` (`div.rn.f32`) in the direct kernel.
#[cube]
fn quotient(a: f32, b: f32, #[comptime] tag: Option<Target>) -> f32 {
    if comptime!(tag.is_some()) { exact::div(a, b, comptime!(tag.unwrap())) } else { a / b }
}

/// One block's contribution: `Σ_j dot(w_j, x_j)` over its 8 words, in word order.
#[cube]
fn block_dot(
    w0: Vector<i32, Const<4>>,
    w1: Vector<i32, Const<4>>,
    x0: Vector<i32, Const<4>>,
    x1: Vector<i32, Const<4>>,
    #[comptime] tag: Option<Target>,
) -> i32 {
    let mut sumi = 0i32;
    #[unroll]
    for j in 0..8usize {
        let (w, x) = if j < 4 { (w0.extract(j), x0.extract(j)) } else { (w1.extract(j - 4), x1.extract(j - 4)) };
        if comptime!(tag.is_some()) {
            sumi = dot_word(w, x, sumi, comptime!(tag.unwrap()));
        } else {
            sumi = cubecl::prelude::dp4a(w, x, sumi);
        }
    }
    sumi
}

/// The matvec, written once for both kernels: with `tag`, the weight loads, the dot products
/// and the row sum are islands; without, they are the CUDA streaming load, CubeCL's `dp4a` and
/// `plane_sum` called directly.
///
/// One 32-lane plane per row, `planes` rows per cube. Lane `l` takes blocks `l, l + 32, …` in
/// order, so the row's blocks come in groups of 32, one block per lane. The weights are stored
/// group-major (see [`Q8Weights::words`]), so the planes of a cube, working on the same group,
/// read one contiguous stretch. Groups are consumed `unroll` at a time while the next `unroll`
/// groups' weights are already in flight (a register double buffer). Each lane accumulates
/// `fma(dw·dx, sumi, acc)` block by block; the row sum then adds the 32 lane partials in
/// butterfly order.
#[cube]
#[allow(clippy::collapsible_if)] // a comptime branch around a runtime one
fn matvec_body(
    wq: &[Vector<i32, Const<4>>],
    wd: &[f16],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    y: &mut [f32],
    #[comptime] config: Config,
    #[comptime] tag: Option<Target>,
) {
    let blocks_per_row = comptime!(config.blocks_per_row);
    let unroll = comptime!(config.unroll);
    // The row count is comptime: read from the buffer's length, it would be a dependent load
    // at the start of every plane, ahead of its first weight load.
    let rows = comptime!(config.rows);
    let full = comptime!(blocks_per_row / 32);
    let stages = comptime!(full / unroll);
    let rest = comptime!(blocks_per_row % 32);
    let lane = (UNIT_POS % LANES) as usize;
    let row = CUBE_POS * config.planes as usize + (UNIT_POS / LANES) as usize;
    let mut acc = 0.0f32;
    if row < rows {
        if comptime!(stages > 0) {
            let mut w = Array::<Vector<i32, Const<4>>>::new(2 * unroll);
            let mut h = Array::<f16>::new(unroll);
            #[unroll]
            for u in 0..unroll {
                w[2 * u] = weight(wq, vector_at(rows, blocks_per_row, row, u, 0, lane), tag);
                w[2 * u + 1] = weight(wq, vector_at(rows, blocks_per_row, row, u, 1, lane), tag);
                h[u] = wd[scale_at(rows, blocks_per_row, row, u, lane)];
            }
            for stage in 0..stages {
                let mut n = Array::<Vector<i32, Const<4>>>::new(2 * unroll);
                let mut nh = Array::<f16>::new(unroll);
                if stage + 1 < stages {
                    #[unroll]
                    for u in 0..unroll {
                        let group = (stage + 1) * unroll + u;
                        n[2 * u] = weight(wq, vector_at(rows, blocks_per_row, row, group, 0, lane), tag);
                        n[2 * u + 1] = weight(wq, vector_at(rows, blocks_per_row, row, group, 1, lane), tag);
                        nh[u] = wd[scale_at(rows, blocks_per_row, row, group, lane)];
                    }
                }
                #[unroll]
                for u in 0..unroll {
                    let blk = (stage * unroll + u) * 32 + lane;
                    let s = f32::cast_from(h[u]) * xd[blk];
                    let d = block_dot(w[2 * u], w[2 * u + 1], xq[blk * 2], xq[blk * 2 + 1], tag);
                    acc = fma(s, f32::cast_from(d), acc);
                }
                #[unroll]
                for u in 0..unroll {
                    w[2 * u] = n[2 * u];
                    w[2 * u + 1] = n[2 * u + 1];
                    h[u] = nh[u];
                }
            }
        }
        // The full groups that do not fill a stage, then the last, partial group.
        for group in stages * unroll..full {
            acc = block_step(wq, wd, xq, xd, acc, rows, blocks_per_row, row, group, lane, tag);
        }
        if comptime!(rest > 0) {
            if lane < rest {
                acc = block_step(wq, wd, xq, xd, acc, rows, blocks_per_row, row, full, lane, tag);
            }
        }
    }
    let total = if comptime!(tag.is_some()) { row_sum(acc, comptime!(tag.unwrap())) } else { plane_sum(acc) };
    if row < rows && lane == 0 {
        y[row] = total;
    }
}

/// One block of one lane, loaded and accumulated at once (outside the pipelined stages).
#[cube]
#[allow(clippy::too_many_arguments)]
fn block_step(
    wq: &[Vector<i32, Const<4>>],
    wd: &[f16],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    acc: f32,
    #[comptime] rows: usize,
    #[comptime] blocks_per_row: usize,
    row: usize,
    group: usize,
    lane: usize,
    #[comptime] tag: Option<Target>,
) -> f32 {
    let blk = group * 32 + lane;
    let w0 = weight(wq, vector_at(rows, blocks_per_row, row, group, 0, lane), tag);
    let w1 = weight(wq, vector_at(rows, blocks_per_row, row, group, 1, lane), tag);
    let s = f32::cast_from(wd[scale_at(rows, blocks_per_row, row, group, lane)]) * xd[blk];
    let d = block_dot(w0, w1, xq[blk * 2], xq[blk * 2 + 1], tag);
    fma(s, f32::cast_from(d), acc)
}

/// The index of 16-byte half `half` of block `group·32 + lane` of `row` in the group-major
/// weight layout (the kernel's side of [`word_index`]).
#[cube]
fn vector_at(#[comptime] rows: usize, #[comptime] blocks_per_row: usize, row: usize, group: usize, half: usize, lane: usize) -> usize {
    let size = min(32, blocks_per_row - group * 32);
    group * 64 * rows + (row * 2 + half) * size + lane
}

/// The index of the scale of block `group·32 + lane` of `row` (the kernel's side of
/// [`scale_index`]).
#[cube]
fn scale_at(#[comptime] rows: usize, #[comptime] blocks_per_row: usize, row: usize, group: usize, lane: usize) -> usize {
    let size = min(32, blocks_per_row - group * 32);
    group * 32 * rows + row * size + lane
}

/// The comptime shape of a matvec kernel.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Config {
    pub rows: usize,
    pub blocks_per_row: usize,
    /// Rows (32-lane planes) per cube.
    pub planes: u32,
    /// Groups of 32 blocks per pipeline stage (blocks a lane loads per stage).
    pub unroll: usize,
}

/// Q8_0 matvec with islands: `dp4a` and a plane sum where the device has them.
#[islands]
#[cube(launch, create_dummy_kernel)]
pub fn matvec_q8_0(
    wq: &[Vector<i32, Const<4>>],
    wd: &[f16],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    y: &mut [f32],
    #[comptime] config: Config,
) {
    matvec_body(wq, wd, xq, xd, y, config, comptime!(Some(target)));
}

/// The same kernel written for CUDA by hand, with no island and no tag: CubeCL's `dp4a` and
/// `plane_sum` called directly. It exists to show the islands cost nothing: its generated CUDA
/// source and its time match [`matvec_q8_0`]'s with native arms.
#[cube(launch, create_dummy_kernel)]
pub fn matvec_q8_0_direct(
    wq: &[Vector<i32, Const<4>>],
    wd: &[f16],
    xq: &[Vector<i32, Const<4>>],
    xd: &[f32],
    y: &mut [f32],
    #[comptime] config: Config,
) {
    matvec_body(wq, wd, xq, xd, y, config, comptime!(None::<Target>));
}

/// Q8_0 weights in the kernel's layout.
#[derive(Clone, Debug)]
pub struct Q8Weights {
    pub rows: usize,
    pub cols: usize,
    /// 8 words per block, group-major: a row's blocks come in groups of 32 (the last may be
    /// shorter), and group `g` of every row is stored before group `g + 1` of any, rows in
    /// order. Within a row's group, first the low 16 bytes of each block, then the high 16
    /// bytes, so that 32 lanes reading one half each read 512 contiguous bytes, and the planes
    /// of a cube, on neighbouring rows, read neighbouring stretches. See [`word_index`].
    pub words: Vec<i32>,
    /// One scale per block, group-major like the words. See [`scale_index`].
    pub scales: Vec<f16>,
}

/// Bytes of one GGUF `block_q8_0`: an f16 scale, then 32 signed bytes.
pub const GGUF_BLOCK_BYTES: usize = 34;

impl Q8Weights {
    /// Splits GGUF `block_q8_0` bytes (rows × cols/32 blocks) into the kernel's layout.
    pub fn from_gguf(rows: usize, cols: usize, blocks: &[u8]) -> Result<Q8Weights, ShapeError> {
        check_shape(rows, cols)?;
        let n = rows * cols / BLOCK;
        if blocks.len() != n * GGUF_BLOCK_BYTES {
            return Err(ShapeError(format!(
                "{rows}×{cols} Q8_0 weights are {} bytes, got {}",
                n * GGUF_BLOCK_BYTES,
                blocks.len()
            )));
        }
        let mut words = vec![0i32; n * 8];
        let mut scales = vec![f16::ZERO; n];
        let per_row = cols / BLOCK;
        for (i, block) in blocks.chunks_exact(GGUF_BLOCK_BYTES).enumerate() {
            let (row, b) = (i / per_row, i % per_row);
            scales[scale_index(rows, per_row, row, b)] = f16::from_le_bytes([block[0], block[1]]);
            for (j, w) in block[2..].chunks_exact(4).enumerate() {
                words[word_index(rows, per_row, row, b, j)] = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            }
        }
        Ok(Q8Weights { rows, cols, words, scales })
    }

    /// Quantizes f32 weights to GGUF `block_q8_0` bytes (as llama.cpp's `quantize_row_q8_0`).
    pub fn quantize_gguf(rows: usize, cols: usize, w: &[f32]) -> Result<Vec<u8>, ShapeError> {
        check_shape(rows, cols)?;
        let mut out = Vec::with_capacity(rows * cols / BLOCK * GGUF_BLOCK_BYTES);
        for block in w.chunks_exact(BLOCK) {
            let (d, q) = quantize_block(block);
            out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
            out.extend(q.iter().map(|&v| v as u8));
        }
        Ok(out)
    }
}

/// Where word `j` (0..8) of block `block` of row `row` lives in [`Q8Weights::words`], for a
/// matrix of `rows` rows of `per_row` blocks.
pub fn word_index(rows: usize, per_row: usize, row: usize, block: usize, j: usize) -> usize {
    let (group, size) = group_of(per_row, block);
    let vector = group * 64 * rows + (row * 2 + j / 4) * size + block % 32;
    vector * 4 + j % 4
}

/// Where the scale of block `block` of row `row` lives in [`Q8Weights::scales`].
pub fn scale_index(rows: usize, per_row: usize, row: usize, block: usize) -> usize {
    let (group, size) = group_of(per_row, block);
    group * 32 * rows + row * size + block % 32
}

/// The group of 32 blocks that `block` belongs to in a row of `per_row` blocks, and that
/// group's size (32, or less for the last).
fn group_of(per_row: usize, block: usize) -> (usize, usize) {
    let group = block / 32;
    (group, 32.min(per_row - group * 32))
}

fn check_shape(rows: usize, cols: usize) -> Result<(), ShapeError> {
    if rows == 0 || cols == 0 || !cols.is_multiple_of(BLOCK) {
        return Err(ShapeError(format!(
            "Q8_0 needs a non-empty matrix whose row length is a multiple of {BLOCK}; got {rows}×{cols}"
        )));
    }
    Ok(())
}

/// llama.cpp's block quantization: `d = amax / 127`, `q = roundf(x / d)` (0 when amax is 0).
pub fn quantize_block(x: &[f32]) -> (f32, [i8; BLOCK]) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let mut q = [0i8; BLOCK];
    if amax != 0.0 {
        for (qi, &xi) in q.iter_mut().zip(x) {
            *qi = (xi / d).round() as i8;
        }
    }
    (d, q)
}

/// The plain-Rust reference: the same operations in the same order as the `default` arms.
pub fn reference(weights: &Q8Weights, x: &[f32]) -> Vec<f32> {
    let blocks_per_row = weights.cols / BLOCK;
    let mut xq = Vec::with_capacity(x.len() / 4);
    let mut xd = Vec::with_capacity(blocks_per_row);
    for block in x.chunks_exact(BLOCK) {
        let (d, q) = quantize_block(block);
        xd.push(d);
        for w in q.chunks_exact(4) {
            xq.push(i32::from_le_bytes([w[0] as u8, w[1] as u8, w[2] as u8, w[3] as u8]));
        }
    }
    (0..weights.rows)
        .map(|row| {
            let lanes: Vec<f32> = (0..LANES as usize)
                .map(|lane| {
                    let mut acc = 0.0f32;
                    for b in (lane..blocks_per_row).step_by(LANES as usize) {
                        let sumi = (0..8).fold(0i32, |s, j| {
                            let w = weights.words[word_index(weights.rows, blocks_per_row, row, b, j)];
                            island_intrinsics::dp4a::reference(w, xq[b * 8 + j], s)
                        });
                        let scale = weights.scales[scale_index(weights.rows, blocks_per_row, row, b)].to_f32() * xd[b];
                        acc = scale.mul_add(sumi as f32, acc);
                    }
                    acc
                })
                .collect();
            pairwise_sum(&lanes)
        })
        .collect()
}

/// How a matvec launch is shaped, chosen per device: on a GPU 16 rows per cube and 2 groups per
/// pipeline stage (the fastest of the shapes measured in `docs/perf.md`;
/// `ISLANDS_MATVEC_PLANES` (1 to 32) and `ISLANDS_MATVEC_UNROLL` override them, for tuning); on
/// the CPU runtime, which gives every unit of a cube with barriers its own thread, one row per
/// cube.
pub fn config_for(client: &Client, rows: usize, cols: usize) -> Config {
    let knob = |name: &str, default: usize| {
        std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|&v: &usize| v > 0).unwrap_or(default)
    };
    let blocks_per_row = cols / BLOCK;
    if client.name() == "cpu" {
        return Config { rows, blocks_per_row, planes: 1, unroll: 2 };
    }
    Config {
        rows,
        blocks_per_row,
        planes: knob("ISLANDS_MATVEC_PLANES", 16).min(32) as u32,
        unroll: knob("ISLANDS_MATVEC_UNROLL", 2),
    }
}

/// Units per cube of the activation quantizer (one unit per packed word): on a GPU 32, so that
/// its few hundred units spread over as many multiprocessors as possible (measured in
/// `docs/perf.md`); `ISLANDS_QUANT_UNITS` (a multiple of 32 up to 1024, so that a block's 8
/// units are 8 aligned lanes of one plane) overrides it, for tuning. On the CPU runtime 8, one
/// block per cube: an emulated plane shuffle synchronises the cube, and the CPU runtime gives
/// each unit of such a cube its own thread, so fewer units a cube spin less at each barrier.
fn quant_units(client: &Client) -> u32 {
    if client.name() == "cpu" {
        return 8;
    }
    std::env::var("ISLANDS_QUANT_UNITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v: &u32| (32..=1024).contains(v) && v.is_multiple_of(32))
        .unwrap_or(32)
}

/// Device buffers of one matvec problem, created once (for repeated, kernel-only launches).
pub struct Problem {
    pub rows: usize,
    pub cols: usize,
    pub config: Config,
    /// Units per cube of the quantizer, read once (see [`quant_units`]).
    quant_units: u32,
    wq: cubecl::server::Handle,
    wd: cubecl::server::Handle,
    x: cubecl::server::Handle,
    xq: cubecl::server::Handle,
    xd: cubecl::server::Handle,
    y: cubecl::server::Handle,
}

impl Problem {
    /// Uploads `weights` and `x`; checks the shapes first.
    pub fn new(client: &Client, weights: &Q8Weights, x: &[f32]) -> Result<Problem, ShapeError> {
        check_shape(weights.rows, weights.cols)?;
        if x.len() != weights.cols {
            return Err(ShapeError(format!(
                "the activation vector has {} values, the weights {} columns",
                x.len(),
                weights.cols
            )));
        }
        let blocks = weights.cols / BLOCK;
        Ok(Problem {
            rows: weights.rows,
            cols: weights.cols,
            config: config_for(client, weights.rows, weights.cols),
            quant_units: quant_units(client),
            wq: client.create_from_slice(i32::as_bytes(&weights.words)),
            wd: client.create_from_slice(f16::as_bytes(&weights.scales)),
            x: client.create_from_slice(f32::as_bytes(x)),
            xq: client.empty(blocks * 32),
            xd: client.empty(blocks * 4),
            y: client.empty(weights.rows * 4),
        })
    }

    /// Only the activation quantizer, with `target` as the tag (for a bench's breakdown).
    pub fn quantize(&self, client: &Client, target: Target) {
        let (count, dim, x, xq, xd, words) = self.quantize_args();
        quantize_q8_1::launch_with(client, count, dim, x, xq, xd, words, target);
    }

    /// Only [`quantize_q8_1_direct()`], the quantizer written without islands.
    pub fn quantize_direct(&self, client: &Client) {
        let (count, dim, x, xq, xd, words) = self.quantize_args();
        quantize_q8_1_direct::launch(client, count, dim, x, xq, xd, words);
    }

    /// The quantizer's grid (one unit per packed word), buffers (activations, packed words,
    /// block scales) and word count.
    fn quantize_args(&self) -> (CubeCount, CubeDim, BufferArg, BufferArg, BufferArg, usize) {
        let words = self.cols / 4;
        let count = CubeCount::Static((words as u32).div_ceil(self.quant_units), 1, 1);
        // SAFETY: the handles were allocated by `new` with these element counts.
        unsafe {
            (
                count,
                CubeDim::new_1d(self.quant_units),
                BufferArg::from_raw_parts(self.x.clone(), words),
                BufferArg::from_raw_parts(self.xq.clone(), words),
                BufferArg::from_raw_parts(self.xd.clone(), words / 8),
                words,
            )
        }
    }

    fn grid(&self) -> (CubeCount, CubeDim) {
        let planes = self.config.planes;
        (CubeCount::Static((self.rows as u32).div_ceil(planes), 1, 1), CubeDim::new_1d(LANES * planes))
    }

    /// Quantizes the activations and runs the matvec, with `target` as the tag (`None`: the
    /// tag of the client's device). Refuses a runtime that cannot run the selected arms.
    pub fn launch(&self, client: &Client, target: Option<Target>) -> Result<(), ShapeError> {
        let target = target.unwrap_or_else(|| Target::for_client(client));
        crate::rows::check_runtime(client, &target)?;
        self.quantize(client, target);
        self.matvec(client, target);
        Ok(())
    }

    /// The matvec's buffers as kernel arguments: weights, scales, quantized activations,
    /// their scales, output.
    fn matvec_args(&self) -> (BufferArg, BufferArg, BufferArg, BufferArg, BufferArg) {
        let blocks = self.cols / BLOCK;
        // SAFETY: every handle was allocated by `new` with the element count given here.
        unsafe {
            (
                BufferArg::from_raw_parts(self.wq.clone(), self.rows * blocks * 2),
                BufferArg::from_raw_parts(self.wd.clone(), self.rows * blocks),
                BufferArg::from_raw_parts(self.xq.clone(), blocks * 2),
                BufferArg::from_raw_parts(self.xd.clone(), blocks),
                BufferArg::from_raw_parts(self.y.clone(), self.rows),
            )
        }
    }

    /// Only the matvec, on the activations the last [`quantize`](Self::quantize) left.
    pub fn matvec(&self, client: &Client, target: Target) {
        let (count, dim) = self.grid();
        let (wq, wd, xq, xd, y) = self.matvec_args();
        matvec_q8_0::launch_with(client, count, dim, wq, wd, xq, xd, y, self.config, target);
    }

    /// The same work with [`matvec_q8_0_direct()`], the version written without islands.
    pub fn launch_direct(&self, client: &Client) {
        self.quantize_direct(client);
        self.matvec_direct(client);
    }

    /// Only [`matvec_q8_0_direct()`], on the activations the last [`quantize`](Self::quantize) left.
    pub fn matvec_direct(&self, client: &Client) {
        let (count, dim) = self.grid();
        let (wq, wd, xq, xd, y) = self.matvec_args();
        matvec_q8_0_direct::launch(client, count, dim, wq, wd, xq, xd, y, self.config);
    }

    /// Reads `y` back.
    pub fn output(&self, client: &Client) -> Result<Vec<f32>, String> {
        let bytes = island_runtime::readback::read(client, self.y.clone())?;
        Ok(f32::from_bytes(&bytes).to_vec())
    }
}
