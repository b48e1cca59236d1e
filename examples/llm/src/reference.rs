//! The forward pass in plain Rust, operation for operation as the kernels' `default`s define it
//! (`mul_add` where a kernel writes `fma`, IEEE `/` and `sqrt` where it calls
//! `island_intrinsics::exact`, [`exp_host`] for `exp`, `dp4a`'s plain-Rust reference). The
//! CPU runtime's logits must equal its logits bit for bit; any kernel that indexes, orders or
//! rounds differently fails that comparison.

use crate::math::{exp_host, flush_host};
use crate::quant::{BLOCK, QuantMatrix, QuantType};
use crate::rope::rope_tables;
use crate::weights::{Config, Model};
use island_examples::q8_matvec::quantize_block;
use island_intrinsics::dp4a::reference as dot4;

/// A sequence on the host.
pub struct Reference<'m> {
    model: &'m Model,
    context: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
    /// Per layer, `context × kv_dim` keys and values.
    kc: Vec<Vec<f32>>,
    vc: Vec<Vec<f32>>,
    pos: usize,
}

/// Activations quantized per block of 32 as the quantizer kernel does: 8 words and a scale a block.
pub fn quantize(x: &[f32]) -> (Vec<i32>, Vec<f32>) {
    let (mut xq, mut xd) = (Vec::with_capacity(x.len() / 4), Vec::with_capacity(x.len() / BLOCK));
    for block in x.chunks_exact(BLOCK) {
        let (d, q) = quantize_block(block);
        xd.push(d);
        xq.extend(q.chunks_exact(4).map(|w| i32::from_le_bytes([w[0] as u8, w[1] as u8, w[2] as u8, w[3] as u8])));
    }
    (xq, xd)
}

/// The definitions' order of a long sum ([`crate::lanes`]): `lanes` partial sums, lane `l`
/// folding terms `l, l + lanes, …` from `+0.0` with `term(acc, i)`, then the partials added
/// pairwise, neighbours first, each partial and each pairwise sum flushed.
pub fn lane_sum(lanes: usize, count: usize, term: impl Fn(f32, usize) -> f32) -> f32 {
    let mut partials: Vec<f32> =
        (0..lanes).map(|l| flush_host((l..count).step_by(lanes).fold(0.0f32, &term))).collect();
    while partials.len() > 1 {
        partials = partials.chunks_exact(2).map(|pair| flush_host(pair[0] + pair[1])).collect();
    }
    partials[0]
}

/// [`crate::kernels::qmatvec`]: `y = W·x` (or `y += W·x`), each row a lane sum of 8 lanes
/// over its blocks.
pub fn matvec(w: &QuantMatrix, x: &[f32], y: &mut [f32], accumulate: bool) {
    matvec_lanes(w, x, y, accumulate, 8);
}

/// [`matvec`] with each row a lane sum of `lanes` lanes (1: one chain over the blocks).
pub fn matvec_lanes(w: &QuantMatrix, x: &[f32], y: &mut [f32], accumulate: bool, lanes: usize) {
    let (xq, xd) = quantize(x);
    for (row, out) in y.iter_mut().enumerate().take(w.rows) {
        let term = |acc: f32, b: usize| {
            let scale = w.scales[b * w.rows + row] * xd[b];
            let xw = &xq[b * 8..b * 8 + 8];
            match w.ty {
                QuantType::Q8_0 => {
                    let sumi = (0..8).fold(0, |s, j| dot4(w.word(row, b, j), xw[j], s));
                    scale.mul_add(sumi as f32, acc)
                }
                QuantType::Q4_1 => {
                    let mut sumi = 0;
                    for j in 0..4 {
                        let word = w.word(row, b, j);
                        sumi = dot4(word & 0x0f0f_0f0f, xw[j], sumi);
                        sumi = dot4((word >> 4) & 0x0f0f_0f0f, xw[j + 4], sumi);
                    }
                    let sumx = xw.iter().fold(0, |s, &v| dot4(0x0101_0101, v, s));
                    let acc = scale.mul_add(sumi as f32, acc);
                    (w.mins[b * w.rows + row] * xd[b]).mul_add(sumx as f32, acc)
                }
            }
        };
        let acc = lane_sum(lanes, w.blocks(), term);
        *out = if accumulate { *out + acc } else { acc };
    }
}

/// [`crate::kernels::rmsnorm`]: the squares a lane sum of 32 lanes.
pub fn rmsnorm(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let ss = lane_sum(32, x.len(), |s, j| x[j].mul_add(x[j], s));
    let inv = 1.0f32 / (ss / x.len() as f32 + eps).sqrt();
    x.iter().zip(w).map(|(&v, &g)| v * inv * g).collect()
}

/// [`crate::kernels::rope_store`] on one pair, rotated by `(c, s)`.
pub fn rope_pair(x0: f32, x1: f32, c: f32, s: f32) -> (f32, f32) {
    (x0.mul_add(c, -(x1 * s)), x0.mul_add(s, x1 * c))
}

/// [`crate::kernels::scores`] of one query head against one key: `(q · k) / 8`, in order.
pub fn score(q: &[f32], k: &[f32]) -> f32 {
    q.iter().zip(k).fold(0.0f32, |a, (&qv, &kv)| qv.mul_add(kv, a)) * 0.125
}

/// [`crate::kernels::softmax`] of one head's scores, in place: the exponentials' sum a lane
/// sum of 32 lanes.
pub fn softmax(s: &mut [f32]) {
    let mx = s[1..].iter().fold(s[0], |a, &b| a.max(b));
    for v in s.iter_mut() {
        *v = exp_host(*v - mx);
    }
    let sum = lane_sum(32, s.len(), |a, j| a + s[j]);
    for v in s.iter_mut() {
        *v /= sum;
    }
}

/// [`crate::kernels::attend`] of one (head, dimension): `Σ_j p[j] · v[j]`, a lane sum of 8
/// lanes over the positions.
pub fn weighted_sum(p: &[f32], v: impl IntoIterator<Item = f32>) -> f32 {
    let v: Vec<f32> = v.into_iter().collect();
    lane_sum(8, p.len().min(v.len()), |a, j| p[j].mul_add(v[j], a))
}

/// [`crate::kernels::swiglu`] of one pair: `(g / (1 + exp(−g))) · u`, subnormal `g`, `u` and
/// result flushed to a zero of their sign.
pub fn swiglu(g: f32, u: f32) -> f32 {
    let g = flush_host(g);
    flush_host(g / (1.0 + exp_host(-g)) * flush_host(u))
}

impl<'m> Reference<'m> {
    pub fn new(model: &'m Model, context: usize) -> Reference<'m> {
        let c = model.config;
        let (cos, sin) = rope_tables(&c, context);
        Reference {
            model,
            context,
            cos,
            sin,
            kc: vec![vec![0.0; context * c.kv_dim()]; c.layers],
            vc: vec![vec![0.0; context * c.kv_dim()]; c.layers],
            pos: 0,
        }
    }

    /// Runs `token` at the next position; with `logits`, returns the next token's logits.
    pub fn step(&mut self, token: u32, logits: bool) -> Option<Vec<f32>> {
        let m = self.model;
        let c: Config = m.config;
        let (hd, kv, half) = (c.head_dim, c.kv_dim(), c.head_dim / 2);
        assert!(self.pos < self.context, "the reference's sequence is full");
        let mut x: Vec<f32> = (0..c.dim).map(|i| m.embedding.weight(token as usize, i)).collect();
        let n = self.pos + 1;
        let group = c.heads / c.kv_heads;
        for (l, layer) in m.layers.iter().enumerate() {
            let h = rmsnorm(&x, &layer.attn_norm, c.eps);
            let mut qkv = vec![0.0; c.dim + 2 * kv];
            matvec(&layer.qkv, &h, &mut qkv, false);
            let mut q = vec![0.0; c.dim];
            for u in 0..(c.dim + kv) / 2 {
                let t = self.pos * half + u % half;
                let (cs, sn) = (self.cos[t], self.sin[t]);
                let (y0, y1) = rope_pair(qkv[2 * u], qkv[2 * u + 1], cs, sn);
                if 2 * u < c.dim {
                    (q[2 * u], q[2 * u + 1]) = (y0, y1);
                } else {
                    let k = self.pos * kv + 2 * u - c.dim;
                    (self.kc[l][k], self.kc[l][k + 1]) = (y0, y1);
                }
            }
            self.vc[l][self.pos * kv..(self.pos + 1) * kv].copy_from_slice(&qkv[c.dim + kv..]);
            let mut att = vec![0.0; c.dim];
            for head in 0..c.heads {
                let k0 = head / group * hd;
                let mut s: Vec<f32> = (0..n)
                    .map(|j| score(&q[head * hd..(head + 1) * hd], &self.kc[l][j * kv + k0..j * kv + k0 + hd]))
                    .collect();
                softmax(&mut s);
                for d in 0..hd {
                    att[head * hd + d] = weighted_sum(&s, (0..n).map(|j| self.vc[l][j * kv + k0 + d]));
                }
            }
            matvec(&layer.out, &att, &mut x, true);
            let h = rmsnorm(&x, &layer.ffn_norm, c.eps);
            let mut gu = vec![0.0; 2 * c.ffn];
            matvec(&layer.gate_up, &h, &mut gu, false);
            let a: Vec<f32> = (0..c.ffn).map(|i| swiglu(gu[i], gu[c.ffn + i])).collect();
            matvec(&layer.down, &a, &mut x, true);
        }
        self.pos += 1;
        logits.then(|| {
            let h = rmsnorm(&x, &m.output_norm, c.eps);
            let mut out = vec![0.0; c.vocab];
            matvec(&m.embedding, &h, &mut out, false);
            out
        })
    }
}
