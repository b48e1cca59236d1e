//! The inputs a proof draws: each cube holds one [`Group`] of values per parameter (the edge
//! groups of its kind first, then realistic and wide random ones), drawn from a seeded [`Rng`].

use crate::values::value::{ValueKind, mask};
use serde::Serialize;

/// A small, fixed, well-known generator (SplitMix64): a seed replays the same inputs on every
/// platform and every version of this crate.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Mixes a name into a seed, so every (island, arm) gets its own reproducible stream.
pub fn seed_for(base: u64, name: &str) -> u64 {
    // FNV-1a over the name, folded into the base through one SplitMix step.
    Rng::new(base ^ crate::values::hash::fnv1a(name.as_bytes())).next_u64()
}

/// What the inputs of one cube of a proof hold. A cube is the unit of every reduction an island
/// can perform (a plane, a tile, a shared-memory tree), so each group decides the compared
/// result on its own: an edge case is never drowned by a NaN or an infinity next to it, and a
/// random group has values close enough in magnitude for the order of additions to show.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// The kind's finite edge values cycled, rotated per input (floats: ±0, subnormals, the
    /// smallest normal, MAX once per cube, ±1; integers: MIN, MAX, 0, ±1, packed-byte patterns).
    Edges,
    /// Every value −0.0 (in later inputs every other value): a result must keep the sign of zero.
    NegZeros,
    /// +0.0 and −0.0 at random (in later inputs every other value).
    SignedZeros,
    /// Small subnormals of both signs, whose sums stay subnormal: flushing shows.
    Subnormals,
    /// One value in four of the largest finite binade, in pairs `v, −v`, the rest realistic:
    /// whether a sum overflows depends on its order.
    Overflow,
    /// Pairs `x, −x` side by side (in a later square-matrix input: rows repeated in pairs, so
    /// products cancel along `k`): exact cancellation to +0 in the defining order, a residue in
    /// most others.
    Cancellation,
    /// One value `B` in four, the rest exactly half an ulp of `B`: rounding ties.
    Halfway,
    /// NaNs only, quiet and signalling, with payloads: a NaN must stay a NaN.
    NaNs,
    /// One ±inf in sixteen values, a zero where the previous input has its infinity, the rest
    /// finite.
    Infinities,
    /// Arbitrary bit patterns.
    Arbitrary,
    /// Random sign and mantissa, exponents within ±3 binades of 1: realistic data, rounding
    /// in every operation.
    Realistic,
    /// Random sign and mantissa over ±30 binades (±13 for f16).
    Wide,
    /// Integers: MIN, MAX, their neighbours, −1, and (32-bit) every byte at `i8::MIN`/`i8::MAX`.
    Extremes,
    /// Integers: uniform over the type.
    Random,
    /// Integers: −8..=8.
    Small,
}

impl Group {
    /// The edge groups of a float input, in cube order.
    pub const FLOAT_EDGES: &[Group] = &[
        Group::Edges,
        Group::NegZeros,
        Group::SignedZeros,
        Group::Subnormals,
        Group::Overflow,
        Group::Cancellation,
        Group::Halfway,
        Group::NaNs,
        Group::Infinities,
        Group::Arbitrary,
    ];
    /// Every group a float input is drawn from: the edge groups, then the random ones.
    pub const FLOAT: &[Group] = &[
        Group::Edges,
        Group::NegZeros,
        Group::SignedZeros,
        Group::Subnormals,
        Group::Overflow,
        Group::Cancellation,
        Group::Halfway,
        Group::NaNs,
        Group::Infinities,
        Group::Arbitrary,
        Group::Realistic,
        Group::Wide,
    ];
    /// The edge groups of an integer input, in cube order.
    pub const INT_EDGES: &[Group] = &[Group::Edges, Group::Extremes];

    /// The group's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Group::Edges => "edge values",
            Group::NegZeros => "all -0.0",
            Group::SignedZeros => "±0.0",
            Group::Subnormals => "subnormals",
            Group::Overflow => "near MAX, both signs",
            Group::Cancellation => "x, -x pairs",
            Group::Halfway => "rounding ties",
            Group::NaNs => "NaNs with payloads",
            Group::Infinities => "±inf and finite",
            Group::Arbitrary => "arbitrary bits",
            Group::Realistic => "random, ±3 binades",
            Group::Wide => "random, wide",
            Group::Extremes => "MIN/MAX extremes",
            Group::Random => "random",
            Group::Small => "small integers",
        }
    }
}

impl ValueKind {
    /// The edge values of the type, as raw bits ([`Group::Edges`] cycles the finite ones).
    ///
    /// Integers: MIN, MAX, 0, ±1, and for 32-bit words the packed-byte patterns that break
    /// byte unpacking (every byte `i8::MIN`, every byte `i8::MAX`, mixed signs). Floats: ±0,
    /// ±inf, quiet and signalling NaNs with payloads, the smallest and largest subnormals,
    /// the smallest normal, MAX, ±1, in that order for every float kind.
    pub fn edges(self) -> Vec<u64> {
        match self {
            ValueKind::I8 => [i8::MIN, i8::MAX, 0, -1, 1, -127].map(|v| v as u8 as u64).to_vec(),
            ValueKind::U8 => vec![0, 0xff, 1, 0x7f, 0x80],
            ValueKind::I16 => [i16::MIN, i16::MAX, 0, -1, 1].map(|v| v as u16 as u64).to_vec(),
            ValueKind::U16 => vec![0, 0xffff, 1, 0x7fff, 0x8000],
            ValueKind::I32 | ValueKind::U32 => vec![
                0x8000_0000, // i32::MIN
                0x7fff_ffff, // i32::MAX
                0,
                0xffff_ffff, // -1: every byte -1
                1,
                0x8080_8080, // every byte i8::MIN
                0x7f7f_7f7f, // every byte i8::MAX
                0x807f_80ff, // mixed signs
                0x0180_7f01,
            ],
            ValueKind::I64 | ValueKind::U64 => vec![1 << 63, (1 << 63) - 1, 0, u64::MAX, 1],
            ValueKind::F16 => vec![
                0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7e2a, 0xfd55, 0x0001, 0x03ff, 0x0400, 0x7bff, 0x3c00, 0xbc00,
            ],
            ValueKind::BF16 => vec![
                0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7fc5, 0xff81, 0x0001, 0x007f, 0x0080, 0x7f7f, 0x3f80, 0xbf80,
            ],
            ValueKind::F32 => vec![
                0x0000_0000, // +0
                0x8000_0000, // -0
                0x7f80_0000, // +inf
                0xff80_0000, // -inf
                0x7fc0_0000, // canonical quiet NaN
                0x7fc1_2345, // quiet NaN with payload
                0xffa0_0001, // negative signalling NaN with payload
                0x0000_0001, // smallest subnormal
                0x807f_ffff, // largest negative subnormal
                0x0080_0000, // smallest normal
                0x7f7f_ffff, // MAX
                0x3f80_0000, // 1
                0xbf80_0000, // -1
            ],
            ValueKind::F64 => vec![
                0,
                1 << 63,
                0x7ff0_0000_0000_0000,
                0xfff0_0000_0000_0000,
                0x7ff8_0000_0000_0000,
                0x7ff8_0000_dead_beef,
                0xfff0_0000_0000_0001,
                1,
                0x800f_ffff_ffff_ffff,
                0x0010_0000_0000_0000,
                0x7fef_ffff_ffff_ffff,
                0x3ff0_0000_0000_0000,
                0xbff0_0000_0000_0000,
            ],
        }
    }

    /// How many cubes a run of `depth` needs for this kind: one per edge group, then `8 · depth`
    /// realistic and `2 · depth` wide (or small) random groups, in the order [`ValueKind::group_at`]
    /// hands them out.
    pub fn group_count(self, depth: u32) -> usize {
        let edges = if self.is_float() { Group::FLOAT_EDGES.len() } else { Group::INT_EDGES.len() };
        edges + 10 * depth.max(1) as usize
    }

    /// The group of this kind that cube `cube` of a proof holds, when the proof draws
    /// `edge_cubes` cubes of edge groups (the most any of its inputs has) and then random ones:
    /// inputs of different kinds agree on which cubes are random.
    pub fn group_at(self, cube: usize, edge_cubes: usize) -> Group {
        let edges = if self.is_float() { Group::FLOAT_EDGES } else { Group::INT_EDGES };
        let random = |i: usize| match (self.is_float(), i % 5 == 4) {
            (true, false) => Group::Realistic,
            (true, true) => Group::Wide,
            (false, false) => Group::Random,
            (false, true) => Group::Small,
        };
        match cube {
            c if c < edges.len() => edges[c],
            c if c < edge_cubes => random(c),
            c => random(c - edge_cubes),
        }
    }

    /// `n` values of `group` as little-endian bytes. `phase` (the input's position) rotates
    /// the edge values, so that the inputs of a lane-wise island pair different edges.
    ///
    /// [`Group::Cancellation`] pairs values so that they cancel along a reduction: the first
    /// input holds `x, −x` side by side; a later input that is a square matrix (`n = s²`,
    /// row-major) repeats each even row in the next one, so that with the first input as
    /// `a` and this one as `b`, the products `a[r][k]·b[k][c]` cancel in pairs along `k`.
    pub fn fill(self, group: Group, n: usize, phase: usize, rng: &mut Rng) -> Vec<u8> {
        let mut values: Vec<u64> = (0..n).map(|i| self.value_in(group, i, phase, rng)).collect();
        if let (Some((e, m)), Group::Overflow) = (self.float_format(), group) {
            for i in (4..n).step_by(8) {
                values[i] = values[i - 4] ^ (1u64 << (e + m));
            }
        }
        if let (Some((e, m)), Group::Cancellation) = (self.float_format(), group) {
            let side = n.isqrt();
            if phase > 0 && side >= 4 && side * side == n {
                for i in 0..n {
                    if (i / side) % 2 == 1 {
                        values[i] = values[i - side];
                    }
                }
            } else {
                for i in (1..n).step_by(2) {
                    values[i] = values[i - 1] ^ (1u64 << (e + m));
                }
            }
        }
        values.into_iter().flat_map(|bits| bits.to_le_bytes().into_iter().take(self.size())).collect()
    }

    /// Value `i` of a group, as raw bits.
    fn value_in(self, group: Group, i: usize, phase: usize, rng: &mut Rng) -> u64 {
        let Some((e, m)) = self.float_format() else {
            return self.int_value_in(group, i, phase, rng);
        };
        let bias = (1u64 << (e - 1)) - 1;
        let max_exp = (1u64 << e) - 1;
        let mantissa = |rng: &mut Rng| rng.next_u64() & ((1u64 << m) - 1);
        let sign = |rng: &mut Rng| rng.below(2) == 1;
        let make = |neg: bool, exp: u64, mant: u64| ((neg as u64) << (e + m)) | (exp << m) | mant;
        // A normal number of random sign and mantissa, its exponent within `spread` of 1.0.
        let normal = |rng: &mut Rng, spread: u64| {
            let exp = bias - spread + rng.below(2 * spread + 1);
            make(sign(rng), exp, mantissa(rng))
        };
        match group {
            Group::Edges => {
                let edges: Vec<u64> = self.edges().into_iter().filter(|&b| self.is_finite(b)).collect();
                let at = (i + phase * (i / edges.len() + 1)) % edges.len();
                // MAX once per cube (in the first cycle): two of them in one sum overflow it,
                // and every lane of the reduction would compare only infinities.
                let max = make(false, max_exp - 1, (1u64 << m) - 1);
                if edges[at] == max && i >= edges.len() { edges[(at + 1) % edges.len()] } else { edges[at] }
            }
            // In a later input, every other value is a normal number: a lane-wise island of two
            // zero inputs would give only NaNs (0 / 0) and compare nothing.
            Group::NegZeros | Group::SignedZeros if phase > 0 && i % 2 == 1 => normal(rng, 3),
            Group::NegZeros => make(true, 0, 0),
            Group::SignedZeros => make(sign(rng), 0, 0),
            Group::Subnormals => {
                // Small enough that a sum over a whole cube stays subnormal.
                let top = (1u64 << m).div_ceil(64).max(2);
                make(sign(rng), 0, 1 + rng.below(top - 1))
            }
            // One value in four of the largest binade, the rest realistic: the big ones come in
            // pairs v, −v (the partner is made by `fill`), so a sum that meets each v with its
            // −v first is finite and one that adds two vs first overflows: whether a sum
            // overflows depends on its order. Every input holds them in the same positions, so
            // lane-wise products of two overflow.
            Group::Overflow if i.is_multiple_of(4) => make(false, max_exp - 1, mantissa(rng)),
            Group::Overflow => normal(rng, 3),
            // The partner of each value (x, -x) is made by `fill`.
            Group::Cancellation => normal(rng, 3),
            Group::Halfway => {
                // One value B in four, the rest exactly half an ulp of B: every B + half is a
                // rounding tie, and the sum depends on the order of the additions.
                let exp = bias + rng.below(3);
                if i.is_multiple_of(4) { make(false, exp, 0) } else { make(false, exp - u64::from(m) - 1, 0) }
            }
            Group::NaNs => make(sign(rng), max_exp, 1 + rng.below((1u64 << m) - 1)),
            // One infinity of random sign in sixteen values, shifted by one per input; each input
            // holds a zero where the previous input holds its infinity (inf · 0 in lane-wise
            // products), the rest normal: a sum over a plane meets two, and is ±inf or NaN.
            Group::Infinities => match (i + phase) % 16 {
                0 => make(sign(rng), max_exp, 0),
                1 => make(sign(rng), 0, 0),
                _ => normal(rng, 3),
            },
            Group::Realistic => normal(rng, 3),
            Group::Wide => normal(rng, (bias - 2).min(30)),
            Group::Arbitrary | Group::Random => rng.next_u64() & mask(self.size()),
            Group::Extremes | Group::Small => self.int_value_in(group, i, phase, rng),
        }
    }

    fn int_value_in(self, group: Group, i: usize, phase: usize, rng: &mut Rng) -> u64 {
        let size = self.size();
        let bits = 8 * size as u32;
        let signed = matches!(self, ValueKind::I8 | ValueKind::I16 | ValueKind::I32 | ValueKind::I64);
        let (min, max) = if signed { (1u64 << (bits - 1), mask(size) >> 1) } else { (0, mask(size)) };
        match group {
            Group::Edges => {
                let edges = self.edges();
                edges[(i + phase * (i / edges.len() + 1)) % edges.len()]
            }
            Group::Extremes => {
                let mut choices = vec![min, max, min.wrapping_add(1) & mask(size), max.wrapping_sub(1), mask(size)];
                if size == 4 {
                    // Every byte i8::MIN or i8::MAX: products of packed bytes at their extremes.
                    choices.extend([0x8080_8080, 0x7f7f_7f7f, 0x8181_8181]);
                }
                // The first values are the choices in order, in every input: each extreme meets
                // itself in one lane (dp4a(0x80808080, 0x80808080)); then at random.
                if i < choices.len() { choices[i] } else { choices[rng.below(choices.len() as u64) as usize] }
            }
            Group::Small => (rng.below(17) as i64 - 8) as u64 & mask(size),
            _ => rng.next_u64() & mask(size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::value::*;

    #[test]
    fn the_float_groups_are_the_edge_groups_then_the_random_ones() {
        assert_eq!(&Group::FLOAT[..Group::FLOAT_EDGES.len()], Group::FLOAT_EDGES);
        assert_eq!(&Group::FLOAT[Group::FLOAT_EDGES.len()..], &[Group::Realistic, Group::Wide]);
    }

    #[test]
    fn groups_replay_and_random_groups_follow_the_seed() {
        let a = ValueKind::I32.fill(Group::Edges, 64, 0, &mut Rng::new(7));
        assert_eq!(a, ValueKind::I32.fill(Group::Edges, 64, 0, &mut Rng::new(7)));
        assert_eq!(ValueKind::I32.bits_at(&a, 0), 0x8000_0000);
        let r = ValueKind::F32.fill(Group::Realistic, 64, 0, &mut Rng::new(7));
        assert_ne!(r, ValueKind::F32.fill(Group::Realistic, 64, 0, &mut Rng::new(8)));
    }

    /// Each edge group holds what its name says, for every float kind, and nothing that would
    /// mask it (a NaN or an infinity outside the groups about them).
    #[test]
    fn float_groups_hold_what_they_promise() {
        for kind in [ValueKind::F16, ValueKind::BF16, ValueKind::F32, ValueKind::F64] {
            for &group in Group::FLOAT {
                let bytes = kind.fill(group, 64, 1, &mut Rng::new(3));
                let values: Vec<f64> = (0..64).map(|i| kind.as_f64(kind.bits_at(&bytes, i))).collect();
                let special = values.iter().any(|v| !v.is_finite());
                match group {
                    Group::NaNs => assert!(values.iter().all(|v| v.is_nan()), "{kind} {group:?}"),
                    Group::Infinities => assert!(values.iter().any(|v| v.is_infinite()), "{kind} {group:?}"),
                    Group::Arbitrary => {}
                    _ => assert!(!special, "{kind} {group:?} holds a NaN or an infinity: {values:?}"),
                }
                match group {
                    Group::NegZeros => {
                        assert!(values.iter().step_by(2).all(|v| *v == 0.0 && v.is_sign_negative()));
                        // The first input is all −0.0.
                        let first = kind.fill(group, 64, 0, &mut Rng::new(3));
                        assert!((0..64).all(|i| kind.bits_at(&first, i) == kind.edges()[1]));
                    }
                    Group::Subnormals => {
                        let sum: f64 = values.iter().map(|v| v.abs()).sum();
                        let min_normal = kind.as_f64(kind.edges()[9]);
                        assert!(values.iter().all(|v| *v != 0.0) && sum < min_normal, "{kind}: {sum} ≥ {min_normal}");
                    }
                    Group::Cancellation => {
                        // The first input pairs x, −x (a later square one repeats rows instead).
                        let first = kind.fill(group, 64, 0, &mut Rng::new(3));
                        let first: Vec<f64> = (0..64).map(|i| kind.as_f64(kind.bits_at(&first, i))).collect();
                        assert!(first.chunks(2).all(|p| p[0] == -p[1] && p[0] != 0.0))
                    }
                    Group::Overflow => {
                        let big = |v: &f64| v.abs() * 2.0 > kind.as_f64(kind.edges()[10]);
                        assert!(values.iter().step_by(4).all(big) && values.iter().filter(|v| big(v)).count() == 16);
                        // In pairs v, −v: the big ones sum to zero in an order that pairs them.
                        assert!(values.iter().step_by(8).zip(values.iter().skip(4).step_by(8)).all(|(a, b)| *a == -*b));
                    }
                    Group::Edges => {
                        let max = kind.as_f64(kind.edges()[10]);
                        assert_eq!(values.iter().filter(|v| **v == max).count(), 1, "{kind}: MAX once per cube");
                    }
                    Group::Infinities => {
                        assert_eq!(values.iter().filter(|v| v.is_infinite()).count(), 4, "{kind}");
                    }
                    Group::Realistic => assert!(values.iter().all(|v| (0.125..16.0).contains(&v.abs()))),
                    _ => {}
                }
            }
        }
    }

    /// In a square matrix given after the first input, the cancellation group repeats rows in
    /// pairs, so that `a · b` cancels along `k` with the first input as `a`.
    #[test]
    fn cancellation_cancels_along_k_in_a_matrix_product() {
        let k = ValueKind::F32;
        let mut rng = Rng::new(5);
        let a = k.fill(Group::Cancellation, 256, 0, &mut rng);
        let b = k.fill(Group::Cancellation, 256, 1, &mut rng);
        let at = |m: &[u8], r: usize, c: usize| k.as_f64(k.bits_at(m, r * 16 + c));
        for r in 0..16 {
            for c in 0..16 {
                let products: Vec<f64> = (0..16).map(|kk| at(&a, r, kk) * at(&b, kk, c)).collect();
                assert!(products.chunks(2).all(|p| p[0] == -p[1] && p[0] != 0.0), "row {r} column {c}: {products:?}");
            }
        }
    }

    /// Every extreme meets itself in one lane of every pair of inputs: dp4a's worst case
    /// (every byte −128 times every byte −128) is drawn on purpose, not by chance.
    #[test]
    fn extremes_meet_themselves() {
        let k = ValueKind::I32;
        let a = k.fill(Group::Extremes, 32, 0, &mut Rng::new(1));
        let b = k.fill(Group::Extremes, 32, 1, &mut Rng::new(2));
        let lane = (0..32).find(|&i| k.bits_at(&a, i) == 0x8080_8080 && k.bits_at(&b, i) == 0x8080_8080);
        assert!(lane.is_some());
    }

    #[test]
    fn ulp_distance_crosses_zero() {
        let k = ValueKind::F32;
        assert_eq!(k.ulp_distance(0x0000_0000, 0x8000_0000), 0);
        assert_eq!(k.ulp_distance(0x0000_0001, 0x8000_0001), 2);
        assert_eq!(k.ulp_distance(1.0f32.to_bits() as u64, 1.0000001f32.to_bits() as u64), 1);
    }

    #[test]
    fn show_prints_hex_and_value() {
        assert_eq!(ValueKind::I8.show(0x80), "0x80 (-128)");
        assert_eq!(ValueKind::F32.show(0x3f80_0000), "0x3f800000 (1e0)");
    }
}
