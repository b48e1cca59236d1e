//! Formulations: arms that lower no intrinsic and stand for a `default` whose types the
//! backend's language lacks (`exact::fma` on WGSL and Metal, where `default` computes in
//! binary64). The lowering check accepts such an arm only where `default` uses a lacked type
//! and the arm none; the launch policy lets it stand where `default` stands there, and nowhere
//! else. Two fixtures show the check refusing: an arm that uses binary64 itself, and an arm
//! without intrinsics beside a `default` that lacks nothing.

use cubecl::prelude::*;
use island_intrinsics::portable;
use island_runtime::prelude::*;
use island_runtime::records::view::Carry;
use island_runtime::registry::{self, ArmEntry};
use island_runtime::{Backend, Profile, lowering, semantics};
use libtest_mimic::{Failed, Trial};

/// A WGSL arm in binary64 (two roundings, where `default` rounds once).
#[islands(expect_mismatch)]
#[cube]
pub fn binary64_arm_on_webgpu(a: f32, b: f32, c: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32) -> f32;
        webgpu => portable::mul_add_rounded(a, b, c),
        default => portable::fma_rn32(a, b, c),
    }
}

/// A WGSL arm without intrinsics beside a `default` WGSL can express.
#[islands(expect_mismatch)]
#[cube]
pub fn formulation_of_nothing(a: f32, b: f32, c: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32) -> f32;
        webgpu => portable::mul_add_rounded32(a, b, c),
        default => portable::fma_rn32(a, b, c),
    }
}

fn entry(suffix: &str, arm: &str) -> Result<&'static ArmEntry, Failed> {
    registry::arms()
        .iter()
        .copied()
        .find(|e| e.site.id.ends_with(suffix) && e.label().replace(" ", "") == arm)
        .ok_or_else(|| format!("no registered arm `{arm}` of an island `…{suffix}`").into())
}

fn refused(suffix: &str, needle: &str) -> Result<(), Failed> {
    let fixture = entry(suffix, "webgpu")?;
    match lowering::check_arm(fixture, Backend::WebGpu, &proofs::cpu()?) {
        Ok(()) => Err(format!("the lowering check passed `{}`", fixture.name()).into()),
        Err(e) if e.to_string().contains(needle) => Ok(()),
        Err(e) => Err(format!("the lowering check refused `{}` for another reason: {e}", fixture.name()).into()),
    }
}

fn reference(backend: Backend) -> Profile {
    Profile::references(backend)[0]
}

/// How far each arm's proof carries on its backend's first reference device.
fn carries() -> Result<(), Failed> {
    let host = proofs::cpu()?;
    let carry = |e: &'static ArmEntry, backend: Backend| {
        let p = reference(backend);
        semantics::carry(e, &p, &host, (p.plane, p.plane))
    };
    for (island, arm) in [("exact::fma#0", "webgpu|metal"), ("exact::mul_add#0", "webgpu|metal")] {
        let e = entry(island, arm)?;
        for backend in [Backend::WebGpu, Backend::Metal] {
            let c = carry(e, backend);
            if c != Carry::AsDefault {
                return Err(format!("`{}` on {backend}: {c:?}, not standing as `default`", e.name()).into());
            }
        }
    }
    // No formulation where `default` lacks nothing: the fixture's float add needs a record.
    let c = carry(entry("formulation_of_nothing#0", "webgpu")?, Backend::WebGpu);
    if !matches!(c, Carry::Record(ref why) if why.contains("float arithmetic")) {
        return Err(format!("`formulation_of_nothing` on webgpu: {c:?}").into());
    }
    // Intrinsic arms are not formulations: Vulkan's `Fma` stays device-defined.
    let c = carry(entry("exact::fma#0", "vulkan")?, Backend::Vulkan);
    if !matches!(c, Carry::Record(_)) {
        return Err(format!("`exact::fma`'s vulkan arm: {c:?}").into());
    }
    Ok(())
}

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("formulation::an_arm_in_binary64_fails_the_wgsl_lowering_check", || {
            refused("binary64_arm_on_webgpu#0", "\"f64\"")
        }),
        Trial::test("formulation::an_arm_without_intrinsics_beside_an_expressible_default_fails_it", || {
            refused("formulation_of_nothing#0", "nor does `default` use a type")
        }),
        Trial::test("formulation::exact_fma_and_mul_add_stand_as_default_on_webgpu_and_metal_only", carries),
    ]
    .into_iter()
    .map(|t| t.with_kind("lowering"))
    .collect()
}
