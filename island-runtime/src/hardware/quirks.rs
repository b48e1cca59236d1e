//! Device quirks, in one place: what a device or its driver was measured to do differently from
//! the CPU runtime, or from its own documentation, and the device facts the runtime decides by
//! (which backends lower dp4a natively, which driver crashes on shared memory). A measured
//! quirk becomes a divergence of an island where its crate submits one ([`crate::hardware::divergence`]).

use crate::values::inputs::Group;
use island_vocab::Backend;

/// A measured behaviour of a device and driver.
#[derive(Debug)]
pub struct Quirk {
    /// Where it was measured: each backend with a substring of the device's name
    /// (`client.properties().identity.name`). A device or backend it was not measured on is
    /// not named, even where the same driver runs it: there a difference stays a failure.
    pub on: &'static [(Backend, &'static str)],
    /// The value groups whose cubes were measured to differ: a difference in a cube that holds
    /// none of them is not this quirk.
    pub groups: &'static [Group],
    /// What the device computes differently, as measured.
    pub cause: &'static str,
    /// Where and when it was measured.
    pub measured: &'static str,
}

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

/// Where NVIDIA's Vulkan driver (580.159.04) was measured flushing subnormal results: the H200
/// through SPIR-V (2026-12-01 to 12-05), the H100 through SPIR-V and through WGSL, which naga
/// hands the same driver as SPIR-V (`islands conform` at depth 16, seed 0x2026120605, 2026-12-06:
/// every failure a cube holding subnormals, `docs/results/h100/2026-12-06/conform-vulkan.txt`,
/// `conform-webgpu.txt`). The H200 through WGSL is not measured yet.
const NVIDIA_VULKAN_DRIVER: &[(Backend, &str)] =
    &[(Backend::Vulkan, "NVIDIA H200"), (Backend::Vulkan, "NVIDIA H100"), (Backend::WebGpu, "NVIDIA H100")];

pub const NVIDIA_VULKAN_FLUSHES_SUBGROUP_SUBNORMALS: Quirk = Quirk {
    on: NVIDIA_VULKAN_DRIVER,
    groups: FLUSHED,
    cause: "NVIDIA's Vulkan driver flushes subnormal results of float subgroup operations to zero \
            (a plane of subnormals sums to 0.0) and returns +0.0 for the maximum of ±0.0; on normal \
            values the sum is the xor butterfly 1, 2, 4, … bit for bit (`islands probe`)",
    measured: "H200, driver 580, islands conform --runtime vulkan, 2026-12-01 (docs/results/h200/conform-vulkan.txt); H100, driver 580.159.04, through SPIR-V and WGSL, depth 16, seed 0x2026120605, 2026-12-06 (docs/results/h100/2026-12-06/)",
};

pub const NVIDIA_VULKAN_FMA_FLUSHES: Quirk = Quirk {
    // Through WGSL the arm is the 32-bit integer formulation, which no flush touches (proven
    // on the H100 through WGSL, 2026-12-06).
    on: &[(Backend::Vulkan, "NVIDIA H200"), (Backend::Vulkan, "NVIDIA H100")],
    groups: FLUSHED,
    cause: "NVIDIA's Vulkan driver flushes subnormal float results of ordinary arithmetic (CubeCL's SPIR-V \
            declares no DenormPreserve): its `Fma` returns 0.0 where the fused result is a subnormal \
            (84 of 10,880 edge-group values, e.g. fma(0, −0, 2⁻¹⁴⁹) = 0.0); the same values as its `default`",
    measured: "H200, driver 580.159.04, islands conform --runtime vulkan at depth 16, seed 0x93e75b78ee3c, 2026-12-02 \
               (docs/results/h200/2026-12-02-llm/conform-fma-vulkan.txt); H100, the same driver, depth 16, seed 0x2026120605, 2026-12-06 (docs/results/h100/2026-12-06/conform-vulkan.txt)",
};

pub const NVIDIA_VULKAN_SUM_OF_SHUFFLED_FLUSHES: Quirk = Quirk {
    on: NVIDIA_VULKAN_DRIVER,
    groups: FLUSHED,
    cause: "NVIDIA's Vulkan driver flushes subnormal float results of ordinary arithmetic: the check adds a \
            lane's value to its partner's, and a sum of two subnormals is 0.0 there; the shuffle itself moves \
            the bits exactly (`shuffle_xor_w32` is proven); the same values as its `default`",
    measured: "H200, driver 580.159.04, islands conform --runtime vulkan at depth 16, seed 0xa52d2559fa52, 2026-12-02 \
               (docs/results/h200/2026-12-02-machine-code/conform-vulkan-partial-shuffle-found.txt); H100, the same driver, through SPIR-V and WGSL, depth 16, seed 0x2026120605, 2026-12-06 (docs/results/h100/2026-12-06/)",
};

pub const LAVAPIPE_SUBGROUP_ADD_ORDER: Quirk = Quirk {
    on: &[(Backend::Vulkan, "llvmpipe")],
    groups: LAVAPIPE_SUM,
    cause: "lavapipe's subgroup add does not add in the xor-butterfly order 1, 2, 4: 6 of 8 realistic \
            cubes and the rounding-tie cube differ in the last bits; and it starts from +0.0 (a plane of \
            −0.0 sums to +0.0)",
    measured: "Mesa 22.3 lavapipe (8-lane subgroups), cargo test -p proofs --features vulkan, 2026-12-01; \
               the groups on 2026-12-02 (seed 0x151a4d5eed, depth 1)",
};

pub const LAVAPIPE_SUBGROUP_MAX_NANS_AND_ZEROS: Quirk = Quirk {
    on: &[(Backend::Vulkan, "llvmpipe")],
    groups: LAVAPIPE_MAX,
    cause: "lavapipe's subgroup maximum skips NaNs (maxnum) and its max(−0.0, +0.0) is −0.0",
    measured: "Mesa 22.3 lavapipe (8-lane subgroups), cargo test -p proofs --features vulkan, 2026-12-01",
};

pub const LAVAPIPE_FMA_ROUNDS_TWICE: Quirk = Quirk {
    on: &[(Backend::Vulkan, "llvmpipe")],
    groups: LAVAPIPE_FMA,
    cause: "lavapipe's GLSL.std.450 Fma is not one rounding (the Vulkan specification lets it round the \
            product first): 137 of 1280 edge-group results differ from the fused multiply-add, e.g. \
            fma(−0x1.fffffcp−127, 0x1.fffffep127, −1) = −0x1.3ffffcp2 where the fused result is −0x1.3ffffep2",
    measured: "Mesa 22.3 lavapipe, cargo test -p proofs --features vulkan, 2026-12-02",
};

/// A float maximum of a lane's value and its partner's on NVIDIA's Vulkan driver.
pub const NVIDIA_VULKAN_MAX_OF_SHUFFLED_FLUSHES: Quirk = Quirk {
    on: NVIDIA_VULKAN_DRIVER,
    groups: FLUSHED,
    cause: "NVIDIA's Vulkan driver flushes subnormal operands of an ordinary float maximum: the arm takes the \
            maximum of a lane's value and its partner's (the shuffle moves the bits exactly, `shuffle_xor_w32` \
            is proven), and a block of subnormal magnitudes gives 0.0; only the subnormal cube differs (64 of \
            10,880 values), the same values as its `default`",
    measured: "H200, driver 580.159.04, islands gate --runtime vulkan at depth 16, 2026-12-05 \
               (docs/results/h200/2026-12-05-spirv/gate-vulkan.txt, recorded as failed); H100, the same driver, \
               islands conform --runtime vulkan and --runtime webgpu at depth 16, seed 0x2026120605, 2026-12-06 \
               (docs/results/h100/2026-12-06/)",
};

/// Portable `default`s on NVIDIA's Vulkan driver: every float result that should be subnormal.
pub const NVIDIA_VULKAN_FLUSHES_ARITHMETIC: Quirk = Quirk {
    on: NVIDIA_VULKAN_DRIVER,
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
               (docs/results/h200/2026-12-02-machine-code/conform-vulkan-partial-shuffle-found.txt); H100, the same driver, through SPIR-V and WGSL (the 32-bit `mul_add` arm's one float add too), depth 16, seed 0x2026120605, 2026-12-06 (docs/results/h100/2026-12-06/)",
};

/// A float `max` with a NaN operand on lavapipe, against the CPU runtime.
pub const LAVAPIPE_MAX_RETURNS_NAN: Quirk = Quirk {
    on: &[(Backend::Vulkan, "llvmpipe")],
    groups: NAN_GROUPS,
    cause: "the default's float `max` returns the NaN operand on lavapipe where the CPU runtime returns the \
            number (IEEE maximumNumber): the default leaves NaN handling to each backend's `max`",
    measured: "Mesa 22.3 lavapipe, cargo test -p proofs --features vulkan, 2026-12-01",
};

/// lavapipe through WGSL: a float maximum's NaNs and zeros, natively and in `default`. WGSL lets
/// an implementation assume no NaN or infinity is present, and naga lowers `max` to
/// GLSL.std.450's `FMax`, whose result with a NaN operand SPIR-V leaves undefined.
pub const LAVAPIPE_WGSL_MAX_NANS_AND_ZEROS: Quirk = Quirk {
    on: &[(Backend::WebGpu, "llvmpipe")],
    groups: LAVAPIPE_MAX,
    cause: "through WGSL (naga, GLSL.std.450 FMax) lavapipe's float maximum returns a NaN operand where the CPU \
            runtime returns the number, and max(−0.0, +0.0) is −0.0, in subgroup exchanges and in a default's \
            `max` alike: WGSL lets an implementation assume no NaN is present",
    measured: "Mesa 22.3 lavapipe, islands conform --runtime webgpu, 2026-12-04 (docs/results/lavapipe/2026-12-04-wgsl/)",
};

/// Every measured quirk.
pub const ALL: &[&Quirk] = &[
    &NVIDIA_VULKAN_FLUSHES_SUBGROUP_SUBNORMALS,
    &NVIDIA_VULKAN_FMA_FLUSHES,
    &NVIDIA_VULKAN_SUM_OF_SHUFFLED_FLUSHES,
    &LAVAPIPE_SUBGROUP_ADD_ORDER,
    &LAVAPIPE_SUBGROUP_MAX_NANS_AND_ZEROS,
    &LAVAPIPE_FMA_ROUNDS_TWICE,
    &NVIDIA_VULKAN_FLUSHES_ARITHMETIC,
    &NVIDIA_VULKAN_MAX_OF_SHUFFLED_FLUSHES,
    &LAVAPIPE_MAX_RETURNS_NAN,
    &LAVAPIPE_WGSL_MAX_NANS_AND_ZEROS,
];

/// Whether the backend lowers `dp4a` natively on a device of compute capability `sm` (CUDA).
pub fn dp4a(backend: Backend, sm: u32) -> bool {
    match backend {
        // `__dp4a` exists from sm_61 on.
        Backend::Cuda => sm >= 61,
        // shaderIntegerDotProduct is a required Vulkan 1.3 feature; CubeCL falls back to its
        // polyfill where a driver lacks it, which is still the same integer function.
        Backend::Vulkan => true,
        // CubeCL 0.11 lowers dp4a to its polyfill on HIP, Metal and WGSL.
        Backend::Hip | Backend::Metal | Backend::WebGpu => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_quirk_names_float_groups() {
        for q in ALL {
            assert!(!q.groups.is_empty(), "{q:?}");
            assert!(q.groups.iter().all(|g| Group::FLOAT.contains(g)), "{q:?}");
        }
    }
}
