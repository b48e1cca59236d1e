//! What the examples' checks share (the proofs' example tests, the CLI's `example` and `bench`
//! commands): seeded activations, and the first index where two outputs differ.

use island_runtime::inputs::Rng;

/// `n` activations spread uniformly over [−2, 2), drawn from `rng`.
pub fn floats(n: usize, rng: &mut Rng) -> Vec<f32> {
    (0..n).map(|_| ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 4.0).collect()
}

/// The first index where `a` and `b` differ (the shorter length when only their lengths do).
pub fn first_difference<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// The first index where two float outputs differ in bits (NaN payloads and zero signs count).
pub fn first_bit_difference(a: &[f32], b: &[f32]) -> Option<usize> {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    first_difference(&bits(a), &bits(b))
}
