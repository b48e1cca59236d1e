//! The plain-Rust reference: the definition in `mod.rs`, written with Rust's IEEE operations
//! (`mul_add` is the once-rounded `fma`). Columns are split over the host's cores.

use super::quant::{BLOCK, Quant};
use super::weights::{MmqWeights, scale_index};
use crate::q8_matvec::quantize_block;
use island_intrinsics::portable::{fma_flushed_host, mul_flushed_host};

/// One activation column quantized to Q8_1: quants, and per block `d` and `s = d·Σq`.
pub struct Q8_1Column {
    pub q: Vec<i8>,
    pub d: Vec<f32>,
    pub s: Vec<f32>,
}

/// The quantizer's definition on one column of `k` values.
pub fn quantize_column(x: &[f32]) -> Q8_1Column {
    let mut out = Q8_1Column { q: Vec::with_capacity(x.len()), d: Vec::new(), s: Vec::new() };
    for block in x.chunks_exact(BLOCK) {
        let (d, q) = quantize_block(block);
        let sum: i32 = q.iter().map(|&v| v as i32).sum();
        out.q.extend_from_slice(&q);
        out.d.push(d);
        out.s.push(d * sum as f32);
    }
    out
}

/// `y[j·m + i]` for the `n` columns of `x` (each `k` values).
pub fn reference(w: &MmqWeights, x: &[f32], n: usize) -> Vec<f32> {
    let (m, k) = (w.rows, w.cols);
    let blocks = k / BLOCK;
    // The weights' quants and scales unpacked once, row-major.
    let wq: Vec<i32> = (0..m * k).map(|i| w.quant(i / k, i % k)).collect();
    let at = |v: &[f32], row: usize, b: usize| v[scale_index(m, row, b)];
    let mut y = vec![0f32; m * n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(n.max(1));
    let per = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (chunk, out) in y.chunks_mut(per * m).enumerate() {
            let wq = &wq;
            s.spawn(move || {
                for (c, col) in out.chunks_mut(m).enumerate() {
                    let j = chunk * per + c;
                    let xc = quantize_column(&x[j * k..(j + 1) * k]);
                    for (i, yi) in col.iter_mut().enumerate() {
                        let mut acc = 0.0f32;
                        for b in 0..blocks {
                            let sumi: i32 =
                                (0..BLOCK).map(|t| wq[i * k + b * BLOCK + t] * xc.q[b * BLOCK + t] as i32).sum();
                            let d = mul_flushed_host(at(&w.scales, i, b), xc.d[b]);
                            acc = fma_flushed_host(d, sumi as f32, acc);
                            if w.quant == Quant::Q4_1 {
                                acc = fma_flushed_host(at(&w.mins, i, b), xc.s[b], acc);
                            }
                        }
                        *yi = acc;
                    }
                }
            });
        }
    });
    y
}
