//! The plain-Rust reference of the Q8_0 matvec: the same operations in the same order as the
//! `default` arms.

use super::kernels::BLOCK;
use super::layout::{Q8Weights, quantize_block, scale_index, word_index};
use crate::rows::{LANES, pairwise_sum};

/// The quantized activations as the quantizer leaves them: four values packed per word
/// (little-endian bytes), eight words a block, and each block's scale.
pub fn quantize_activations(x: &[f32]) -> (Vec<i32>, Vec<f32>) {
    let mut xq = Vec::with_capacity(x.len() / 4);
    let mut xd = Vec::with_capacity(x.len() / BLOCK);
    for block in x.chunks_exact(BLOCK) {
        let (d, q) = quantize_block(block);
        xd.push(d);
        for w in q.chunks_exact(4) {
            xq.push(i32::from_le_bytes([w[0] as u8, w[1] as u8, w[2] as u8, w[3] as u8]));
        }
    }
    (xq, xd)
}

/// The plain-Rust reference: the same operations in the same order as the `default` arms.
pub fn reference(weights: &Q8Weights, x: &[f32]) -> Vec<f32> {
    let blocks_per_row = weights.cols / BLOCK;
    let (xq, xd) = quantize_activations(x);
    (0..weights.rows)
        .map(|row| {
            let lanes: Vec<f32> = (0..LANES as usize)
                .map(|lane| {
                    let mut acc = 0.0f32;
                    for b in (lane..blocks_per_row).step_by(LANES as usize) {
                        let sumi = (0..8).fold(0i32, |s, j| {
                            let w = weights.words[word_index(weights.rows, blocks_per_row, row, b, j)];
                            island_intrinsics::dp4a::reference(w, xq[b * 8 + j], s)
                        });
                        let scale = weights.scales[scale_index(weights.rows, blocks_per_row, row, b)].to_f32() * xd[b];
                        acc = scale.mul_add(sumi as f32, acc);
                    }
                    acc
                })
                .collect();
            pairwise_sum(&lanes)
        })
        .collect()
}
