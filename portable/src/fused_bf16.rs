//! sm_90's tensor-core step for bf16 inputs, portably: the model of [`crate::fused_step`] (16
//! exact products and the accumulator cut to a window 25 bits below the largest exponent,
//! truncated, added exactly, rounded toward zero), with bf16's exponent range.
//!
//! A bf16 product's exponent spans −252…+254, far past f32's, so unlike the f16 step no term is
//! formed or scaled in f32: each is an integer significand and an exponent, shifted into the
//! window by integer shifts. Formulated apart from the emulation: the products are added in two's
//! complement and the accumulator joins in sign and magnitude; specials come from the inputs'
//! classes (an IEEE product could overflow where the exact one is finite).

use cubecl::prelude::*;

/// A bf16's bits placed as its f32 value's, by integer operations (through a float conversion an
/// optimizer may test a subnormal against zero as a float, and flush it).
#[cube]
fn f32_bits(v: half::bf16) -> u32 {
    u32::cast_from(u16::reinterpret::<half::bf16>(v)) << 16
}

/// The significand of a bf16 given as its exact f32 value's bits (implicit bit set when normal),
/// and its exponent in its own format (subnormals and zero at −126).
#[cube]
fn bf16_parts(bits: u32) -> (u32, i32) {
    let field = (bits >> 23) & 0xff;
    let fraction = (bits & 0x7f_ffff) >> 16;
    if field == 0 { (fraction, -126i32) } else { (fraction | 0x80, i32::cast_from(field) - 127) }
}

/// `value >> shift` for a shift that may reach 32 or more (then 0): truncation toward zero.
#[cube]
fn shift_right(value: u32, shift: u32) -> u32 {
    if shift >= 32 { 0u32 } else { value >> shift }
}

/// `value · 2^shift` cut to an integer toward zero, for a `shift` of either sign (at most 31).
#[cube]
fn scaled(value: u32, shift: i32) -> u32 {
    if shift >= 0 { value << u32::cast_from(shift) } else { shift_right(value, u32::cast_from(-shift)) }
}

/// One fused step for bf16: `c + Σ_{i<16} a[a_at + i·lda] · b[b_at + i·ldb]` as sm_90's tensor
/// cores add it (see the module docs).
#[cube]
#[allow(clippy::too_many_arguments)]
pub fn fused_step_bf16(a: &[half::bf16], a_at: u32, lda: u32, b: &[half::bf16], b_at: u32, ldb: u32, c: f32) -> f32 {
    let cb = u32::reinterpret(c);
    let c_mag = cb & 0x7fff_ffff;
    let mut nan = c_mag > 0x7f80_0000;
    let mut up = cb == 0x7f80_0000;
    let mut down = cb == 0xff80_0000;
    let mut live = false;
    let mut top = 0i32;
    for i in 0..16u32 {
        let x = f32_bits(a[(a_at + i * lda) as usize]);
        let y = f32_bits(b[(b_at + i * ldb) as usize]);
        let (xm, ym) = (x & 0x7fff_ffff, y & 0x7fff_ffff);
        let negative = (x >> 31) != (y >> 31);
        if xm > 0x7f80_0000 || ym > 0x7f80_0000 {
            nan = true;
        } else if xm == 0x7f80_0000 || ym == 0x7f80_0000 {
            // ∞ · 0 is NaN; ∞ · finite an infinity of the product's sign.
            nan = nan || xm == 0 || ym == 0;
            up = up || !negative;
            down = down || negative;
        } else if xm != 0 && ym != 0 {
            let (_, ex) = bf16_parts(x);
            let (_, ey) = bf16_parts(y);
            top = if live { max(top, ex + ey) } else { ex + ey };
            live = true;
        }
    }
    let mut bits = cb;
    if nan || (up && down) {
        bits = 0x7fff_ffffu32;
    } else if up || down {
        bits = if up { 0x7f80_0000u32 } else { 0xff80_0000u32 };
    } else if !live {
        // No nonzero product: the accumulator as it is; a zero sum is +0, even of −0 terms.
        if c_mag == 0 {
            bits = 0u32;
        }
    } else {
        let c_field = (cb >> 23) & 0xff;
        let c_exp = max(i32::cast_from(c_field) - 127, -126i32);
        let c_sig = if c_field == 0 { cb & 0x7f_ffff } else { (cb & 0x7f_ffff) | 0x80_0000 };
        let e = if c_mag != 0 { max(top, c_exp) } else { top };
        // The window's last bit weighs 2^lsb. A product's last bit weighs 2^(ex + ey − 14), so
        // its shift is at most 11 and its term below 2^27: sixteen of them stay below 2^31.
        let lsb = e - 25;
        let mut s = 0i32;
        for i in 0..16u32 {
            let x = f32_bits(a[(a_at + i * lda) as usize]);
            let y = f32_bits(b[(b_at + i * ldb) as usize]);
            let (sx, ex) = bf16_parts(x);
            let (sy, ey) = bf16_parts(y);
            let t = i32::cast_from(scaled(sx * sy, ex + ey - 14 - lsb));
            if (x >> 31) != (y >> 31) {
                s -= t;
            } else {
                s += t;
            }
        }
        // The accumulator's last bit weighs 2^(ec − 23): its shift is at most 2, its cut below
        // 2^26, and it joins in sign and magnitude.
        let tc = if c_mag != 0 { scaled(c_sig, c_exp - 23 - lsb) } else { 0u32 };
        let c_negative = cb >> 31 == 1;
        let s_negative = s < 0;
        let s_mag = u32::cast_from(if s_negative { -s } else { s });
        let mut negative = s_negative;
        let mut mag = s_mag + tc;
        if (s_negative && !c_negative) || (c_negative && !s_negative) {
            if s_mag >= tc {
                mag = s_mag - tc;
            } else {
                mag = tc - s_mag;
                negative = c_negative;
            }
        }
        bits = 0u32;
        if mag != 0 {
            let mut width = 0u32;
            for i in 0..32u32 {
                if (mag >> i) != 0 {
                    width = i + 1;
                }
            }
            let sign = u32::cast_from(negative) << 31;
            let exp = lsb + i32::cast_from(width) - 1;
            if exp > 127 {
                bits = sign | 0x7f80_0000u32;
            } else if exp >= -126 {
                let sig = if width > 24 { mag >> (width - 24) } else { mag << (24 - width) };
                bits = sign | (u32::cast_from(exp + 127) << 23) | (sig & 0x7f_ffff);
            } else {
                // Below the normal range: the multiple of 2^-149 toward zero.
                bits = sign | scaled(mag, lsb + 149);
            }
        }
    }
    f32::reinterpret(bits)
}
