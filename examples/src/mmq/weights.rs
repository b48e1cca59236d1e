//! MMQ weights in the kernel's layout, imported from GGUF `block_q8_0` / `block_q4_1` bytes.

use super::kernel::{CONFIG, check};
use super::quant::{BLOCK, Quant};
use crate::error::ShapeError;
use half::f16;

/// Weights in the kernel's layout.
#[derive(Clone, Debug)]
pub struct MmqWeights {
    pub quant: Quant,
    pub rows: usize,
    pub cols: usize,
    /// The quants as GGUF stores them, row after row: Q8_0 `cols` bytes a row, Q4_1 `cols / 2`
    /// (16 bytes a block, byte `j` holding values `j` and `j + 16`).
    pub quants: Vec<u8>,
    /// Each block's scale as f32, at [`scale_index`].
    pub scales: Vec<f32>,
    /// Q4_1: each block's minimum as f32, at [`scale_index`]; empty for Q8_0.
    pub mins: Vec<f32>,
}

/// Where row `r` of a 64-row group sits in the scale layout: a tensor-core lane with group id
/// `g` holds rows `g + 8h + 16t` (`h` 0 or 1, `t` its 16-row tile, 0 to 3) and reads their 8
/// scales as two 16-byte words, `2g` and `2g + 1`, element `2(t % 2) + h` of word `2g + t / 2`.
pub const fn row_position(r: usize) -> usize {
    let (tile, h, g) = (r / 16, (r / 8) % 2, r % 8);
    (g * 2 + tile / 2) * 4 + (tile % 2) * 2 + h
}

/// Where column `c` of a 64-column group sits in the activation scale layout: a lane with
/// `t = lane % 4` holds columns `8·j + 2t + e` (`j` its 8-column tile, 0 to 7; `e` 0 or 1) and
/// reads their 16 scales as four words `4t … 4t + 3`, value `v = 2j + e` at element `v % 4` of
/// word `4t + v / 4`.
pub const fn col_position(c: usize) -> usize {
    let (tile, t, e) = (c / 8, (c % 8) / 2, c % 2);
    t * 16 + tile * 2 + e
}

/// The index of block `b`'s scale of row `row` in a matrix of `rows` rows (block-major; rows
/// in groups of 64 in [`row_position`] order).
pub const fn scale_index(rows: usize, row: usize, b: usize) -> usize {
    b * rows + (row / 64) * 64 + row_position(row % 64)
}

/// The index of block `b`'s scale of column `col` of `cols` activation columns.
pub const fn col_scale_index(cols: usize, col: usize, b: usize) -> usize {
    b * cols + (col / 64) * 64 + col_position(col % 64)
}

impl MmqWeights {
    /// Splits GGUF blocks (rows × cols/32 of them, row-major) into the kernel's layout. The
    /// shape must suit the kernel ([`check`] with one tile of tokens).
    pub fn from_gguf(quant: Quant, rows: usize, cols: usize, blocks: &[u8]) -> Result<MmqWeights, ShapeError> {
        check(rows, cols, CONFIG.block_n() as usize)?;
        let per_row = cols / BLOCK;
        let size = quant.gguf_block_bytes();
        if blocks.len() != rows * per_row * size {
            return Err(ShapeError(format!(
                "{rows}×{cols} {} weights are {} bytes, got {}",
                quant.name(),
                rows * per_row * size,
                blocks.len()
            )));
        }
        let mut quants = Vec::with_capacity(rows * per_row * quant.quant_bytes());
        let mut scales = vec![0f32; rows * per_row];
        let mut mins = if quant == Quant::Q4_1 { vec![0f32; rows * per_row] } else { Vec::new() };
        let half = |b: &[u8], at: usize| f16::from_le_bytes([b[at], b[at + 1]]).to_f32();
        for (i, block) in blocks.chunks_exact(size).enumerate() {
            let (row, b) = (i / per_row, i % per_row);
            scales[scale_index(rows, row, b)] = half(block, 0);
            match quant {
                Quant::Q8_0 => quants.extend_from_slice(&block[2..]),
                Quant::Q4_1 => {
                    mins[scale_index(rows, row, b)] = half(block, 2);
                    quants.extend_from_slice(&block[4..]);
                }
            }
        }
        Ok(MmqWeights { quant, rows, cols, quants, scales, mins })
    }

    /// The quant value `j` of row `row` (Q4_1: 0 to 15).
    pub fn quant(&self, row: usize, j: usize) -> i32 {
        match self.quant {
            Quant::Q8_0 => self.quants[row * self.cols + j] as i8 as i32,
            Quant::Q4_1 => {
                let (b, v) = (j / BLOCK, j % BLOCK);
                let byte = self.quants[row * self.cols / 2 + b * 16 + v % 16];
                (if v < 16 { byte & 0xf } else { byte >> 4 }) as i32
            }
        }
    }
}

/// GGUF blocks of random quants with realistic scales (f16 magnitudes from 2⁻⁹ to 2⁻⁵, Q4_1
/// minima of either sign up to 2⁻¹): inputs for benches and checks.
pub fn random_gguf(quant: Quant, rows: usize, cols: usize, rng: &mut island_runtime::inputs::Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows * cols / BLOCK * quant.gguf_block_bytes());
    let scale = |rng: &mut island_runtime::inputs::Rng, top: i32| {
        let exp = top - 4 + rng.below(5) as i32;
        let mantissa = 1.0 + rng.below(1024) as f32 / 1024.0;
        let sign = if quant == Quant::Q4_1 && top == -1 && rng.below(2) == 1 { -1.0 } else { 1.0 };
        f16::from_f32(sign * mantissa * 2f32.powi(exp)).to_le_bytes()
    };
    for _ in 0..rows * cols / BLOCK {
        out.extend_from_slice(&scale(rng, -5));
        if quant == Quant::Q4_1 {
            out.extend_from_slice(&scale(rng, -1));
        }
        out.extend((0..quant.quant_bytes()).map(|_| rng.next_u64() as u8));
    }
    out
}
