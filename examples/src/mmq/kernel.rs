//! The MMQ product: one cube computes a `block_m × block_n` block of `y` (weight rows ×
//! tokens), the quant type a comptime parameter. The block is an island:
//! - `cuda if sm >= 80`: the int8 GEMM's pipeline ([`crate::gemm_i8_mma`]): `stages`
//!   shared-memory stages of 64 values of `k` filled by `cp.async`, the stage's scales beside
//!   them (loaded a stage ahead into registers, stored once the current stage is computed);
//!   fragments by `ldmatrix` (Q4_1: one load of the packed nibbles per tile and
//!   stage, split into the two blocks' low and high nibbles in registers); one `mma.sync`
//!   m16n8k32 per tile and block, i.e. one quantization block, started from `1.5·2²³` so that
//!   the block's integer sum reads as a float with one subtraction (exact: `|Σ| < 2²²`); then
//!   the block's scales, in the order of the definition, into f32 accumulators in registers,
//!   each step one flushing instruction ([`island_intrinsics::flushed`]).
//! - `default`: each unit its rows of the block, plain loops over the quants.
//!
//! Both apply the same operations to the same values in the same order, so the arm is
//! byte-equal to `default`: the CPU proof runs it through each intrinsic's emulation.

use super::quant::Quant;
use super::quantize::col_slot;
use crate::error::ShapeError;
use crate::gemm_i8_mma::Config;
use cubecl::prelude::*;
use island_intrinsics::{cp_async, flushed, ldmatrix, mma_sync, portable};
use island_runtime::prelude::*;

/// Values of `k` per stage (two quantization blocks).
pub const STAGE_K: u32 = 64;

/// The configuration the kernel launches with: 128×128 blocks of eight warps, each 64 rows ×
/// 32 tokens (64 f32 accumulators a lane), four stages. A warp's rows are one 64-row group of
/// the scale layout (`tiles_m` is 4); its tokens half of a 64-token group or all of it.
pub const CONFIG: Config = Config { warps_m: 2, warps_n: 4, tiles_m: 4, tiles_n: 4, stages: 4 };

/// 16-byte chunks of a stage's scales: two blocks of 128 f32.
const SCALE_CHUNKS: u32 = 64;

type Word = Vector<i32, Const<4>>;
type Scales = Vector<f32, Const<4>>;

/// 16-byte chunks of quants per row and stage.
const fn chunks_per_row(quant: Quant) -> u32 {
    match quant {
        Quant::Q8_0 => 4,
        Quant::Q4_1 => 2,
    }
}

/// The shared-memory slot of chunk `chunk` of row `row` of a stage: Q8_0 rows have 4 chunks,
/// XORed with bits 1–2 of the row; Q4_1 rows 2, XORed with bit 2. Either way the 8 rows an
/// `ldmatrix` phase reads fall in 8 distinct bank groups.
#[cube]
fn slot(row: u32, chunk: u32, #[comptime] quant: Quant) -> u32 {
    if comptime!(quant == Quant::Q8_0) {
        row * 4 + (chunk ^ ((row >> 1) & 3))
    } else {
        row * 2 + (chunk ^ ((row >> 2) & 1))
    }
}

/// The row position in the scale layout ([`super::row_position`]).
#[cube]
fn row_slot(row: u32) -> u32 {
    let r = row % 64;
    let (tile, h, g) = (r / 16, (r / 8) % 2, r % 8);
    (row / 64) * 64 + (g * 2 + tile / 2) * 4 + (tile % 2) * 2 + h
}

/// Issues the copies of stage `kt`'s quants into shared slot `stage`.
#[allow(clippy::too_many_arguments)]
#[cube]
fn load_stage(
    wq: &[Word],
    xq: &[Word],
    sa: &mut [Word],
    sb: &mut [Word],
    stage: u32,
    kt: u32,
    #[comptime] dims: (u32, u32, u32),
    #[comptime] quant: Quant,
    #[comptime] target: Target,
) {
    let (_m, k, _n) = dims;
    let cfg = CONFIG;
    let units = comptime!(cfg.units());
    let cpr = comptime!(chunks_per_row(quant));
    let a_chunks = comptime!(cfg.block_m() * cpr);
    let b_chunks = comptime!(cfg.block_n() * 4);
    let a_row_chunks = comptime!(k / 16 * cpr / 4);
    let b_row_chunks = comptime!(k / 16);
    #[unroll]
    for i in 0..comptime!(a_chunks / units) {
        let idx = UNIT_POS + i * units;
        let (row, chunk) = (idx / cpr, idx % cpr);
        cp_async::copy16::call(
            sa,
            stage * a_chunks + slot(row, chunk, quant),
            wq,
            row * a_row_chunks + kt * cpr + chunk,
            target,
        );
    }
    #[unroll]
    for i in 0..comptime!(b_chunks / units) {
        let idx = UNIT_POS + i * units;
        let (row, chunk) = (idx / 4, idx % 4);
        cp_async::copy16::call(
            sb,
            stage * b_chunks + slot(row, chunk, Quant::Q8_0),
            xq,
            row * b_row_chunks + kt * 4 + chunk,
            target,
        );
    }
}

/// This unit's part of stage `kt`'s scales: two blocks of 128 rows and 128 columns, 32 words
/// of four each; units 0–63 load the scales (`dw`, `dx`), units 64–127 the Q4_1 minima and
/// sums (`mw`, `sx`). Plain loads into registers, stored to shared memory by [`store_scales`]
/// once the current stage is computed, so their latency hides behind it.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)] // a comptime branch around a runtime one
#[cube]
fn fetch_scales(
    wd: &[Scales],
    wm: &[Scales],
    xd: &[Scales],
    xs: &[Scales],
    w: &mut Scales,
    x: &mut Scales,
    kt: u32,
    #[comptime] dims: (u32, u32, u32),
    #[comptime] quant: Quant,
) {
    let (m, _k, n) = dims;
    let u = UNIT_POS % SCALE_CHUNKS;
    let (b, part) = (kt * 2 + u / 32, u % 32);
    let (wi, xi) = ((b * comptime!(m / 4) + part) as usize, (b * comptime!(n / 4) + part) as usize);
    if UNIT_POS < SCALE_CHUNKS {
        *w = wd[wi];
        *x = xd[xi];
    } else if comptime!(quant == Quant::Q4_1) {
        if UNIT_POS < 2 * SCALE_CHUNKS {
            *w = wm[wi];
            *x = xs[xi];
        }
    }
}

/// Stores what [`fetch_scales`] loaded into shared slot `stage`.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)] // a comptime branch around a runtime one
#[cube]
fn store_scales(
    swd: &mut [Scales],
    swm: &mut [Scales],
    sxd: &mut [Scales],
    sxs: &mut [Scales],
    w: Scales,
    x: Scales,
    stage: u32,
    #[comptime] quant: Quant,
) {
    let at = (stage * SCALE_CHUNKS + UNIT_POS % SCALE_CHUNKS) as usize;
    if UNIT_POS < SCALE_CHUNKS {
        swd[at] = w;
        sxd[at] = x;
    } else if comptime!(quant == Quant::Q4_1) {
        if UNIT_POS < 2 * SCALE_CHUNKS {
            swm[at] = w;
            sxs[at] = x;
        }
    }
}

/// Elements `first` and `first + 1` of `w` (a constant wherever the loop around is unrolled).
#[cube]
fn pair(w: Word, first: u32) -> Vector<i32, Const<2>> {
    let mut p = Vector::<i32, Const<2>>::empty();
    p.insert(0usize, w.extract_dynamic(first as usize));
    p.insert(1usize, w.extract_dynamic(first as usize + 1));
    p
}

/// Element `i` of `w` (a constant wherever the loop around is unrolled).
#[cube]
fn scale(w: Scales, i: u32) -> f32 {
    w.extract_dynamic(i as usize)
}

/// `acc` plus one block's `dw · dx · sum`, as the definition orders it (`super`'s doc): the
/// flushing product of the scales, then the flushing `fma` of it with the sum and `acc`
/// ([`flushed`]). `sum` is an integer below 2²² in magnitude, never subnormal. The arm is two
/// instructions on CUDA (`mul.rn.ftz.f32`, `fma.rn.ftz.f32`); `default` is
/// [`flushed::mul_defined`] and [`flushed::fma_defined`], 32-bit integer operations which no
/// driver's float optimizations can rewrite (the binary64 formulation gave other bits on
/// lavapipe inside this kernel, `super`'s doc).
#[cube]
fn scale_block(dw: f32, dx: f32, sum: f32, acc: f32, #[comptime] target: Target, #[comptime] arm: bool) -> f32 {
    if comptime!(arm) {
        flushed::ftz_fma::call(flushed::ftz_mul::call(dw, dx, target), sum, acc, target)
    } else {
        flushed::fma_defined(flushed::mul_defined(dw, dx), sum, acc)
    }
}

/// `acc` plus a Q4_1 block's minimum term `mw · sx`, one flushing `fma` as in [`scale_block`].
#[cube]
fn add_minimum(mw: f32, sx: f32, acc: f32, #[comptime] target: Target, #[comptime] arm: bool) -> f32 {
    if comptime!(arm) { flushed::ftz_fma::call(mw, sx, acc, target) } else { flushed::fma_defined(mw, sx, acc) }
}

/// The Q4_1 fragment of block `ks` from the packed tile `raw` (registers: rows g and g + 8 of
/// block 0, then of block 1): low nibbles are values 0–15 of the block, high nibbles 16–31.
#[cube]
fn unpack(raw: Word, ks: u32) -> Word {
    let lo = raw.extract_dynamic((2 * ks) as usize);
    let hi = raw.extract_dynamic((2 * ks + 1) as usize);
    let mut f = Word::empty();
    f.insert(0usize, lo & 0x0f0f_0f0f);
    f.insert(1usize, hi & 0x0f0f_0f0f);
    f.insert(2usize, (lo >> 4) & 0x0f0f_0f0f);
    f.insert(3usize, (hi >> 4) & 0x0f0f_0f0f);
    f
}

/// The block on tensor cores: `wq` its first weight row, the scales at the block's first row
/// (column), `y` its first output (token-major, rows `m` apart).
#[allow(clippy::too_many_arguments)]
#[cube]
fn block_mma(
    wq: &[Word],
    wd: &[Scales],
    wm: &[Scales],
    xq: &[Word],
    xd: &[Scales],
    xs: &[Scales],
    y: &mut [f32],
    #[comptime] dims: (u32, u32, u32),
    #[comptime] quant: Quant,
    #[comptime] target: Target,
) {
    let (m, k, _n) = dims;
    let cfg = CONFIG;
    let k_tiles = comptime!(k / STAGE_K);
    let stages = comptime!(cfg.stages);
    let (tiles_m, tiles_n) = comptime!((cfg.tiles_m, cfg.tiles_n));
    let a_chunks = comptime!(cfg.block_m() * chunks_per_row(quant));
    let b_chunks = comptime!(cfg.block_n() * 4);
    let q4 = comptime!(quant == Quant::Q4_1);
    let mut sa = Shared::<[Word]>::new_slice(comptime!((stages * a_chunks) as usize));
    let mut sb = Shared::<[Word]>::new_slice(comptime!((stages * b_chunks) as usize));
    let mut swd = Shared::<[Scales]>::new_slice(comptime!((stages * SCALE_CHUNKS) as usize));
    let mut sxd = Shared::<[Scales]>::new_slice(comptime!((stages * SCALE_CHUNKS) as usize));
    let minima = comptime!(if q4 { (stages * SCALE_CHUNKS) as usize } else { 1usize });
    let mut swm = Shared::<[Scales]>::new_slice(minima);
    let mut sxs = Shared::<[Scales]>::new_slice(minima);
    let warp = UNIT_POS / 32;
    let lane = UNIT_POS % 32;
    let (g, t) = (lane / 4, lane % 4);
    let (warp_m, warp_n) = (warp / comptime!(cfg.warps_n), warp % comptime!(cfg.warps_n));
    let mut acc = Array::<Vector<f32, Const<4>>>::new(comptime!((tiles_m * tiles_n) as usize));
    #[unroll]
    for i in 0..comptime!((tiles_m * tiles_n) as usize) {
        acc[i] = Vector::<f32, Const<4>>::new(0.0);
    }
    #[unroll]
    for s in 0..comptime!(stages - 1) {
        if s < k_tiles {
            load_stage(wq, xq, &mut sa, &mut sb, s, s, dims, quant, target);
            let mut w = Scales::new(0.0);
            let mut x = Scales::new(0.0);
            fetch_scales(wd, wm, xd, xs, &mut w, &mut x, s, dims, quant);
            store_scales(&mut swd, &mut swm, &mut sxd, &mut sxs, w, x, s, quant);
        }
        cp_async::commit::call(target);
    }
    // `ldmatrix.x4` addresses: lane `l` names row `l % 8` of matrix `l / 8` (see the GEMM).
    let a_row = warp_m * comptime!(tiles_m * 16) + lane % 8 + 8 * ((lane / 8) % 2);
    let a_chunk = lane / 16;
    let b_row = warp_n * comptime!(tiles_n * 8) + lane % 8 + 8 * (lane / 16);
    let b_chunk = (lane / 8) % 2;
    // The mma's start: `1.5·2²³` as integer bits, so `bits(sum) - 1.5·2²³` is the sum as f32.
    let magic = Word::new(0x4b40_0000);
    let native = comptime!(target.is_native());
    for kt in 0..k_tiles {
        cp_async::wait::call(comptime!(stages - 2), target);
        sync_cube();
        let next = kt + stages - 1;
        let mut w_next = Scales::new(0.0);
        let mut x_next = Scales::new(0.0);
        if next < k_tiles {
            load_stage(wq, xq, &mut sa, &mut sb, next % stages, next, dims, quant, target);
            fetch_scales(wd, wm, xd, xs, &mut w_next, &mut x_next, next, dims, quant);
        }
        cp_async::commit::call(target);
        let stage = kt % stages;
        // Q4_1: each tile's packed nibbles of both blocks in one load.
        let mut raw = Array::<Word>::new(tiles_m as usize);
        if comptime!(q4) {
            #[unroll(native)]
            for mt in 0..tiles_m {
                raw[mt as usize] =
                    ldmatrix::x4::call(&sa, stage * a_chunks + slot(a_row + mt * 16, a_chunk, quant), target);
            }
        }
        #[unroll(native)]
        for ks in 0..2u32 {
            let mut fa = Array::<Word>::new(tiles_m as usize);
            #[unroll(native)]
            for mt in 0..tiles_m {
                if comptime!(q4) {
                    fa[mt as usize] = unpack(raw[mt as usize], ks);
                } else {
                    fa[mt as usize] = ldmatrix::x4::call(
                        &sa,
                        stage * a_chunks + slot(a_row + mt * 16, ks * 2 + a_chunk, quant),
                        target,
                    );
                }
            }
            let mut fb = Array::<Word>::new(comptime!(tiles_n as usize / 2));
            #[unroll(native)]
            for np in 0..comptime!(tiles_n / 2) {
                fb[np as usize] = ldmatrix::x4::call(
                    &sb,
                    stage * b_chunks + slot(b_row + np * 16, ks * 2 + b_chunk, Quant::Q8_0),
                    target,
                );
            }
            // This block's scales in fragment order: the warp's 64 rows are 2 words, its
            // columns `tiles_n / 2` words of the lane's 16-value run in its 64-column group.
            let sbase = stage * SCALE_CHUNKS + ks * 32;
            let rw = sbase + warp_m * 16 + g * 2;
            let wc = warp_n * comptime!(tiles_n * 8);
            let cw = sbase + (wc / 64) * 16 + t * 4 + (wc % 64) / 16;
            let mut rd = Array::<Scales>::new(2usize);
            let mut rmin = Array::<Scales>::new(2usize);
            #[unroll]
            for q in 0..2u32 {
                rd[q as usize] = swd[(rw + q) as usize];
                if comptime!(q4) {
                    rmin[q as usize] = swm[(rw + q) as usize];
                }
            }
            let mut cd = Array::<Scales>::new(comptime!(tiles_n as usize / 2));
            let mut cs = Array::<Scales>::new(comptime!(tiles_n as usize / 2));
            #[unroll]
            for q in 0..comptime!(tiles_n / 2) {
                cd[q as usize] = sxd[(cw + q) as usize];
                if comptime!(q4) {
                    cs[q as usize] = sxs[(cw + q) as usize];
                }
            }
            #[unroll(native)]
            for mt in 0..tiles_m {
                #[unroll(native)]
                for nt in 0..tiles_n {
                    let b = pair(fb[(nt / 2) as usize], (nt % 2) * 2);
                    let sums = mma_sync::m16n8k32_s8::call(fa[mt as usize], b, magic, target);
                    let i = (mt * tiles_n + nt) as usize;
                    let mut a = acc[i];
                    #[unroll]
                    for r in 0..4u32 {
                        // Row g + 8·(r / 2) of tile mt, column 2t + r % 2 of tile nt.
                        let (re, ce) = ((mt % 2) * 2 + r / 2, nt * 2 + r % 2);
                        let sum = f32::reinterpret(sums.extract(r as usize)) - 12582912.0f32;
                        let mut v = scale_block(
                            scale(rd[(mt / 2) as usize], re),
                            scale(cd[(ce / 4) as usize], ce % 4),
                            sum,
                            a.extract(r as usize),
                            target,
                            true,
                        );
                        if comptime!(q4) {
                            v = add_minimum(
                                scale(rmin[(mt / 2) as usize], re),
                                scale(cs[(ce / 4) as usize], ce % 4),
                                v,
                                target,
                                true,
                            );
                        }
                        a.insert(r as usize, v);
                    }
                    acc[i] = a;
                }
            }
        }
        // Slot `next % stages` was last read in the previous step, which the barrier above
        // closed; it is read again after the barrier of step `next`.
        if next < k_tiles {
            store_scales(&mut swd, &mut swm, &mut sxd, &mut sxs, w_next, x_next, next % stages, quant);
        }
    }
    // Lane (g, t) holds rows g, g + 8 of each tile, columns 2t, 2t + 1; `y` is token-major.
    #[unroll]
    for mt in 0..tiles_m {
        #[unroll]
        for nt in 0..tiles_n {
            let v = acc[(mt * tiles_n + nt) as usize];
            #[unroll]
            for r in 0..4u32 {
                let row = warp_m * comptime!(tiles_m * 16) + mt * 16 + g + 8 * (r / 2);
                let col = warp_n * comptime!(tiles_n * 8) + nt * 8 + 2 * t + r % 2;
                y[(col * m + row) as usize] = v.extract(r as usize);
            }
        }
    }
}

/// Quant `j` (0…31) of block `b` of the block's row `row`, as a packed-word lookup.
#[cube]
fn weight_quant(wq: &[Word], row: u32, b: u32, j: u32, #[comptime] k: u32, #[comptime] quant: Quant) -> i32 {
    if comptime!(quant == Quant::Q8_0) {
        let byte = row * k + b * 32 + j;
        let word = wq[(byte / 16) as usize].extract_dynamic(((byte / 4) % 4) as usize);
        (word << (24 - 8 * (byte % 4) as i32)) >> 24
    } else {
        let byte = row * (k / 2) + b * 16 + j % 16;
        let word = wq[(byte / 16) as usize].extract_dynamic(((byte / 4) % 4) as usize);
        (word >> (8 * (byte % 4) as i32 + 4 * (j / 16) as i32)) & 0xf
    }
}

/// The `default` block: unit `u` computes outputs `u, u + units, …` of the block (rows first),
/// each the definition's sum over blocks in `k` order.
#[allow(clippy::too_many_arguments)]
#[cube]
fn block_scalar(
    wq: &[Word],
    wd: &[Scales],
    wm: &[Scales],
    xq: &[Word],
    xd: &[Scales],
    xs: &[Scales],
    y: &mut [f32],
    #[comptime] dims: (u32, u32, u32),
    #[comptime] quant: Quant,
    #[comptime] target: Target,
) {
    let (m, k, n) = dims;
    let cfg = CONFIG;
    let units = comptime!(cfg.units());
    let blocks = comptime!(k / 32);
    let kc = comptime!(k / 16);
    for e in 0..comptime!(cfg.block_m() * cfg.block_n() / units) {
        let out = UNIT_POS + e * units;
        let (row, col) = (out % comptime!(cfg.block_m()), out / comptime!(cfg.block_m()));
        let rs = row_slot(row);
        {
            let cs = col_slot(col);
            let mut acc = 0.0f32;
            for b in 0..blocks {
                let mut sumi = 0i32;
                for w in 0..8u32 {
                    let mut packed = 0i32;
                    #[unroll]
                    for i in 0..4u32 {
                        packed |= (weight_quant(wq, row, b, w * 4 + i, k, quant) & 0xff) << (8 * i as i32);
                    }
                    let x = xq[(col * kc + b * 2 + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    sumi = portable::dot4_i8(packed, x, sumi);
                }
                let (wi, xi) = (b * m + rs, b * n + cs);
                let dw = scale(wd[(wi / 4) as usize], wi % 4);
                let dx = scale(xd[(xi / 4) as usize], xi % 4);
                acc = scale_block(dw, dx, f32::cast_from(sumi), acc, target, false);
                if comptime!(quant == Quant::Q4_1) {
                    let mw = scale(wm[(wi / 4) as usize], wi % 4);
                    let sx = scale(xs[(xi / 4) as usize], xi % 4);
                    acc = add_minimum(mw, sx, acc, target, false);
                }
            }
            y[(col * m + row) as usize] = acc;
        }
    }
}

/// The block an MMQ island is proven on: [`CONFIG`]'s 128×128 outputs over `k` of
/// [`PROOF_K`] (twelve quant blocks, three stages of the pipeline).
pub const PROOF_K: u32 = 384;

/// 16-byte words of quants in one row of `k` weights of `quant`.
pub const fn row_words(quant: Quant, k: u32) -> u32 {
    k / 32 * quant.quant_bytes() as u32 / 16
}

/// The words of quants of a proof block's weight rows.
pub const fn proof_wq_words(quant: Quant) -> u32 {
    CONFIG.block_m() * row_words(quant, PROOF_K)
}

/// The 4-wide vectors of scales (or sums) of `rows` weight rows or tokens over [`PROOF_K`]: one
/// per quant block each.
pub const fn proof_scale_vectors(rows: u32) -> usize {
    (rows * (PROOF_K / 32) / 4) as usize
}

/// One MMQ entry point per quant type: cube (x, y) computes tokens `x·block_n…` of weight rows
/// `y·block_m…`, the block on the tensor cores (`mma.sync`) or by `default`'s definition.
macro_rules! mmq_entry {
    ($(#[$doc:meta])* $name:ident, $quant:ident) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        #[islands]
        #[cube(launch)]
        pub fn $name(
            wq: &[Word],
            wd: &[Scales],
            wm: &[Scales],
            xq: &[Word],
            xd: &[Scales],
            xs: &[Scales],
            y: &mut [f32],
            #[comptime] m: u32,
            #[comptime] k: u32,
            #[comptime] n: u32,
        ) {
            let (row0, col0) = (CUBE_POS_Y * CONFIG.block_m(), CUBE_POS_X * CONFIG.block_n());
            let wq_block = &wq[(row0 * comptime!(row_words(Quant::$quant, k))) as usize..];
            let wd_block = &wd[(row0 / 4) as usize..];
            let wm_block = &wm[(row0 / 4) as usize..];
            let xq_block = &xq[(col0 * comptime!(k / 16)) as usize..];
            let xd_block = &xd[(col0 / 4) as usize..];
            let xs_block = &xs[(col0 / 4) as usize..];
            let y_block = &mut y[(col0 * m + row0) as usize..];
            island! {
                proof(wq_block: &[Vector<i32, Const<4>>; crate::mmq::kernel::proof_wq_words(crate::mmq::quant::Quant::$quant)],
                      wd_block: &[Vector<f32, Const<4>>; crate::mmq::kernel::proof_scale_vectors(CONFIG.block_m())],
                      wm_block: &[Vector<f32, Const<4>>; crate::mmq::kernel::proof_scale_vectors(CONFIG.block_m())],
                      xq_block: &[Vector<i32, Const<4>>; (CONFIG.block_n() * crate::mmq::kernel::PROOF_K / 16) as usize],
                      xd_block: &[Vector<f32, Const<4>>; crate::mmq::kernel::proof_scale_vectors(CONFIG.block_n())],
                      xs_block: &[Vector<f32, Const<4>>; crate::mmq::kernel::proof_scale_vectors(CONFIG.block_n())],
                      y_block: &mut [f32; (CONFIG.block_m() * CONFIG.block_n()) as usize],
                      m: u32 = CONFIG.block_m(), k: u32 = crate::mmq::kernel::PROOF_K, n: u32 = CONFIG.block_n()),
                      cube_dim = CONFIG.units();
                cuda if sm >= 80 => block_mma(wq_block, wd_block, wm_block, xq_block, xd_block, xs_block, y_block,
                                              comptime!((m, k, n)), Quant::$quant, target),
                default => block_scalar(wq_block, wd_block, wm_block, xq_block, xd_block, xs_block, y_block,
                                        comptime!((m, k, n)), Quant::$quant, target),
            }
        }
    };
}

mmq_entry!(
    /// The Q8_0 MMQ.
    mmq_q8_0, Q8_0
);
mmq_entry!(
    /// The Q4_1 MMQ: the same kernel with the quant type Q4_1 (rows of `k / 2` bytes).
    mmq_q4_1, Q4_1
);

/// Checks a shape before launch: `m` and `n` whole blocks of the kernel, `k` whole stages.
pub fn check(m: usize, k: usize, n: usize) -> Result<(), ShapeError> {
    let (bm, bn, bk) = (CONFIG.block_m() as usize, CONFIG.block_n() as usize, STAGE_K as usize);
    if m == 0 || n == 0 || k == 0 || !m.is_multiple_of(bm) || !n.is_multiple_of(bn) || !k.is_multiple_of(bk) {
        return Err(ShapeError(format!(
            "the MMQ works on whole {bm}×{bn} blocks and {bk}-value steps of k: m (weight rows) must be a positive multiple of {bm}, n (tokens) of {bn}, k of {bk}; got m={m}, k={k}, n={n}"
        )));
    }
    Ok(())
}
