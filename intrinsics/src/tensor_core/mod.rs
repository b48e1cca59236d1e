//! The measured arithmetic of a tensor core's float MMA: how one instruction adds the products
//! of its `k` step to the f32 accumulator. Plain Rust, the reference a device is compared with
//! (`islands tensor-core`); [`emulation`] computes the same model in CubeCL for `crate::mma`'s
//! emulation, and
//! [`crate::portable::tile_f16_fused`] defines it portably for every backend.
//!
//! # The model of sm_90 (H100, H200), `HMMA.16816.F32` with f16 or bf16 inputs
//!
//! For each output `d = c + Σ aᵢ·bᵢ` over the instruction's 16 products, as one fused step:
//! 1. every product is exact (an 11×11-bit significand for f16, 8×8 for bf16), with exponent
//!    `ea + eb`; subnormal inputs count at the format's minimum exponent;
//! 2. the largest exponent `E` among the nonzero products (`ea + eb`) and `c` (`ec`; a subnormal
//!    `c` at −126) sets a fixed-point window whose last bit weighs `2^(E − 25)`;
//! 3. every term is cut to that window, **truncated** toward zero (sign and magnitude);
//! 4. the cut terms are added exactly;
//! 5. the sum is rounded **toward zero** to f32 (subnormal results kept, not flushed); a sum
//!    past f32's range is ±∞.
//!
//! Specials: a NaN input, `0·∞` or `∞ − ∞` gives the canonical NaN `0x7fffffff`; an infinite
//! product or `c` gives that infinity. A zero result is +0 whatever the signs of its terms, even
//! when every one is −0 (IEEE addition would give −0 there).
//!
//! Derived from the published characterisations (Fasi, Higham, Mikaitis, Pranesh, *Numerical
//! behavior of NVIDIA tensor cores*, PeerJ CS 2021; Khattak, Mikaitis, *Accurate models of
//! NVIDIA tensor cores*, arXiv 2512.07004) and fitted on an H200: of the variants differing in
//! block size, window width, the exponent frame, alignment and final rounding, this one alone
//! matched all 11.5 million f16 and 3.8 million bf16 outputs of the probe
//! (`docs/results/h200/tensor-core-fit.txt`); the sign of a zero sum came from the first
//! million-tile run of `islands tensor-core`, and the model now matches all 268 million outputs
//! per format of that run (`docs/results/h200/tensor-core.txt`, `docs/design.md` §10).

pub mod cases;
pub mod emulation;
pub mod tiles;

/// The input format of a float MMA.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Format {
    F16,
    BF16,
}

impl Format {
    /// Fraction bits of the format's significand.
    pub const fn fraction_bits(self) -> u32 {
        self.layout().0
    }

    /// Fraction bits and exponent bias.
    const fn layout(self) -> (u32, i32) {
        match self {
            Format::F16 => (10, 15),
            Format::BF16 => (7, 127),
        }
    }
}

/// How bits that fall below the alignment window are dropped.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Cut {
    /// Truncated toward zero: what sm_90 does.
    Truncate,
    /// Rounded to nearest, ties to even: a deliberately wrong model, kept as a fixture.
    NearestEven,
}

/// One fused step of a float MMA: `d = round(c + Σ_{i<16} aᵢ·bᵢ)` (see the module docs).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct FusedDot {
    /// Fraction bits of the window below the largest exponent: the last kept bit weighs
    /// `2^(E − window)`.
    pub window: u32,
    /// How terms are cut to the window.
    pub cut: Cut,
}

impl FusedDot {
    /// sm_90's f16 and bf16 MMA into f32, as measured.
    pub const SM90: FusedDot = FusedDot { window: 25, cut: Cut::Truncate };

    /// The same model with one detail wrong (terms rounded to nearest at alignment instead of
    /// truncated): a fixture any comparison with the device must fail.
    pub const SM90_ROUNDING_AT_ALIGNMENT: FusedDot = FusedDot { window: 25, cut: Cut::NearestEven };

    /// `c + Σ a[i]·b[i]` for 16 inputs of `format` (raw bits) and an f32 accumulator (raw
    /// bits), as raw f32 bits.
    pub fn dot(&self, format: Format, a: &[u16; 16], b: &[u16; 16], c: u32) -> u32 {
        let (fraction, bias) = format.layout();
        let mut nan = false;
        let mut inf: Option<bool> = None;
        let mut note_inf = |negative: bool, nan: &mut bool| match inf {
            Some(s) if s != negative => *nan = true,
            _ => inf = Some(negative),
        };
        // Terms as (negative, significand, exponent of the significand's last bit, exponent).
        let mut terms = [(false, 0u64, 0i32, 0i32); 17];
        let mut count = 0;
        let mut push = |t: (bool, u64, i32, i32)| {
            terms[count] = t;
            count += 1;
        };

        let (c_neg, c_field, c_frac) = (c >> 31 == 1, ((c >> 23) & 0xff) as i32, (c & 0x7f_ffff) as u64);
        match c_field {
            0xff if c_frac != 0 => nan = true,
            0xff => note_inf(c_neg, &mut nan),
            _ => {
                let sig = if c_field == 0 { c_frac } else { c_frac | 1 << 23 };
                let exp = c_field.max(1) - 127;
                push((c_neg, sig, exp - 23, exp));
            }
        }
        let decode = |bits: u16| -> (bool, Option<(u64, i32)>, bool) {
            let neg = bits >> 15 == 1;
            let field = ((bits >> fraction) as i32) & ((1 << (15 - fraction)) - 1);
            let frac = (bits as u64) & ((1 << fraction) - 1);
            let max_field = (1 << (15 - fraction)) - 1;
            if field == max_field {
                // (negative, None, is_nan)
                return (neg, None, frac != 0);
            }
            let sig = if field == 0 { frac } else { frac | 1 << fraction };
            (neg, Some((sig, field.max(1) - bias)), false)
        };
        for i in 0..16 {
            let (an, av, a_nan) = decode(a[i]);
            let (bn, bv, b_nan) = decode(b[i]);
            let neg = an ^ bn;
            match (av, bv) {
                _ if a_nan || b_nan => nan = true,
                (None, None) => note_inf(neg, &mut nan),
                (None, Some((s, _))) | (Some((s, _)), None) => {
                    if s == 0 {
                        nan = true;
                    } else {
                        note_inf(neg, &mut nan);
                    }
                }
                (Some((sa, ea)), Some((sb, eb))) => {
                    let sig = sa * sb;
                    push((neg, sig, ea + eb - 2 * fraction as i32, ea + eb));
                }
            }
        }
        if nan {
            return 0x7fff_ffff;
        }
        if let Some(negative) = inf {
            return if negative { 0xff80_0000 } else { 0x7f80_0000 };
        }

        let terms = &terms[..count];
        let Some(e_max) = terms.iter().filter(|t| t.1 != 0).map(|t| t.3).max() else {
            return 0;
        };
        let lsb = e_max - self.window as i32;
        let mut sum: i128 = 0;
        for &(neg, sig, last, _) in terms {
            if sig == 0 {
                continue;
            }
            let magnitude =
                if last >= lsb { (sig as i128) << (last - lsb) } else { self.cut_right(sig, (lsb - last) as u32) };
            sum += if neg { -magnitude } else { magnitude };
        }
        round_toward_zero(sum, lsb)
    }

    /// `sig >> shift`, the dropped bits cut as the model says.
    fn cut_right(&self, sig: u64, shift: u32) -> i128 {
        if shift >= 64 {
            return 0;
        }
        let q = sig >> shift;
        let r = sig & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let up = match self.cut {
            Cut::Truncate => false,
            Cut::NearestEven => r > half || (r == half && q & 1 == 1),
        };
        (q + up as u64) as i128
    }

    /// `acc (16×16, row-major) += a (16×k) · b (k×16)`, both row-major, one instruction per
    /// 16 of `k` in order, as a sequence of MMA calls on the device computes it.
    pub fn tile(&self, format: Format, a: &[u16], b: &[u16], k: usize, acc: &mut [u32]) {
        assert!(k.is_multiple_of(16) && a.len() >= 16 * k && b.len() >= 16 * k && acc.len() >= 256, "tile shapes");
        for step in 0..k / 16 {
            for row in 0..16 {
                for col in 0..16 {
                    let av: [u16; 16] = std::array::from_fn(|i| a[row * k + step * 16 + i]);
                    let bv: [u16; 16] = std::array::from_fn(|i| b[(step * 16 + i) * 16 + col]);
                    acc[row * 16 + col] = self.dot(format, &av, &bv, acc[row * 16 + col]);
                }
            }
        }
    }
}

/// `sum · 2^lsb` as f32 bits, rounded toward zero; past the range, ±∞; +0 for an exact zero.
fn round_toward_zero(sum: i128, lsb: i32) -> u32 {
    if sum == 0 {
        return 0;
    }
    let sign = if sum < 0 { 0x8000_0000 } else { 0 };
    let m = sum.unsigned_abs();
    let bits = 128 - m.leading_zeros() as i32;
    let lead = lsb + bits - 1;
    if lead > 127 {
        return sign | 0x7f80_0000;
    }
    // The last bit the result keeps: 23 below the leading one, or 2^-149 for subnormals.
    let keep = (lead - 23).max(-149);
    // A bf16 sum's window may lie 128 bits or more below 2^-149: then all of it is cut.
    let sig =
        if keep >= lsb { m.checked_shr((keep - lsb) as u32).unwrap_or(0) } else { m << (lsb - keep) as u32 } as u32;
    if lead < -126 {
        return sign | sig;
    }
    sign | ((lead + 127) as u32) << 23 | (sig & 0x7f_ffff)
}
