//! The MMQ's activation quantizer: `n` columns of `k` f32 values to Q8_1 blocks, one unit per
//! block of 32. It writes the packed quants column after column (the `bᵀ` layout the product
//! reads) and each block's `d` and `s = d·Σq` block-major in [`super::col_position`] order.
//! Every float operation is defined: the maximum in value order, the divisions correctly
//! rounded ([`exact::div`]), the rounding half away from zero on the exact quotient, the sum
//! of quants an integer.

use super::quant::BLOCK;
use cubecl::prelude::*;
use island_intrinsics::exact;
use island_runtime::prelude::*;

/// Units per cube of the quantizer.
pub const QUANTIZE_UNITS: u32 = 128;

/// `v` rounded to the nearest integer, half away from zero, from its floor: exact for every
/// binary32 value (no `+ 0.5` rounding can creep in).
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

/// The position of column `col`'s scale within its 64-column group ([`super::col_position`]).
#[cube]
pub fn col_slot(col: u32) -> u32 {
    let c = col % 64;
    (col / 64) * 64 + ((c % 8) / 2) * 16 + (c / 8) * 2 + c % 2
}

/// One unit per block: the block's 8 vectors loaded at once and kept in registers for both
/// passes (the maximum, then the quotients), the packed quants stored as two 16-byte words.
#[islands]
#[cube(launch)]
pub fn quantize_q8_1_mmq(
    x: &[Vector<f32, Const<4>>],
    xq: &mut [Vector<i32, Const<4>>],
    xd: &mut [f32],
    xs: &mut [f32],
    #[comptime] k: u32,
    #[comptime] n: u32,
) {
    let per_col = comptime!(k / BLOCK as u32);
    let blk = ABSOLUTE_POS as u32;
    if blk < comptime!(n * (k / BLOCK as u32)) {
        let (col, b) = (blk / per_col, blk % per_col);
        let first = (blk * 8) as usize;
        let mut v = Array::<Vector<f32, Const<4>>>::new(8usize);
        #[unroll]
        for w in 0..8usize {
            v[w] = x[first + w];
        }
        let mut amax = 0.0f32;
        #[unroll]
        for w in 0..8usize {
            #[unroll]
            for j in 0..4usize {
                amax = max(amax, v[w].extract(j).abs());
            }
        }
        let d = exact::div(amax, 127.0f32, target);
        let mut sum = 0i32;
        #[unroll]
        for half in 0..2usize {
            let mut packed = Vector::<i32, Const<4>>::empty();
            #[unroll]
            for word in 0..4usize {
                let mut p = 0i32;
                #[unroll]
                for j in 0..4usize {
                    let mut q = 0i32;
                    if amax != 0.0 {
                        q = round_half_away(exact::div(v[half * 4 + word].extract(j), d, target));
                    }
                    sum += q;
                    p |= (q & 0xff) << (8 * j as i32);
                }
                packed.insert(word, p);
            }
            xq[(blk * 2) as usize + half] = packed;
        }
        let at = (b * n + col_slot(col)) as usize;
        xd[at] = d;
        xs[at] = d * f32::cast_from(sum);
    }
}
