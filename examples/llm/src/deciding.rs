//! Inputs built to decide: values that reach every rounding and ordering decision of the
//! engine's kernels, for the kernel-level checks and the gate's cells ([`crate::cells`]).

use crate::quant::{QuantError, QuantMatrix, QuantType};
use half::f16;
use island_runtime::inputs::Rng;

/// The draws the inputs are built from.
pub trait Draw {
    /// A uniform value in `[0, 1)`.
    fn unit(&mut self) -> f32;
    /// A random sign and mantissa, exponent within `±binades` of 1.
    fn wide(&mut self, binades: i32) -> f32;
}

impl Draw for Rng {
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    fn wide(&mut self, binades: i32) -> f32 {
        let bits = self.next_u64();
        let e = (bits % (2 * binades as u64 + 1)) as i32 - binades;
        let m = 1.0 + ((bits >> 16) & 0x7f_ffff) as f32 / (1u32 << 23) as f32;
        let s = if bits >> 63 == 1 { -1.0 } else { 1.0 };
        s * m * 2f32.powi(e)
    }
}

/// GGUF blocks of a `rows × cols` matrix: scales over many binades (a few f16 subnormal and
/// negative), quants over their whole range.
pub fn matrix(ty: QuantType, rows: usize, cols: usize, rng: &mut Rng) -> Result<QuantMatrix, QuantError> {
    let mut bytes = Vec::new();
    for i in 0..rows * cols / 32 {
        let scale = |rng: &mut Rng| match i % 13 {
            0 => f16::from_bits(0x0003),
            1 => f16::from_f32(-rng.wide(4)),
            _ => f16::from_f32(rng.wide(6).abs() * 2e-3),
        };
        bytes.extend(scale(rng).to_le_bytes());
        match ty {
            QuantType::Q8_0 => bytes.extend((0..32).map(|j| if j == 0 { 0x80 } else { rng.next_u64() as u8 })),
            QuantType::Q4_1 => {
                bytes.extend(f16::from_f32(rng.wide(3) * 1e-2).to_le_bytes());
                bytes.extend((0..16).map(|_| rng.next_u64() as u8));
            }
        }
    }
    QuantMatrix::from_gguf(ty, rows, cols, &bytes)
}

/// A block whose quantization depends on dividing by the scale, not multiplying by its reciprocal:
/// its maximum fixes `d = amax / 127` (not a power of two), and each other value lies next to a
/// rounding boundary `(k + ½)·d` where `round(x / d)` and `round(x · (1 / d))` differ.
fn reciprocal_block(rng: &mut Rng) -> Vec<f32> {
    let amax = 127.0 * (0.3 + rng.unit());
    let d = amax / 127.0;
    let id = 1.0 / d;
    let mut block = vec![amax];
    for k in 0..4000u32 {
        if block.len() == 32 {
            break;
        }
        let center = ((k % 120) as f32 + 0.5) * d;
        let found = (0..64u32)
            .flat_map(|step| [f32::from_bits(center.to_bits() + step), f32::from_bits(center.to_bits() - step)])
            .find(|x| (x / d).round() != (x * id).round());
        if let Some(x) = found {
            block.push(if k % 2 == 0 { x } else { -x });
        }
    }
    while block.len() < 32 {
        block.push(rng.unit() * amax);
    }
    block
}

/// Activations for the quantizer and the matvec: blocks whose magnitudes differ by many binades
/// (the order of the block sums decides), blocks of exact rounding ties `(k + ½)·d` with `d` a
/// power of two, blocks where dividing by the scale and multiplying by its reciprocal round apart,
/// an all-zero block, −0.0, and one block a million times larger than the rest.
pub fn activations(cols: usize, rng: &mut Rng) -> Vec<f32> {
    (0..cols / 32)
        .flat_map(|b| {
            let block: Vec<f32> = match b % 6 {
                0 => (0..32)
                    .map(|j| if j == 5 { 127.0 * 0.25 } else { ((j as f32 % 40.0) - 20.0 + 0.5) * 0.25 })
                    .collect(),
                1 => vec![0.0; 32],
                2 => (0..32).map(|j| if j % 3 == 0 { -0.0 } else { rng.wide(2) }).collect(),
                3 if b == 3 => (0..32).map(|j| if j == 9 { 3e7 } else { rng.wide(3) * 1e5 }).collect(),
                5 => reciprocal_block(rng),
                _ => {
                    let scale = 2f32.powi((b as i32 * 7) % 40 - 20);
                    (0..32).map(|_| rng.wide(2) * scale).collect()
                }
            };
            block
        })
        .collect()
}

/// SwiGLU's (gate, up) pairs: gates where `exp(−g)` over- and underflows, ±0, subnormal gates
/// (which the definition flushes), and ordinary values; up-projections over twelve binades.
pub fn swiglu_pairs(n: usize, rng: &mut Rng) -> (Vec<f32>, Vec<f32>) {
    let gate: Vec<f32> = (0..n)
        .map(|i| match i % 8 {
            0 => -(90.0 + rng.unit() * 10.0),
            1 => 90.0 + rng.unit() * 10.0,
            2 => {
                if i % 16 == 2 {
                    0.0
                } else {
                    -0.0
                }
            }
            3 => rng.wide(3) * 1e-40,
            _ => rng.wide(4),
        })
        .collect();
    let up: Vec<f32> = (0..n).map(|_| rng.wide(6)).collect();
    (gate, up)
}

/// Attention scores for the softmax, `heads × positions`, by head in turn: a constant row, equal
/// maxima, a spread where `exp` underflows, a masked (−∞) score, a falling row, wide and
/// realistic rows (the pattern repeats every seven heads).
pub fn softmax_scores(heads: usize, positions: usize, rng: &mut Rng) -> Vec<f32> {
    (0..heads * positions)
        .map(|i| {
            let j = i % positions;
            match (i / positions) % 7 {
                0 => 0.75,
                1 => rng.wide(0) * 40.0 - 20.0 * (j % 2) as f32,
                2 if j.is_multiple_of(9) => 12.5,
                2 => rng.unit() * 12.5,
                3 if j == 4 => f32::NEG_INFINITY,
                3 => rng.unit() * 8.0 - 4.0,
                4 => -((j % 64) as f32) * 3.0,
                5 => rng.wide(30),
                _ => rng.unit() * 6.0 - 3.0,
            }
        })
        .collect()
}
