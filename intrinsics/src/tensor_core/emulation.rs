//! The sm_90 model of [`crate::tensor_core`] in CubeCL: what the emulations of `mma::tile_f16`
//! and the f16 and bf16 `wgmma`s run on the CPU (and any device) for a profile whose tensor cores
//! the model describes. It computes the same bits as the plain-Rust model
//! ([`crate::tensor_core::FusedDot`]), with integer operations only, so no backend's float
//! rounding or contraction enters.

use crate::tensor_core::{Cut, Format, FusedDot};
use cubecl::prelude::*;
use half::f16;

/// The f16-frame exponent of an f16 given as the bits of its (exact) f32 value: subnormals
/// and zero count at −14, as the hardware's exponent field does.
#[cube]
fn f16_exponent(bits: u32) -> i32 {
    let e = i32::cast_from((bits >> 23) & 0xff) - 127;
    if e < -14 { -14i32 } else { e }
}

/// The 11-bit significand of an f16 given as the bits of its f32 value (0 for zero).
#[cube]
fn f16_significand(bits: u32) -> u32 {
    let field = (bits >> 23) & 0xff;
    let mut sig = 0u32;
    if field != 0 {
        let full = (bits & 0x7f_ffff) | 0x80_0000;
        let e = i32::cast_from(field) - 127;
        if e >= -14 {
            sig = full >> 13;
        } else {
            sig = full >> u32::cast_from(-1i32 - e);
        }
    }
    sig
}

/// The bf16-frame exponent of a bf16 given as the bits of its (exact) f32 value: subnormals and
/// zero count at −126, as for f32.
#[cube]
fn bf16_exponent(bits: u32) -> i32 {
    let e = i32::cast_from((bits >> 23) & 0xff) - 127;
    if e < -126 { -126i32 } else { e }
}

/// The 8-bit significand of a bf16 given as the bits of its f32 value (0 for zero): its f32
/// fraction's top seven bits, with the implicit bit when normal.
#[cube]
fn bf16_significand(bits: u32) -> u32 {
    let field = (bits >> 23) & 0xff;
    let frac = (bits >> 16) & 0x7f;
    if field != 0 { frac | 0x80 } else { frac }
}

/// The bits of an input's f32 value. A bf16's are its own bits shifted up, taken with integer
/// operations: through a float conversion, an optimizer may turn the zero test of a bf16
/// subnormal (an f32 subnormal) into a float comparison that flushes it.
#[cube]
fn input_bits<F: Float>(v: F, #[comptime] format: Format) -> u32 {
    match comptime!(format) {
        Format::F16 => u32::reinterpret(f32::cast_from(v)),
        Format::BF16 => u32::cast_from(u16::reinterpret::<F>(v)) << 16,
    }
}

/// The exponent and the significand of an input of `format`, from the bits of its f32 value.
#[cube]
fn exponent(bits: u32, #[comptime] format: Format) -> i32 {
    match comptime!(format) {
        Format::F16 => f16_exponent(bits),
        Format::BF16 => bf16_exponent(bits),
    }
}

#[cube]
fn significand(bits: u32, #[comptime] format: Format) -> u32 {
    match comptime!(format) {
        Format::F16 => f16_significand(bits),
        Format::BF16 => bf16_significand(bits),
    }
}

/// `sig >> shift` (shift ≥ 1), the dropped bits cut as `model` says.
#[cube]
fn cut(sig: u32, shift: u32, #[comptime] model: FusedDot) -> u32 {
    let mut q = 0u32;
    if shift < 32 {
        q = sig >> shift;
        if comptime!(model.cut == Cut::NearestEven) {
            let r = sig & ((1u32 << shift) - 1);
            let half = 1u32 << (shift - 1);
            if r > half || (r == half && (q & 1) == 1) {
                q += 1;
            }
        }
    }
    q
}

/// One fused step of the model: `c + Σ_{i<16} a[a_at + i] · b[b_at + i·ldb]`, as sm_90's tensor
/// cores add it ([`crate::tensor_core`]): exact products; the largest exponent `E` of the
/// nonzero terms fixes a window whose last bit weighs `2^(E − window)`; each term is cut to it;
/// the cut terms are added exactly (here as separate sums of the positive and the negative
/// ones, each below 2^32) and the sum rounded toward zero.
#[cube]
pub fn fused_dot(a: &[f16], a_at: u32, b: &[f16], b_at: u32, ldb: u32, c: f32, #[comptime] model: FusedDot) -> f32 {
    fused_dot_of::<f16>(a, a_at, b, b_at, ldb, c, Format::F16, model)
}

/// [`fused_dot`] for inputs of `format` (`F` its type): f16 or bf16. A bf16 product's exponent
/// reaches ±252, past f32's range, which integers carry as any other.
#[cube]
#[allow(clippy::manual_abs_diff, clippy::too_many_arguments)] // CubeCL lowers no `abs_diff`
pub fn fused_dot_of<F: Float>(
    a: &[F],
    a_at: u32,
    b: &[F],
    b_at: u32,
    ldb: u32,
    c: f32,
    #[comptime] format: Format,
    #[comptime] model: FusedDot,
) -> f32 {
    // Fraction bits of a product's significand.
    let product_frac = comptime!(2 * format.fraction_bits() as i32);
    let cb = u32::reinterpret(c);
    let c_field = (cb >> 23) & 0xff;
    let c_frac = cb & 0x7f_ffff;
    let c_special = c_field == 0xff;
    let mut nan = c_special && c_frac != 0;
    let mut pos_inf = c_special && c_frac == 0 && (cb >> 31) == 0;
    let mut neg_inf = c_special && c_frac == 0 && (cb >> 31) == 1;
    let c_sig = if c_field == 0 { c_frac } else { c_frac | 0x80_0000 };
    let c_exp = i32::cast_from(if c_field == 0 { 1u32 } else { c_field }) - 127;
    let c_live = !c_special && c_sig != 0;
    let mut e_max = if c_live { c_exp } else { -1000i32 };

    // Pass 1: specials and the largest exponent.
    for i in 0..16u32 {
        let x = input_bits::<F>(a[(a_at + i) as usize], format);
        let y = input_bits::<F>(b[(b_at + i * ldb) as usize], format);
        let x_special = ((x >> 23) & 0xff) == 0xff;
        let y_special = ((y >> 23) & 0xff) == 0xff;
        let x_zero = (x & 0x7fff_ffff) == 0;
        let y_zero = (y & 0x7fff_ffff) == 0;
        let negative = ((x ^ y) >> 31) == 1;
        if (x_special && (x & 0x7f_ffff) != 0) || (y_special && (y & 0x7f_ffff) != 0) {
            nan = true;
        } else if x_special || y_special {
            if x_zero || y_zero {
                nan = true;
            } else if negative {
                neg_inf = true;
            } else {
                pos_inf = true;
            }
        } else if !(x_zero || y_zero) {
            e_max = max(e_max, exponent(x, format) + exponent(y, format));
        }
    }

    let mut bits = 0u32;
    if nan || (pos_inf && neg_inf) {
        bits = 0x7fff_ffffu32;
    } else if pos_inf {
        bits = 0x7f80_0000u32;
    } else if neg_inf {
        bits = 0xff80_0000u32;
    } else if e_max != -1000i32 {
        // Pass 2: cut every term to the window [2^(E − window), …) and add.
        let lsb = e_max - comptime!(model.window as i32);
        let mut pos = 0u32;
        let mut neg = 0u32;
        if c_live {
            // c's last bit weighs 2^(ec − 23).
            let shift = c_exp - 23 - lsb;
            let v = if shift >= 0 { c_sig << u32::cast_from(shift) } else { cut(c_sig, u32::cast_from(-shift), model) };
            if (cb >> 31) == 1 {
                neg += v;
            } else {
                pos += v;
            }
        }
        for i in 0..16u32 {
            let x = input_bits::<F>(a[(a_at + i) as usize], format);
            let y = input_bits::<F>(b[(b_at + i * ldb) as usize], format);
            let sig = significand(x, format) * significand(y, format);
            if sig != 0 {
                // The product's last bit weighs 2^(ea + eb − 20) (f16; − 14 for bf16).
                let shift = exponent(x, format) + exponent(y, format) - product_frac - lsb;
                let v = if shift >= 0 { sig << u32::cast_from(shift) } else { cut(sig, u32::cast_from(-shift), model) };
                if ((x ^ y) >> 31) == 1 {
                    neg += v;
                } else {
                    pos += v;
                }
            }
        }
        let sign = if neg > pos { 0x8000_0000u32 } else { 0u32 };
        let m = if neg > pos { neg - pos } else { pos - neg };
        if m != 0 {
            // Round toward zero to 24 bits (or to 2^-149 below the normal range).
            let lead = lsb + 31 - i32::cast_from(m.leading_zeros());
            let keep = max(lead - 23, -149i32);
            // A bf16 window may lie 32 bits or more below f32's smallest subnormal: then all of
            // it is cut (an f16 window never does).
            let down = keep - lsb;
            let mut sig = 0u32;
            if down < 0 {
                sig = m << u32::cast_from(-down);
            } else if down < 32 {
                sig = m >> u32::cast_from(down);
            }
            if lead > 127 {
                bits = sign | 0x7f80_0000u32;
            } else if lead < -126 {
                bits = sign | sig;
            } else {
                bits = sign | (u32::cast_from(lead + 127) << 23) | (sig & 0x7f_ffff);
            }
        }
    }
    f32::reinterpret(bits)
}
