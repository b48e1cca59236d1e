//! Q8_0 weights in the kernel's layout, and their import from GGUF `block_q8_0`.

use super::kernels::BLOCK;
use crate::error::ShapeError;
use half::f16;

/// Q8_0 weights in the kernel's layout.
#[derive(Clone, Debug)]
pub struct Q8Weights {
    pub rows: usize,
    pub cols: usize,
    /// 8 words per block, group-major: a row's blocks come in groups of 32 (the last may be
    /// shorter), and group `g` of every row is stored before group `g + 1` of any, rows in
    /// order. Within a row's group, first the low 16 bytes of each block, then the high 16
    /// bytes, so that 32 lanes reading one half each read 512 contiguous bytes, and the planes
    /// of a cube, on neighbouring rows, read neighbouring stretches. See [`word_index`].
    pub words: Vec<i32>,
    /// One scale per block, group-major like the words. See [`scale_index`].
    pub scales: Vec<f16>,
}

/// Bytes of one GGUF `block_q8_0`: an f16 scale, then 32 signed bytes.
pub const GGUF_BLOCK_BYTES: usize = 34;

impl Q8Weights {
    /// Splits GGUF `block_q8_0` bytes (rows × cols/32 blocks) into the kernel's layout.
    pub fn from_gguf(rows: usize, cols: usize, blocks: &[u8]) -> Result<Q8Weights, ShapeError> {
        check_shape(rows, cols)?;
        let n = rows * cols / BLOCK;
        if blocks.len() != n * GGUF_BLOCK_BYTES {
            return Err(ShapeError(format!(
                "{rows}×{cols} Q8_0 weights are {} bytes, got {}",
                n * GGUF_BLOCK_BYTES,
                blocks.len()
            )));
        }
        let mut words = vec![0i32; n * 8];
        let mut scales = vec![f16::ZERO; n];
        let per_row = cols / BLOCK;
        for (i, block) in blocks.chunks_exact(GGUF_BLOCK_BYTES).enumerate() {
            let (row, b) = (i / per_row, i % per_row);
            scales[scale_index(rows, per_row, row, b)] = f16::from_le_bytes([block[0], block[1]]);
            for (j, w) in block[2..].chunks_exact(4).enumerate() {
                words[word_index(rows, per_row, row, b, j)] = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            }
        }
        Ok(Q8Weights { rows, cols, words, scales })
    }

    /// Quantizes f32 weights to GGUF `block_q8_0` bytes (as llama.cpp's `quantize_row_q8_0`).
    pub fn quantize_gguf(rows: usize, cols: usize, w: &[f32]) -> Result<Vec<u8>, ShapeError> {
        check_shape(rows, cols)?;
        let mut out = Vec::with_capacity(rows * cols / BLOCK * GGUF_BLOCK_BYTES);
        for block in w.chunks_exact(BLOCK) {
            let (d, q) = quantize_block(block);
            out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
            out.extend(q.iter().map(|&v| v as u8));
        }
        Ok(out)
    }
}

/// Where word `j` (0..8) of block `block` of row `row` lives in [`Q8Weights::words`], for a
/// matrix of `rows` rows of `per_row` blocks.
pub fn word_index(rows: usize, per_row: usize, row: usize, block: usize, j: usize) -> usize {
    let (group, size) = group_of(per_row, block);
    let vector = group * 64 * rows + (row * 2 + j / 4) * size + block % 32;
    vector * 4 + j % 4
}

/// Where the scale of block `block` of row `row` lives in [`Q8Weights::scales`].
pub fn scale_index(rows: usize, per_row: usize, row: usize, block: usize) -> usize {
    let (group, size) = group_of(per_row, block);
    group * 32 * rows + row * size + block % 32
}

/// The group of 32 blocks that `block` belongs to in a row of `per_row` blocks, and that
/// group's size (32, or less for the last).
fn group_of(per_row: usize, block: usize) -> (usize, usize) {
    let group = block / 32;
    (group, 32.min(per_row - group * 32))
}

/// A Q8_0 matrix's shape error, if any: rows × cols with whole blocks per row.
pub(crate) fn check_shape(rows: usize, cols: usize) -> Result<(), ShapeError> {
    if rows == 0 || cols == 0 || !cols.is_multiple_of(BLOCK) {
        return Err(ShapeError(format!(
            "Q8_0 needs a non-empty matrix whose row length is a multiple of {BLOCK}; got {rows}×{cols}"
        )));
    }
    Ok(())
}

/// llama.cpp's block quantization: `d = amax / 127`, `q = roundf(x / d)` (0 when amax is 0).
pub fn quantize_block(x: &[f32]) -> (f32, [i8; BLOCK]) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let mut q = [0i8; BLOCK];
    if amax != 0.0 {
        for (qi, &xi) in q.iter_mut().zip(x) {
            *qi = (xi / d).round() as i8;
        }
    }
    (d, q)
}
