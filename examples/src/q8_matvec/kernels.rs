//! The islands of the Q8_0 matvec and its two kernels (with islands, and written for CUDA by
//! hand), built from one body.

use crate::rows::{LANES, row_sum};
use cubecl::prelude::*;
use half::f16;
use island_intrinsics::{dp4a, exact, plane, portable, stream};
use island_runtime::divergence::{Divergence, Of};
use island_runtime::prelude::*;
use island_runtime::quirks;

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
pub fn round_half_away(v: f32) -> i32 {
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
                    acc = scaled_add(s, d, acc, tag);
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
    scaled_add(s, d, acc, tag)
}

/// `fma(s, d, acc)` with one rounding: with `tag`, [`exact::fma`] (a Vulkan driver's own `Fma`
/// may round the product first; lavapipe's does); without, CubeCL's `fma` (CUDA's `fma.rn`).
#[cube]
fn scaled_add(s: f32, d: i32, acc: f32, #[comptime] tag: Option<Target>) -> f32 {
    if comptime!(tag.is_some()) {
        exact::fma(s, f32::cast_from(d), acc, comptime!(tag.unwrap()))
    } else {
        fma(s, f32::cast_from(d), acc)
    }
}

/// The index of 16-byte half `half` of block `group·32 + lane` of `row` in the group-major
/// weight layout (the kernel's side of [`word_index`]).
#[cube]
fn vector_at(
    #[comptime] rows: usize,
    #[comptime] blocks_per_row: usize,
    row: usize,
    group: usize,
    half: usize,
    lane: usize,
) -> usize {
    let size = min(32, blocks_per_row - group * 32);
    group * 64 * rows + (row * 2 + half) * size + lane
}

/// The index of the scale of block `group·32 + lane` of `row` (the kernel's side of
/// [`scale_index`]).
#[cube]
fn scale_at(
    #[comptime] rows: usize,
    #[comptime] blocks_per_row: usize,
    row: usize,
    group: usize,
    lane: usize,
) -> usize {
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

// Measured divergences of these islands on devices (`island_runtime::quirks`): conformance
// declines the arm there, within the value groups measured, and launches take `default`.

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_SUBGROUP_SUBNORMALS,
    islands: &[concat!(module_path!(), "::block_amax#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::LAVAPIPE_SUBGROUP_MAX_NANS_AND_ZEROS,
    islands: &[concat!(module_path!(), "::block_amax#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Default,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_ARITHMETIC,
    islands: &[concat!(module_path!(), "::block_amax#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Default,
    quirk: &quirks::LAVAPIPE_MAX_RETURNS_NAN,
    islands: &[concat!(module_path!(), "::block_amax#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::LAVAPIPE_WGSL_MAX_NANS_AND_ZEROS,
    islands: &[concat!(module_path!(), "::block_amax#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Default,
    quirk: &quirks::LAVAPIPE_WGSL_MAX_NANS_AND_ZEROS,
    islands: &[concat!(module_path!(), "::block_amax#0"),],
});
