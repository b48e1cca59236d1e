//! Known divergences: islands whose native lowering was measured to differ from its emulation on
//! a particular device, with the cause. Conformance reports such an arm *declined* on that device
//! (never proven) instead of failing; any other difference still fails. Each record names the
//! device as its driver reports it, the run that measured it, and what differs.

use island_vocab::{Backend, Profile};

/// One measured divergence.
#[derive(Debug)]
pub struct Divergence {
    pub backend: Backend,
    /// A substring of the device's name (`client.properties().identity.name`).
    pub device: &'static str,
    /// The island ids it covers.
    pub islands: &'static [&'static str],
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

/// Every known divergence.
pub const KNOWN: &[Divergence] = &[
    Divergence {
        backend: Backend::Vulkan,
        device: "NVIDIA H200",
        islands: PLANE_FLOAT_REDUCTIONS_W32,
        cause: "NVIDIA's Vulkan driver flushes subnormal results of float subgroup operations to zero \
                (a plane of subnormals sums to 0.0) and returns +0.0 for the maximum of ±0.0; on normal \
                values the sum is the xor butterfly 1, 2, 4, … bit for bit (`islands probe`)",
        measured: "H200, driver 580, islands conform --runtime vulkan, 2026-12-01 (docs/results/h200/conform-vulkan.txt)",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "NVIDIA H200",
        islands: &["island_intrinsics::exact::fma#0"],
        cause: "NVIDIA's Vulkan driver flushes subnormal float results of ordinary arithmetic (CubeCL's SPIR-V \
                declares no DenormPreserve): its `Fma` returns 0.0 where the fused result is a subnormal \
                (84 of 10,880 edge-group values, e.g. fma(0, −0, 2⁻¹⁴⁹) = 0.0); the same values as its `default`",
        measured: "H200, driver 580.159.04, islands conform --runtime vulkan at depth 16, seed 0x93e75b78ee3c, 2026-12-02 \
                   (docs/results/h200/2026-12-02-llm/conform-fma-vulkan.txt)",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "llvmpipe",
        islands: &[
            "island_intrinsics::checks::plane_sum_f32_w8#0",
            "island_intrinsics::checks::plane_max_f32_w8#0",
            "island_intrinsics::checks::group_max_f32_g8#0",
            "island_examples::q8_matvec::kernels::block_amax#0",
        ],
        cause: "lavapipe's subgroup add starts from +0.0 (a plane of −0.0 sums to +0.0), its subgroup \
                maximum skips NaNs (maxnum) and its max(−0.0, +0.0) is −0.0",
        measured: "Mesa 22.3 lavapipe (8-lane subgroups), cargo test -p proofs --features vulkan, 2026-12-01",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "llvmpipe",
        islands: &["island_intrinsics::exact::fma#0"],
        cause: "lavapipe's GLSL.std.450 Fma is not one rounding (the Vulkan specification lets it round the \
                product first): 137 of 1280 edge-group results differ from the fused multiply-add, e.g. \
                fma(−0x1.fffffcp−127, 0x1.fffffep127, −1) = −0x1.3ffffcp2 where the fused result is −0x1.3ffffep2",
        measured: "Mesa 22.3 lavapipe, cargo test -p proofs --features vulkan, 2026-12-02",
    },
];

/// The known divergence of `island` on the device of `profile`, if one is recorded.
pub fn known(profile: &Profile, island: &str) -> Option<&'static Divergence> {
    KNOWN
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
            "island_intrinsics::checks::plane_max_f32_w32#0",
            "island_intrinsics::checks::group_max_f32_g8#0",
            "island_examples::rows::row_sum#0",
            "island_examples::q8_matvec::kernels::block_amax#0",
            "island_intrinsics::exact::fma#0",
        ],
        cause: "NVIDIA's Vulkan driver flushes subnormal float results of ordinary arithmetic to zero, not only \
                of subgroup operations: the portable defaults, which use no subgroup operation, give 0.0 where \
                the CPU gives a subnormal (CubeCL's SPIR-V declares no DenormPreserve execution mode); only the \
                subnormal value group differs",
        measured: "H200, driver 580.159.04, islands conform --runtime vulkan at depth 16, 2026-12-01 \
                   (docs/results/h200/2026-12-01-policy/conform-vulkan-d16.txt); exact::fma the same way on \
                   2026-12-02 (docs/results/h200/2026-12-02-llm/conform-fma-vulkan.txt)",
    },
    Divergence {
        backend: Backend::Vulkan,
        device: "llvmpipe",
        islands: &["island_examples::q8_matvec::kernels::block_amax#0"],
        cause: "the default's float `max` returns the NaN operand on lavapipe where the CPU runtime returns the \
                number (IEEE maximumNumber): the default leaves NaN handling to each backend's `max`",
        measured: "Mesa 22.3 lavapipe, cargo test -p proofs --features vulkan, 2026-12-01",
    },
];

/// The measured difference of `island`'s `default` on the device of `profile`, if one is recorded.
pub fn known_default(profile: &Profile, island: &str) -> Option<&'static Divergence> {
    DEFAULTS
        .iter()
        .find(|d| d.backend == profile.backend && profile.name.contains(d.device) && d.islands.contains(&island))
}
