//! Known divergences: islands whose native lowering was measured to differ from its emulation on
//! a particular device, with the cause. Conformance reports such an arm *declined* on that device
//! (never proven) instead of failing, but only where every differing cube holds one of the value
//! groups the record was measured on: any other difference still fails. Each record names the
//! device as its driver reports it, the groups that differ, the run that measured it, and what
//! differs.

use crate::value::Group;
use island_vocab::{Backend, Profile};
use std::collections::BTreeMap;

/// One measured divergence.
#[derive(Debug)]
pub struct Divergence {
    pub backend: Backend,
    /// A substring of the device's name (`client.properties().identity.name`).
    pub device: &'static str,
    /// The island ids it covers.
    pub islands: &'static [&'static str],
    /// The value groups whose cubes were measured to differ: a difference in a cube that holds
    /// none of them is not this divergence.
    pub groups: &'static [Group],
    /// What the device computes differently, as measured.
    pub cause: &'static str,
    /// Where and when it was measured.
    pub measured: &'static str,
}

const PLANE_FLOAT_REDUCTIONS_W32: &[&str] = &[
    "island_intrinsics::checks::plane_sum_f32_w32#0",
    "island_intrinsics::checks::plane_max_f32_w32#0",
    "island_intrinsics::checks::group_max_f32_g8#0",
    "island_examples::rows::row_sum#0",
    "island_examples::q8_matvec::kernels::block_amax#0",
];

/// Where a flushed subnormal shows: the groups holding subnormals (arbitrary bits hold one in
/// about 256 values). At depth 16 on the H200 (2026-12-02) every difference of NVIDIA's Vulkan
/// driver lay in the subnormal cube, and for `exact::fma` in the edge cube too.
const FLUSHED: &[Group] = &[Group::Edges, Group::Subnormals, Group::Arbitrary];
/// lavapipe's subgroup max: zeros' signs and NaNs.
const LAVAPIPE_MAX: &[Group] =
    &[Group::Edges, Group::NegZeros, Group::SignedZeros, Group::NaNs, Group::Infinities, Group::Arbitrary];
/// Every group whose values round: a different order of additions, or a rounded product, shows
/// in all of them.
const ROUNDING: &[Group] = &[
    Group::Edges,
    Group::NegZeros,
    Group::SignedZeros,
    Group::Subnormals,
    Group::Overflow,
    Group::Cancellation,
    Group::Halfway,
    Group::Infinities,
    Group::Arbitrary,
    Group::Realistic,
    Group::Wide,
];
/// lavapipe's subgroup add: another order of additions, and the sign of a zero sum.
const LAVAPIPE_SUM: &[Group] = ROUNDING;
/// lavapipe's unfused `Fma`: wherever the rounded product matters.
const LAVAPIPE_FMA: &[Group] = ROUNDING;
/// Where a NaN reaches a float `max`.
const NAN_GROUPS: &[Group] = &[Group::NaNs, Group::Infinities, Group::Arbitrary];

/// Every known divergence.
pub const KNOWN: &[Divergence] = &[
    Divergence {
        backend: Backend::Vulkan,
        device: "NVIDIA H200",
        islands: PLANE_FLOAT_REDUCTIONS_W32,
        groups: FLUSHED,
        cause: "NVIDIA's Vulkan driver flushes subnormal results of float subgroup operations to zero \
                (a plane of subnormals sums to 0.0) and returns +0.0 for the maximum of ±0.0; on normal \
                values the sum is the xor butterfly 1, 2, 4, … bit for bit (`islands probe`)",
        measured: "H200, driver 580, islands conform --runtime vulkan, 2026-12-01 (docs/results/h200/conform-vulkan.txt)",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "NVIDIA H200",
        islands: &["island_intrinsics::exact::fma#0"],
        groups: FLUSHED,
        cause: "NVIDIA's Vulkan driver flushes subnormal float results of ordinary arithmetic (CubeCL's SPIR-V \
                declares no DenormPreserve): its `Fma` returns 0.0 where the fused result is a subnormal \
                (84 of 10,880 edge-group values, e.g. fma(0, −0, 2⁻¹⁴⁹) = 0.0); the same values as its `default`",
        measured: "H200, driver 580.159.04, islands conform --runtime vulkan at depth 16, seed 0x93e75b78ee3c, 2026-12-02 \
                   (docs/results/h200/2026-12-02-llm/conform-fma-vulkan.txt)",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "NVIDIA H200",
        islands: &["island_intrinsics::checks::partial_shuffle_xor_w32#0"],
        groups: FLUSHED,
        cause: "NVIDIA's Vulkan driver flushes subnormal float results of ordinary arithmetic: the check adds a \
                lane's value to its partner's, and a sum of two subnormals is 0.0 there; the shuffle itself moves \
                the bits exactly (`shuffle_xor_w32` is proven); the same values as its `default`",
        measured: "H200, driver 580.159.04, islands conform --runtime vulkan at depth 16, seed 0xa52d2559fa52, 2026-12-02 \
                   (docs/results/h200/2026-12-02-machine-code/conform-vulkan-partial-shuffle-found.txt)",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "llvmpipe",
        islands: &["island_intrinsics::checks::plane_sum_f32_w8#0"],
        groups: LAVAPIPE_SUM,
        cause: "lavapipe's subgroup add does not add in the xor-butterfly order 1, 2, 4: 6 of 8 realistic \
                cubes and the rounding-tie cube differ in the last bits; and it starts from +0.0 (a plane of \
                −0.0 sums to +0.0)",
        measured: "Mesa 22.3 lavapipe (8-lane subgroups), cargo test -p proofs --features vulkan, 2026-12-01; \
                   the groups on 2026-12-02 (seed 0x151a4d5eed, depth 1)",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "llvmpipe",
        islands: &[
            "island_intrinsics::checks::plane_max_f32_w8#0",
            "island_intrinsics::checks::group_max_f32_g8#0",
            "island_examples::q8_matvec::kernels::block_amax#0",
        ],
        groups: LAVAPIPE_MAX,
        cause: "lavapipe's subgroup maximum skips NaNs (maxnum) and its max(−0.0, +0.0) is −0.0",
        measured: "Mesa 22.3 lavapipe (8-lane subgroups), cargo test -p proofs --features vulkan, 2026-12-01",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "llvmpipe",
        islands: &["island_intrinsics::exact::fma#0"],
        groups: LAVAPIPE_FMA,
        cause: "lavapipe's GLSL.std.450 Fma is not one rounding (the Vulkan specification lets it round the \
                product first): 137 of 1280 edge-group results differ from the fused multiply-add, e.g. \
                fma(−0x1.fffffcp−127, 0x1.fffffep127, −1) = −0x1.3ffffcp2 where the fused result is −0x1.3ffffep2",
        measured: "Mesa 22.3 lavapipe, cargo test -p proofs --features vulkan, 2026-12-02",
    },
];

/// The known divergence of `island` on the device of `profile`, if one is recorded.
pub fn known(profile: &Profile, island: &str) -> Option<&'static Divergence> {
    find(KNOWN, profile, island)
}

/// The divergence of `island` on the device of `profile` among `records`.
pub fn find<'a>(records: &'a [Divergence], profile: &Profile, island: &str) -> Option<&'a Divergence> {
    records
        .iter()
        .find(|d| d.backend == profile.backend && profile.name.contains(d.device) && d.islands.contains(&island))
}

/// Measured differences between an island's `default` on a device and the same `default` on
/// the CPU runtime (`crate::conformance::defaults`): there `default` itself does not compute the
/// CPU's bytes, so no arm can be proven equal to it on that device. Reported declined, with the
/// cause, never passed; each is an open defect of the SDK on that device.
pub const DEFAULTS: &[Divergence] = &[
    Divergence {
        backend: Backend::Vulkan,
        device: "NVIDIA H200",
        islands: &[
            "island_intrinsics::checks::plane_sum_f32_w32#0",
            "island_intrinsics::checks::plane_sum_f32_w64#0",
            "island_intrinsics::checks::plane_sum_f32_w8#0",
            "island_intrinsics::checks::plane_max_f32_w32#0",
            "island_intrinsics::checks::plane_max_f32_w8#0",
            "island_intrinsics::checks::group_max_f32_g8#0",
            "island_examples::rows::row_sum#0",
            "island_examples::q8_matvec::kernels::block_amax#0",
            "island_intrinsics::exact::fma#0",
            "island_intrinsics::exact::mul_add#0",
            "island_intrinsics::checks::partial_shuffle_xor_w32#0",
            "island_intrinsics::checks::partial_shuffle_xor_w8#0",
        ],
        groups: FLUSHED,
        cause: "NVIDIA's Vulkan driver flushes subnormal float results of ordinary arithmetic to zero, not only \
                of subgroup operations: the portable defaults, which use no subgroup operation, give 0.0 where \
                the CPU gives a subnormal (CubeCL's SPIR-V declares no DenormPreserve execution mode); only the \
                subnormal value group differs",
        measured: "H200, driver 580.159.04, islands conform --runtime vulkan at depth 16, 2026-12-01 \
                   (docs/results/h200/2026-12-01-policy/conform-vulkan-d16.txt); exact::fma the same way on \
                   2026-12-02 (docs/results/h200/2026-12-02-llm/conform-fma-vulkan.txt); the 8-lane checks, and \
                   the groups, at depth 16 on 2026-12-02 (docs/results/h200/2026-12-02-trust/); the partial-plane \
                   shuffles (a lane plus its partner) at depth 16 on 2026-12-02 \
                   (docs/results/h200/2026-12-02-machine-code/conform-vulkan-partial-shuffle-found.txt)",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "llvmpipe",
        islands: &["island_examples::q8_matvec::kernels::block_amax#0"],
        groups: NAN_GROUPS,
        cause: "the default's float `max` returns the NaN operand on lavapipe where the CPU runtime returns the \
                number (IEEE maximumNumber): the default leaves NaN handling to each backend's `max`",
        measured: "Mesa 22.3 lavapipe, cargo test -p proofs --features vulkan, 2026-12-01",
    },
];

/// The measured difference of `island`'s `default` on the device of `profile`, if one is recorded.
pub fn known_default(profile: &Profile, island: &str) -> Option<&'static Divergence> {
    find(DEFAULTS, profile, island)
}

/// How a measured difference relates to a known divergence.
#[derive(Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every differing cube holds one of the divergence's groups.
    Within,
    /// Some differing cubes hold none of them: a difference the record does not cover.
    Outside(Vec<Vec<Group>>),
}

impl Divergence {
    /// Whether the differing cubes of a comparison (counted by the groups they hold, as
    /// [`crate::report::Difference::cubes`]) all lie within the groups this divergence was
    /// measured on.
    pub fn scope(&self, cubes: &BTreeMap<Vec<Group>, usize>) -> Scope {
        let outside: Vec<Vec<Group>> =
            cubes.keys().filter(|held| !held.iter().any(|g| self.groups.contains(g))).cloned().collect();
        if outside.is_empty() { Scope::Within } else { Scope::Outside(outside) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_divergence_covers_only_its_groups() {
        let d = &KNOWN[0];
        let cubes = |held: &[&[Group]]| held.iter().map(|g| (g.to_vec(), 1)).collect::<BTreeMap<_, _>>();
        assert_eq!(d.scope(&cubes(&[&[Group::Subnormals], &[Group::Edges]])), Scope::Within);
        assert_eq!(
            d.scope(&cubes(&[&[Group::Subnormals], &[Group::Realistic]])),
            Scope::Outside(vec![vec![Group::Realistic]])
        );
        // A cube of several inputs is covered when one of its inputs holds a measured group.
        assert_eq!(d.scope(&cubes(&[&[Group::Random, Group::Subnormals]])), Scope::Within);
    }

    #[test]
    fn every_divergence_names_its_groups() {
        for d in KNOWN.iter().chain(DEFAULTS) {
            assert!(!d.groups.is_empty(), "{d:?}");
            assert!(d.groups.iter().all(|g| Group::FLOAT.contains(g)));
        }
    }
}
