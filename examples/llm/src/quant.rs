//! The two weight formats of the model, GGUF's `block_q8_0` and `block_q4_1`, and the one layout
//! the matvec reads both in.
//!
//! A block holds 32 weights. Q8_0: an f16 scale `d` and 32 signed bytes, `w = d·q`. Q4_1: an f16
//! scale `d`, an f16 minimum `m` and 16 bytes of nibbles (byte `j` holds weight `j` in its low
//! nibble and weight `j + 16` in its high one), `w = d·q + m`.
//!
//! The kernel gives each output row one unit, so the layout is *k-major*: the `v`-th 16-byte
//! vector of block `b` of every row are neighbours, row after row (`(b·V + v)·rows + row`, with
//! `V` vectors a block: 2 for Q8_0, 1 for Q4_1). A plane's 32 units, on 32 consecutive rows,
//! then load 512 contiguous bytes per step. Scales and minima are stored the same way, widened
//! to f32 on the host (exactly), so no backend needs 16-bit float loads.

use half::f16;

/// Weights per quantization block.
pub const BLOCK: usize = 32;

/// The quantization of a weight matrix: a comptime parameter of the one matvec kernel.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum QuantType {
    Q8_0,
    Q4_1,
}

impl QuantType {
    /// Bytes of one GGUF block.
    pub const fn gguf_block_bytes(self) -> usize {
        match self {
            QuantType::Q8_0 => 34,
            QuantType::Q4_1 => 20,
        }
    }

    /// 16-byte vectors of quantized values per block.
    pub const fn vectors(self) -> usize {
        match self {
            QuantType::Q8_0 => 2,
            QuantType::Q4_1 => 1,
        }
    }
}

/// A quantized matrix in the kernel's layout.
#[derive(Clone, Debug)]
pub struct QuantMatrix {
    pub ty: QuantType,
    pub rows: usize,
    pub cols: usize,
    /// `4·V` words per block, k-major (see the module docs).
    pub words: Vec<i32>,
    /// One scale per block, k-major: `b·rows + row`.
    pub scales: Vec<f32>,
    /// One minimum per block (Q4_1), k-major; empty for Q8_0.
    pub mins: Vec<f32>,
}

/// Why weights do not make a [`QuantMatrix`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantError {
    #[error("a {ty:?} matrix needs rows of a multiple of {block} values; got {rows}×{cols}", block = BLOCK)]
    Width { ty: QuantType, rows: usize, cols: usize },
    #[error("{rows}×{cols} {ty:?} weights are {want} bytes, got {got}")]
    Bytes { ty: QuantType, rows: usize, cols: usize, want: usize, got: usize },
    #[error("nothing to stack")]
    NothingToStack,
    #[error("stacked matrices must share their type and width")]
    Unlike,
}

impl QuantMatrix {
    /// Imports `rows × cols` weights of GGUF blocks (row-major, `cols / 32` blocks a row).
    pub fn from_gguf(ty: QuantType, rows: usize, cols: usize, bytes: &[u8]) -> Result<QuantMatrix, QuantError> {
        if rows == 0 || cols == 0 || !cols.is_multiple_of(BLOCK) {
            return Err(QuantError::Width { ty, rows, cols });
        }
        let per_row = cols / BLOCK;
        let want = rows * per_row * ty.gguf_block_bytes();
        if bytes.len() != want {
            return Err(QuantError::Bytes { ty, rows, cols, want, got: bytes.len() });
        }
        let v = ty.vectors();
        let mut words = vec![0i32; rows * per_row * v * 4];
        let mut scales = vec![0f32; rows * per_row];
        let mut mins = if ty == QuantType::Q4_1 { vec![0f32; rows * per_row] } else { Vec::new() };
        for (i, block) in bytes.chunks_exact(ty.gguf_block_bytes()).enumerate() {
            let (row, b) = (i / per_row, i % per_row);
            let half = |at: usize| f16::from_le_bytes([block[at], block[at + 1]]).to_f32();
            scales[b * rows + row] = half(0);
            let quants = match ty {
                QuantType::Q8_0 => &block[2..],
                QuantType::Q4_1 => {
                    mins[b * rows + row] = half(2);
                    &block[4..]
                }
            };
            for (j, w) in quants.chunks_exact(4).enumerate() {
                let vector = (b * v + j / 4) * rows + row;
                words[vector * 4 + j % 4] = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            }
        }
        Ok(QuantMatrix { ty, rows, cols, words, scales, mins })
    }

    /// Blocks per row.
    pub fn blocks(&self) -> usize {
        self.cols / BLOCK
    }

    /// Stacks matrices of one type and width into one (their rows in order): the q, k and v
    /// projections become one matvec, and so do the gate and up projections.
    pub fn stack(parts: &[&QuantMatrix]) -> Result<QuantMatrix, QuantError> {
        let first = parts.first().ok_or(QuantError::NothingToStack)?;
        if parts.iter().any(|p| p.ty != first.ty || p.cols != first.cols) {
            return Err(QuantError::Unlike);
        }
        let rows: usize = parts.iter().map(|p| p.rows).sum();
        let (blocks, v) = (first.blocks(), first.ty.vectors());
        let mut out = QuantMatrix {
            ty: first.ty,
            rows,
            cols: first.cols,
            words: Vec::with_capacity(rows * blocks * v * 4),
            scales: Vec::with_capacity(rows * blocks),
            mins: Vec::new(),
        };
        for k in 0..blocks * v {
            for p in parts {
                out.words.extend_from_slice(&p.words[k * p.rows * 4..(k + 1) * p.rows * 4]);
            }
        }
        for b in 0..blocks {
            for p in parts {
                out.scales.extend_from_slice(&p.scales[b * p.rows..(b + 1) * p.rows]);
                if first.ty == QuantType::Q4_1 {
                    out.mins.extend_from_slice(&p.mins[b * p.rows..(b + 1) * p.rows]);
                }
            }
        }
        Ok(out)
    }

    /// Word `j` (0 ≤ j < 4·V) of block `b` of `row`.
    pub fn word(&self, row: usize, b: usize, j: usize) -> i32 {
        self.words[((b * self.ty.vectors() + j / 4) * self.rows + row) * 4 + j % 4]
    }

    /// The dequantized weight at (`row`, `col`), in f32 (for references and the embedding).
    pub fn weight(&self, row: usize, col: usize) -> f32 {
        let (b, k) = (col / BLOCK, col % BLOCK);
        let d = self.scales[b * self.rows + row];
        match self.ty {
            QuantType::Q8_0 => d * f32::from(self.word(row, b, k / 4).to_le_bytes()[k % 4] as i8),
            QuantType::Q4_1 => {
                let byte = self.word(row, b, (k % 16) / 4).to_le_bytes()[k % 4];
                let q = if k < 16 { byte & 0xf } else { byte >> 4 };
                d.mul_add(f32::from(q), self.mins[b * self.rows + row])
            }
        }
    }
}
