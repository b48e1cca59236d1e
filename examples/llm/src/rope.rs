//! RoPE's tables, computed on the host (a table is an input, not a kernel's arithmetic).

use crate::weights::Config;

/// RoPE's table for `context` positions: `cos` and `sin` of `pos · base^(−2i/64)`, computed in
/// f64 on the host and rounded once.
pub fn rope_tables(config: &Config, context: usize) -> (Vec<f32>, Vec<f32>) {
    tables(config.head_dim, config.rope_base, context)
}

/// RoPE's table for heads of `head_dim` values and the base `base` (see [`rope_tables`]).
pub fn tables(head_dim: usize, base: f32, context: usize) -> (Vec<f32>, Vec<f32>) {
    let half = head_dim / 2;
    let mut cos = Vec::with_capacity(context * half);
    let mut sin = Vec::with_capacity(context * half);
    for p in 0..context {
        for i in 0..half {
            let theta = p as f64 * (base as f64).powf(-2.0 * i as f64 / head_dim as f64);
            cos.push(theta.cos() as f32);
            sin.push(theta.sin() as f32);
        }
    }
    (cos, sin)
}
