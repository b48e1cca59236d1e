//! An independent check of correctness, not of consistency: the textbook forward pass in f64
//! on the dequantized weights, without the engine's activation quantization, its operation
//! order or its `exp` (the standard library's). Its logits differ from the engine's by the
//! rounding and quantization the engine's definition adds; [`FloatReference::compare`] reports
//! how far, and whether greedy decoding picks the same token.

use crate::quant::QuantMatrix;
use crate::weights::Model;

/// A sequence in f64.
pub struct FloatReference<'m> {
    model: &'m Model,
    kc: Vec<Vec<f64>>,
    vc: Vec<Vec<f64>>,
    pos: usize,
}

fn matvec(w: &QuantMatrix, x: &[f64]) -> Vec<f64> {
    (0..w.rows).map(|r| (0..w.cols).map(|c| w.weight(r, c) as f64 * x[c]).sum()).collect()
}

fn rmsnorm(x: &[f64], w: &[f32], eps: f32) -> Vec<f64> {
    let inv = 1.0 / (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64 + eps as f64).sqrt();
    x.iter().zip(w).map(|(v, &g)| v * inv * g as f64).collect()
}

/// How one step's logits compare with the float reference's.
#[derive(Clone, Copy, Debug)]
pub struct StepError {
    /// The largest |engine − reference| over the vocabulary.
    pub max_abs: f64,
    /// The reference's largest logit minus its second largest (how decided its choice is).
    pub margin: f64,
    /// Whether both pick the same token.
    pub same_argmax: bool,
}

impl<'m> FloatReference<'m> {
    pub fn new(model: &'m Model) -> FloatReference<'m> {
        let layers = model.config.layers;
        FloatReference { model, kc: vec![Vec::new(); layers], vc: vec![Vec::new(); layers], pos: 0 }
    }

    /// Runs `token` at the next position and returns the next token's logits.
    pub fn step(&mut self, token: u32) -> Vec<f64> {
        let m = self.model;
        let c = m.config;
        let (hd, kv, group) = (c.head_dim, c.kv_dim(), c.heads / c.kv_heads);
        let mut x: Vec<f64> = (0..c.dim).map(|i| m.embedding.weight(token as usize, i) as f64).collect();
        let rope = |v: &mut [f64], pos: usize| {
            for (i, pair) in v.chunks_exact_mut(2).enumerate() {
                let theta = pos as f64 * (c.rope_base as f64).powf(-2.0 * (i % (hd / 2)) as f64 / hd as f64);
                let (s, co) = theta.sin_cos();
                let (a, b) = (pair[0], pair[1]);
                pair[0] = a * co - b * s;
                pair[1] = a * s + b * co;
            }
        };
        for (l, layer) in m.layers.iter().enumerate() {
            let h = rmsnorm(&x, &layer.attn_norm, c.eps);
            let mut qkv = matvec(&layer.qkv, &h);
            rope(&mut qkv[..c.dim + kv], self.pos);
            self.kc[l].extend_from_slice(&qkv[c.dim..c.dim + kv]);
            self.vc[l].extend_from_slice(&qkv[c.dim + kv..]);
            let n = self.pos + 1;
            let mut att = vec![0.0; c.dim];
            for head in 0..c.heads {
                let k0 = head / group * hd;
                let q = &qkv[head * hd..(head + 1) * hd];
                let s: Vec<f64> = (0..n)
                    .map(|j| {
                        q.iter().zip(&self.kc[l][j * kv + k0..j * kv + k0 + hd]).map(|(a, b)| a * b).sum::<f64>()
                            / (hd as f64).sqrt()
                    })
                    .collect();
                let mx = s.iter().cloned().fold(f64::MIN, f64::max);
                let e: Vec<f64> = s.iter().map(|v| (v - mx).exp()).collect();
                let sum: f64 = e.iter().sum();
                for d in 0..hd {
                    att[head * hd + d] = (0..n).map(|j| e[j] / sum * self.vc[l][j * kv + k0 + d]).sum();
                }
            }
            for (xi, o) in x.iter_mut().zip(matvec(&layer.out, &att)) {
                *xi += o;
            }
            let h = rmsnorm(&x, &layer.ffn_norm, c.eps);
            let gu = matvec(&layer.gate_up, &h);
            let a: Vec<f64> = (0..c.ffn).map(|i| gu[i] / (1.0 + (-gu[i]).exp()) * gu[c.ffn + i]).collect();
            for (xi, o) in x.iter_mut().zip(matvec(&layer.down, &a)) {
                *xi += o;
            }
        }
        self.pos += 1;
        matvec(&m.embedding, &rmsnorm(&x, &m.output_norm, c.eps))
    }

    /// `engine`'s logits against the reference's `reference` for one step.
    pub fn compare(engine: &[f32], reference: &[f64]) -> StepError {
        let max_abs = engine.iter().zip(reference).map(|(&a, &b)| (a as f64 - b).abs()).fold(0.0, f64::max);
        let mut order: Vec<usize> = (0..reference.len()).collect();
        order.sort_by(|&a, &b| reference[b].total_cmp(&reference[a]));
        let best = crate::generate::argmax(engine) as usize;
        StepError { max_abs, margin: reference[order[0]] - reference[order[1]], same_argmax: best == order[0] }
    }
}
