//! binary32 products and fused multiply-adds with 32-bit integer operations only: for backends
//! without binary64 (WGSL, Metal), where [`crate::mul_rn`] and [`crate::fma_rn`], which compute
//! in binary64, cannot run. Correctly rounded to nearest even like them, subnormals in and out;
//! a NaN result is the canonical quiet NaN.
//!
//! No compiler can change their bits: the operands' bits are read as integers, the exact
//! product and sum are formed in 32-bit words, and the result's bits are packed by hand. WGSL's
//! integer arithmetic is exact modulo 2³² (its shader compilers, naga and Tint alike, may
//! reorder it only where the result is the same word), and bit casts copy bits, so neither a
//! reassociation nor a contraction nor a subnormal flush has a float operation to act on.
//! [`mul_add_rounded32`]'s one float add is the exception, as in [`crate::mul_add_rounded`].
//!
//! `island_intrinsics::exact::fma` and `exact::mul_add` take them on WebGPU and Metal; their
//! CPU proofs compare them with the binary64 definitions on every edge group and on random
//! inputs, and three negative fixtures (`proofs/tests/negative.rs`, `fma32_*`) show a planted
//! double rounding, flush and wrong tie caught.

use crate::fields::{exponent, significand};
use crate::subnormals::flush;
use cubecl::prelude::*;

/// `a · b`, rounded to nearest even (the bits of [`crate::mul_rn`]).
#[cube]
pub fn mul_rn32(a: f32, b: f32) -> f32 {
    f32::reinterpret(mul_bits(a, b, false, false))
}

/// `φa · φb` rounded to nearest even, or a zero of its sign where the product is tiny (`φ` is
/// [`flush`]): where, rounded to 24 bits with an unbounded exponent, it is below 2⁻¹²⁶ in
/// magnitude. So `2⁻¹²⁶ − 2⁻¹⁵⁰`, which IEEE's gradual underflow rounds up to 2⁻¹²⁶ (a tie), is
/// flushed, and a product a residue below 2⁻¹²⁶ that rounds up to it is kept.
#[cube]
pub fn mul_flushed32(a: f32, b: f32) -> f32 {
    f32::reinterpret(mul_bits(flush(a), flush(b), false, true))
}

/// `φa·φb + φc` rounded once to nearest even, or a zero of its sign where the sum is tiny:
/// [`mul_flushed32`]'s flush.
#[cube]
pub fn fma_flushed32(a: f32, b: f32, c: f32) -> f32 {
    f32::reinterpret(fma_bits(flush(a), flush(b), flush(c), false, true))
}

/// `a·b + c` with two roundings (the bits of [`crate::mul_add_rounded`]): the product from
/// [`mul_rn32`], so no compiler sees a multiply feeding the add.
#[cube]
pub fn mul_add_rounded32(a: f32, b: f32, c: f32) -> f32 {
    mul_rn32(a, b) + c
}

/// `a·b + c` with one rounding to nearest even (the bits of [`crate::fma_rn`]).
#[cube]
pub fn fma_rn32(a: f32, b: f32, c: f32) -> f32 {
    f32::reinterpret(fma_bits(a, b, c, false, false))
}

/// [`fma_rn32`] with halfway cases rounded away from zero: not IEEE's rounding. It exists for
/// the negative fixture that shows the proofs tell a wrong tie from the right one.
#[cube]
pub fn fma_ties_away32(a: f32, b: f32, c: f32) -> f32 {
    f32::reinterpret(fma_bits(a, b, c, true, false))
}

/// The exact product of two 24-bit significands, `hi · 2^24 + lo` with `lo < 2^24`, from
/// 12-bit halves (every partial product fits 32 bits).
#[cube]
fn product24(ma: u32, mb: u32) -> (u32, u32) {
    let (ah, al) = (ma >> 12u32, ma & 0xfffu32);
    let (bh, bl) = (mb >> 12u32, mb & 0xfffu32);
    let mid = ah * bl + al * bh;
    let low = al * bl + ((mid & 0xfffu32) << 12u32);
    (ah * bh + (mid >> 12u32) + (low >> 24u32), low & 0xff_ffffu32)
}

/// The bits of `a · b`; `flush_tiny` gives a zero of its sign where the product is tiny
/// ([`round_to`]).
#[cube]
fn mul_bits(a: f32, b: f32, #[comptime] ties_away: bool, #[comptime] flush_tiny: bool) -> u32 {
    let ua = u32::reinterpret(a);
    let ub = u32::reinterpret(b);
    let sign = (ua ^ ub) & 0x8000_0000u32;
    let (ea, fa) = ((ua >> 23u32) & 0xffu32, ua & 0x7f_ffffu32);
    let (eb, fb) = ((ub >> 23u32) & 0xffu32, ub & 0x7f_ffffu32);
    let nan = (ea == 0xffu32 && fa != 0u32) || (eb == 0xffu32 && fb != 0u32);
    let a_inf = ea == 0xffu32 && fa == 0u32;
    let b_inf = eb == 0xffu32 && fb == 0u32;
    let a_zero = (ua & 0x7fff_ffffu32) == 0u32;
    let b_zero = (ub & 0x7fff_ffffu32) == 0u32;
    if nan || (a_inf && b_zero) || (a_zero && b_inf) {
        0x7fc0_0000u32
    } else if a_inf || b_inf {
        sign | 0x7f80_0000u32
    } else if a_zero || b_zero {
        sign
    } else {
        // P = ma · mb in [2^46, 2^48); keep 24 bits and a guard bit, the rest is sticky.
        let (hi, lo) = product24(significand(ea, fa), significand(eb, fb));
        let big = hi >> 23u32;
        let s = 22u32 + big;
        let g = (hi << (24u32 - s)) | (lo >> s);
        let sticky = (lo & ((1u32 << s) - 1u32)) != 0u32;
        let e = exponent(ea, fa) + exponent(eb, fb) - 127 + i32::cast_from(big);
        round_to(sign, e, g, sticky, ties_away, flush_tiny)
    }
}

/// The bits of `a·b + c`, rounded once. The exact product `P` (48 bits) and `c`'s significand
/// are placed in a 64-bit frame of two words, `X = P · 2^14` and `Y = m_c · 2^38`, both in
/// `[2^60, 2^62)`; the one with the smaller scale is shifted right to the other's, its lost bits
/// jammed into its last bit (sticky); then they are added or subtracted exactly. Jamming is
/// exact for rounding: bits are lost only when the scales differ by more than 14, and then the
/// result keeps at least 59 bits, so its last bit lies far below the rounding position and
/// only says "inexact, on this side".
#[cube]
fn fma_bits(a: f32, b: f32, c: f32, #[comptime] ties_away: bool, #[comptime] flush_tiny: bool) -> u32 {
    let ua = u32::reinterpret(a);
    let ub = u32::reinterpret(b);
    let uc = u32::reinterpret(c);
    let sp = (ua ^ ub) & 0x8000_0000u32;
    let sc = uc & 0x8000_0000u32;
    let (ea, fa) = ((ua >> 23u32) & 0xffu32, ua & 0x7f_ffffu32);
    let (eb, fb) = ((ub >> 23u32) & 0xffu32, ub & 0x7f_ffffu32);
    let (ec, fc) = ((uc >> 23u32) & 0xffu32, uc & 0x7f_ffffu32);
    let nan = (ea == 0xffu32 && fa != 0u32) || (eb == 0xffu32 && fb != 0u32) || (ec == 0xffu32 && fc != 0u32);
    let a_inf = ea == 0xffu32 && fa == 0u32;
    let b_inf = eb == 0xffu32 && fb == 0u32;
    let c_inf = ec == 0xffu32 && fc == 0u32;
    let a_zero = (ua & 0x7fff_ffffu32) == 0u32;
    let b_zero = (ub & 0x7fff_ffffu32) == 0u32;
    let c_zero = (uc & 0x7fff_ffffu32) == 0u32;
    let p_inf = a_inf || b_inf;
    let p_zero = a_zero || b_zero;
    if nan || (a_inf && b_zero) || (a_zero && b_inf) || (p_inf && c_inf && sp != sc) {
        0x7fc0_0000u32
    } else if p_inf {
        sp | 0x7f80_0000u32
    } else if c_inf {
        uc
    } else if p_zero {
        // c + (±0) is c; the sum of two zeros is −0 only when both are.
        select(c_zero, sp & sc, uc)
    } else if c_zero {
        mul_bits(a, b, ties_away, flush_tiny)
    } else {
        let (hi, lo) = product24(significand(ea, fa), significand(eb, fb));
        // The frames' scales: X · 2^sx is the product, Y · 2^sy is c.
        let sx = exponent(ea, fa) + exponent(eb, fb) - 314;
        let sy = exponent(ec, fc) - 188;
        let x_first = sx >= sy;
        let (xh, xl) = shift_right_jam(
            (hi << 6u32) | (lo >> 18u32),
            (lo & 0x3_ffffu32) << 14u32,
            u32::cast_from(select(x_first, 0i32, sy - sx)),
        );
        let (yh, yl) =
            shift_right_jam(significand(ec, fc) << 6u32, 0u32, u32::cast_from(select(x_first, sx - sy, 0i32)));
        let scale = select(x_first, sx, sy);
        // Both terms' magnitudes are below 2^62: their sum fits, and so does their difference,
        // the smaller taken from the larger.
        let sum_l = xl + yl;
        let sum_h = xh + yh + select(sum_l < xl, 1u32, 0u32);
        let x_larger = xh > yh || (xh == yh && xl >= yl);
        let (bh, bl) = (select(x_larger, xh, yh), select(x_larger, xl, yl));
        let (th, tl) = (select(x_larger, yh, xh), select(x_larger, yl, xl));
        let dif_l = bl - tl;
        let dif_h = bh - th - select(bl < tl, 1u32, 0u32);
        let same = sp == sc;
        let rh = select(same, sum_h, dif_h);
        let rl = select(same, sum_l, dif_l);
        let sign = select(same || x_larger, sp, sc);
        if rh == 0u32 && rl == 0u32 {
            // An exact cancellation is +0 when rounding to nearest.
            0u32
        } else {
            // The top bit's position, then 25 bits from it (24 and a guard) and the sticky rest.
            let top = select(rh != 0u32, 63u32 - rh.leading_zeros(), 31u32 - rl.leading_zeros());
            let k = top.max(24u32) - 24u32;
            let (_, low) = shift_right(rh, rl, k.max(1u32));
            let g = select(k == 0u32, rl << (24u32 - top.min(24u32)), low);
            let sticky = k > 0u32 && low_bits_set(rh, rl, k.max(1u32));
            round_to(sign, scale + i32::cast_from(top) + 127, g, sticky, ties_away, flush_tiny)
        }
    }
}

/// `(h, l) >> d` for `0 < d < 64`, as two words.
#[cube]
fn shift_right(h: u32, l: u32, d: u32) -> (u32, u32) {
    let mut rh = 0u32;
    let mut rl = h;
    if d < 32u32 {
        rh = h >> d;
        rl = (l >> d) | (h << (32u32 - d));
    } else if d > 32u32 {
        rl = h >> (d - 32u32);
    }
    (rh, rl)
}

/// Whether any of the lowest `d` bits of `(h, l)` is set, `0 < d < 64`.
#[cube]
fn low_bits_set(h: u32, l: u32, d: u32) -> bool {
    let mut set = l != 0u32;
    if d < 32u32 {
        set = (l & ((1u32 << d) - 1u32)) != 0u32;
    } else if d > 32u32 {
        set = set || (h & ((1u32 << (d - 32u32)) - 1u32)) != 0u32;
    }
    set
}

/// `(h, l) >> d` with the lost bits jammed into the last bit: any `d`.
#[cube]
fn shift_right_jam(h: u32, l: u32, d: u32) -> (u32, u32) {
    let mut rh = h;
    let mut rl = l;
    if d >= 64u32 {
        rh = 0u32;
        rl = select(h != 0u32 || l != 0u32, 1u32, 0u32);
    } else if d > 0u32 {
        let (sh, sl) = shift_right(h, l, d);
        rh = sh;
        rl = sl | select(low_bits_set(h, l, d), 1u32, 0u32);
    }
    (rh, rl)
}

/// Rounds and packs a result: `g` holds 24 significand bits and a guard bit below them, `sticky`
/// whether anything non-zero lies below the guard, `e` the biased exponent. Underflow shifts into
/// a subnormal (collecting sticky bits), overflow gives infinity. A halfway case rounds to even,
/// or away from zero for the negative fixture (`ties_away`). With `flush_tiny`, a tiny result is
/// a zero of its sign: one below 2⁻¹²⁶ once rounded to 24 bits with an unbounded exponent, i.e.
/// below 2⁻¹²⁷ before rounding (`e < 0`), or in `[2⁻¹²⁷, 2⁻¹²⁶)` (`e == 0`) unless its rounding
/// carries into 2⁻¹²⁶.
#[cube]
fn round_to(sign: u32, e: i32, g: u32, sticky: bool, #[comptime] ties_away: bool, #[comptime] flush_tiny: bool) -> u32 {
    let (g_in, sticky_in) = (g, sticky);
    let mut g = g;
    let mut sticky = sticky;
    let mut field = e;
    if e <= 0 {
        let k = u32::cast_from(1 - e);
        if k >= 26u32 {
            sticky = sticky || g != 0u32;
            g = 0u32;
        } else {
            sticky = sticky || (g & ((1u32 << k) - 1u32)) != 0u32;
            g >>= k;
        }
        field = 0;
    }
    let m = g >> 1u32;
    let guard = (g & 1u32) == 1u32;
    let mut up = guard && (sticky || (m & 1u32) == 1u32);
    if comptime!(ties_away) {
        up = guard;
    }
    let mut bits = m + select(up, 1u32, 0u32);
    if field > 0 {
        bits = (u32::cast_from(field - 1) << 23u32) + m + select(up, 1u32, 0u32);
    }
    if field >= 255 {
        bits = 0x7f80_0000u32;
    }
    if comptime!(flush_tiny) {
        // Rounded with an unbounded exponent, a result in [2⁻¹²⁷, 2⁻¹²⁶) reaches 2⁻¹²⁶ only
        // when all 24 bits are ones and it rounds up.
        let up = (g_in & 1u32) == 1u32 && (sticky_in || ((g_in >> 1u32) & 1u32) == 1u32);
        let carries = (g_in >> 1u32) == 0xff_ffffu32 && up;
        bits = select(e < 0 || (e == 0 && !carries), 0u32, bits);
    }
    sign | bits
}
