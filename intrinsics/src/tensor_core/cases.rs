//! The adversarial tile set a tensor-core model is measured on: one 16×16×16 tile (`a`, `b`,
//! `c`) per (seed, class), the same on every machine (SplitMix64, integer construction only).
//!
//! Each class aims at one detail of the model: realistic and wide spreads; cancellation (pairs
//! of products that cancel exactly, and accumulators that cancel the whole sum); the alignment
//! window (an accumulator 2^18–2^30 above the products, so the products straddle its last bit);
//! subnormal inputs and accumulators; signed zeros; infinities and NaNs; arbitrary bits; an
//! accumulator that dominates by a few binades; and sums whose every term is −0 (most outputs
//! of that class), where the sign of a zero result shows.

use super::Format;
use island_runtime::inputs::Rng;

/// The classes, in the order [`tile`] takes them.
pub const CLASSES: &[&str] = &[
    "realistic",
    "wide",
    "cancellation",
    "alignment",
    "subnormal",
    "zeros",
    "specials",
    "bits",
    "dominant",
    "negative_zeros",
];

/// One tile: `a[i·16 + k]`, `b[k·16 + j]` (raw input bits), `c[i·16 + j]` (raw f32 bits).
#[derive(Clone, Debug)]
pub struct Tile {
    pub a: [u16; 256],
    pub b: [u16; 256],
    pub c: [u32; 256],
}

struct Gen<'a> {
    rng: &'a mut Rng,
    fraction: u32,
    exponent: u32,
    bias: i32,
}

impl Gen<'_> {
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + self.rng.below((hi - lo + 1) as u64) as i32
    }

    fn coin(&mut self, percent: u64) -> bool {
        self.rng.below(100) < percent
    }

    /// An input of exponent `e` (clamped to the largest finite; below the normal range it is
    /// subnormal), random fraction, random sign.
    fn input(&mut self, e: i32) -> u16 {
        let neg = self.coin(50);
        let mut frac = (self.rng.next_u64() as u32) & ((1 << self.fraction) - 1);
        let mut field = (e + self.bias).min((1 << self.exponent) - 2);
        if field < 1 {
            let shift = (1 - field) as u32;
            frac = if shift > self.fraction { 0 } else { (frac | 1 << self.fraction) >> shift };
            field = 0;
        }
        ((neg as u16) << 15) | ((field as u16) << self.fraction) | frac as u16
    }

    /// An f32 of exponent `e` (subnormal below −126), random fraction, random sign.
    fn acc(&mut self, e: i32) -> u32 {
        let neg = self.coin(50);
        let mut frac = (self.rng.next_u64() as u32) & 0x7f_ffff;
        let mut field = (e + 127).min(254);
        if field < 1 {
            let shift = (1 - field) as u32;
            frac = if shift > 23 { 0 } else { (frac | 1 << 23) >> shift };
            field = 0;
        }
        (neg as u32) << 31 | (field as u32) << 23 | frac
    }

    fn infinity(&self, negative: bool) -> u16 {
        ((negative as u16) << 15) | ((((1u32 << self.exponent) - 1) << self.fraction) as u16)
    }
}

/// The value of raw input bits (finite ones), exactly, as f64.
fn value(format: Format, bits: u16) -> f64 {
    let (fraction, bias) = format.layout();
    let field = ((bits >> fraction) as i32) & ((1 << (15 - fraction)) - 1);
    let frac = (bits as u64 & ((1 << fraction) - 1)) as f64;
    let v = if field == 0 {
        frac * 2f64.powi(1 - bias - fraction as i32)
    } else {
        (frac + 2f64.powi(fraction as i32)) * 2f64.powi(field - bias - fraction as i32)
    };
    if bits >> 15 == 1 { -v } else { v }
}

/// Tile `seed` of class `class` (an index into [`CLASSES`]) for inputs of `format`.
pub fn tile(format: Format, seed: u64, class: usize) -> Tile {
    let mut rng = Rng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (class as u64) << 56 ^ format as u64);
    let (fraction, bias) = format.layout();
    let mut g = Gen { rng: &mut rng, fraction, exponent: 15 - fraction, bias };
    let min_exp = 1 - bias;
    let mut t = Tile { a: [0; 256], b: [0; 256], c: [0; 256] };
    for i in 0..256 {
        let (a, b, c);
        match CLASSES[class] {
            "realistic" => {
                a = g.range(-4, 2);
                b = g.range(-4, 2);
                let e = g.range(-4, 4);
                c = if g.coin(10) { None } else { Some(e) };
            }
            "wide" => {
                a = g.range(min_exp - 3, bias);
                b = g.range(min_exp - 3, bias);
                c = Some(g.range(-60, 60));
            }
            "cancellation" => {
                a = g.range(-2, 2);
                b = g.range(-2, 2);
                c = Some(g.range(-30, 3));
            }
            "alignment" => {
                a = g.range(-2, 2);
                b = g.range(-2, 2);
                c = Some(g.range(18, 30));
            }
            "subnormal" => {
                a = g.range(min_exp - fraction as i32, min_exp + 2);
                b = g.range(min_exp - fraction as i32, min_exp + 8);
                c = Some(if g.coin(50) { g.range(-149, -120) } else { g.range(-60, -20) });
            }
            "dominant" => {
                a = g.range(-8, 2);
                b = g.range(-8, 2);
                c = Some(g.range(0, 26));
            }
            _ => {
                a = g.range(-3, 3);
                b = g.range(-3, 3);
                c = Some(g.range(-3, 3));
            }
        }
        t.a[i] = g.input(a);
        t.b[i] = g.input(b);
        t.c[i] = match c {
            Some(e) => g.acc(e),
            None => 0,
        };
        match CLASSES[class] {
            "zeros" => {
                if g.coin(50) {
                    t.a[i] &= 0x8000;
                }
                if g.coin(50) {
                    t.b[i] &= 0x8000;
                }
                if g.coin(70) {
                    t.c[i] &= 0x8000_0000;
                }
            }
            "specials" => {
                if g.coin(3) {
                    t.a[i] = g.infinity(t.a[i] >> 15 == 1);
                }
                if g.coin(3) {
                    t.b[i] = g.infinity(t.b[i] >> 15 == 1);
                }
                if g.coin(2) {
                    // A NaN with a payload.
                    t.a[i] = g.infinity(false) | (1 + g.rng.below((1 << fraction) - 1)) as u16;
                }
                if g.coin(3) {
                    t.c[i] = if g.coin(50) { 0x7f80_0000 | (t.c[i] & 0x8000_0000) } else { 0x7fc0_0001 };
                }
            }
            "negative_zeros" => {
                // a = −0 (5 %: +0), b nonzero, positive (10 %: negative), c = −0 (10 %: +0):
                // an output whose column of b is all positive has only −0 terms.
                t.a[i] = if g.coin(5) { 0 } else { 0x8000 };
                t.b[i] &= 0x7fff;
                if t.b[i] == 0 || g.coin(10) {
                    t.b[i] |= 0x8000;
                }
                t.c[i] = if g.coin(10) { 0 } else { 0x8000_0000 };
            }
            "bits" => {
                t.a[i] = g.rng.next_u64() as u16;
                t.b[i] = g.rng.next_u64() as u16;
                t.c[i] = g.rng.next_u64() as u32;
            }
            _ => {}
        }
    }
    if CLASSES[class] == "cancellation" {
        // Half the product pairs cancel exactly along k: a[i][2p+1] = a[i][2p], b[2p+1][j] = −b[2p][j].
        for i in 0..16 {
            for p in 0..8 {
                if (i + p) % 2 == 0 {
                    t.a[i * 16 + 2 * p + 1] = t.a[i * 16 + 2 * p];
                }
            }
        }
        for p in (0..8).step_by(2) {
            for j in 0..16 {
                t.b[(2 * p + 1) * 16 + j] = t.b[2 * p * 16 + j] ^ 0x8000;
            }
        }
        // A third of the accumulators cancel the whole sum (to f32 precision).
        for e in (0..256).step_by(3) {
            let (i, j) = (e / 16, e % 16);
            let s: f64 = (0..16).map(|k| value(format, t.a[i * 16 + k]) * value(format, t.b[k * 16 + j])).sum();
            t.c[e] = (-s as f32).to_bits();
        }
    }
    t
}
