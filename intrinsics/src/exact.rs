//! Correctly rounded division, square root and fused multiply-add as islands any kernel can
//! call: the same bits on every backend. CUDA takes its own `/` and `sqrt`, which NVRTC compiles, without fast math, to
//! `div.rn.f32` and `sqrt.rn.f32`; every other backend takes `default`, the integer formulation
//! of [`island_portable`], because its native operations are not promised correctly rounded
//! (Vulkan allows 2.5 ulp for `OpFDiv` and lets `sqrt` inherit `inversesqrt`'s error; on the
//! H200's Vulkan driver `islands probe` measured 30 % of divisions and 17 % of square roots off
//! by 1–2 ulp). On the CPU the `cuda` arm runs LLVM's IEEE `/` and `sqrt`, so its proof checks
//! the integer formulation against IEEE arithmetic on every edge group. Each island is also the
//! check of its intrinsic.
//!
//! The intrinsics `ieee_div` and `ieee_sqrt` are CUDA's operators. Their emulation is the
//! executing runtime's own `/` and `sqrt`: on the CPU runtime that is IEEE binary32, correctly
//! rounded, which is exactly `div.rn.f32` and `sqrt.rn.f32`. They declare no other lowering, and
//! on other GPUs the islands below take `default`, never the emulation.

use cubecl::prelude::*;
use island_portable as portable;
use island_runtime::divergence::{Divergence, Of};
use island_runtime::intrinsic;
use island_runtime::prelude::*;
use island_runtime::quirks;

/// `a / b` in binary32, rounded to nearest even, on every backend.
#[islands]
#[cube]
pub fn div(a: f32, b: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32) -> f32;
        cuda => ieee_div::call(a, b, target),
        default => portable::div_rn(a, b),
    }
}

/// `sqrt(x)` in binary32, rounded to nearest even, on every backend.
#[islands]
#[cube]
pub fn sqrt(x: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(x: f32) -> f32;
        cuda => ieee_sqrt::call(x, target),
        default => portable::sqrt_rn(x),
    }
}

/// `a·b + c` in binary32 with one rounding, on every backend. CUDA's `fma` is `fma.rn.f32`;
/// Vulkan's `Fma` may round the product first (its specification allows a multiply followed by
/// an add; lavapipe does so), so that arm runs only on a device whose record shows it fused;
/// `default` is [`portable::fma_rn`], in binary64, which WGSL and Metal lack: there the
/// island is [`portable::fma_rn32`], the same rounding in 32-bit integer words.
#[islands]
#[cube]
pub fn fma(a: f32, b: f32, c: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32) -> f32;
        cuda => ieee_fma::call(a, b, c, target),
        vulkan => vulkan_fma::call(a, b, c, target),
        webgpu | metal => portable::fma_rn32(a, b, c),
        default => portable::fma_rn(a, b, c),
    }
}

/// `a·b + c` in binary32 with two roundings (the product rounded, then the sum) on every
/// backend: what Rust's `a * b + c` means, which a kernel that writes `a * b + c` does not get
/// (CubeCL's optimiser fuses a product whose only use is an add into `Fma` on every backend,
/// and NVRTC contracts the rest). CUDA takes PTX `mul.rn.f32` and `add.rn.f32`, which the PTX
/// ISA never contracts (explicit rounding); `default` is [`portable::mul_add_rounded`] (the
/// product from binary64, rounded by integer operations, then added); WGSL and Metal, which
/// lack binary64, take [`portable::mul_add_rounded32`] (the product in 32-bit words).
#[islands]
#[cube]
pub fn mul_add(a: f32, b: f32, c: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32, c: f32) -> f32;
        cuda => unfused_mul_add::call(a, b, c, target),
        webgpu | metal => portable::mul_add_rounded32(a, b, c),
        default => portable::mul_add_rounded(a, b, c),
    }
}

/// The canary of contraction: `default` writes a product with two uses, `acc + p + p`, which
/// CubeCL's optimiser leaves a multiply and two adds and a contracting compiler (NVRTC) fuses;
/// the arm computes the same two-rounding sums with [`unfused_mul_add`]. Its CPU proof holds;
/// on CUDA `islands conform` must find the device `default` different from the CPU's
/// (`expect_default_mismatch`). If it does not, CUDA stopped contracting and the backend
/// table's [`island_runtime::Contraction`] is wrong; if it does, the check that catches a
/// user's contracted `default` is shown able to fail.
#[islands(expect_default_mismatch)]
#[cube]
pub fn contraction_canary(acc: f32, x: f32, y: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(acc: f32, x: f32, y: f32) -> f32;
        cuda => {
            let once = unfused_mul_add::call(x, y, acc, target);
            unfused_mul_add::call(x, y, once, target)
        },
        default => {
            let p = x * y;
            acc + p + p
        },
    }
}

/// PTX `mul.rn.f32` then `add.rn.f32`: two roundings, never contracted.
#[intrinsic(
    name = "exact::mul_add<f32>",
    semantics = float_device_defined("whether a subnormal operand or result is flushed to zero: the compiler's flags and the driver decide"),
    summary = "a·b + c in binary32 with two roundings: PTX mul.rn then add.rn, which ptxas never contracts",
    check = mul_add,
    lowerings(cuda => "mul.rn.f32" sass "FMUL"),
)]
pub mod unfused_mul_add {
    use cubecl::prelude::*;

    /// The result leaves the asm as its bits (a `u32` register) and is reinterpreted after it:
    /// CubeCL 0.11 hands an asm statement's output, used as the input of another asm
    /// statement, over as its local's address, and ptxas then refuses the `add` (seen on the
    /// H200 when the contraction canary chained two calls).
    #[cube]
    pub fn cuda(a: f32, b: f32, c: f32) -> f32 {
        let d: u32;
        gpu_asm!(
            "{{ .reg .f32 p, s; mul.rn.f32 p, {}, {}; add.rn.f32 s, p, {}; mov.b32 {}, s; }}",
            in(_) a, in(_) b, in(_) c, out(_) d,
            options(pure, nomem)
        );
        f32::reinterpret(d)
    }

    /// The binary32 product passed through its bits, so that CubeCL's optimiser does not fuse
    /// it with the add, then the sum: two roundings on the CPU runtime.
    #[cube]
    pub fn emulate(a: f32, b: f32, c: f32) -> f32 {
        let product = f32::reinterpret(u32::reinterpret(a * b));
        product + c
    }
}

/// CUDA's `fma` on f32: `fma.rn.f32`, one rounding.
#[intrinsic(
    name = "exact::fma<f32>",
    semantics = float_device_defined("whether a subnormal operand or result is flushed to zero: the compiler's flags and the driver decide"),
    summary = "a·b + c in binary32 with one rounding (CUDA's fma is fma.rn.f32)",
    check = fma,
    lowerings(cuda => "fma(" sass "FFMA"),
)]
pub mod ieee_fma {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(a: f32, b: f32, c: f32) -> f32 {
        cubecl::prelude::fma(a, b, c)
    }

    /// The CPU runtime's `fma` (LLVM's `llvm.fma`, one rounding).
    #[cube]
    pub fn emulate(a: f32, b: f32, c: f32) -> f32 {
        cubecl::prelude::fma(a, b, c)
    }
}

/// Vulkan's `Fma` (GLSL.std.450) on f32: one rounding where the driver fuses it, which the
/// Vulkan specification does not promise.
#[intrinsic(
    name = "exact::fma<f32> (Vulkan)",
    semantics = device_defined("whether GLSL.std.450 Fma rounds once: Vulkan allows a rounded product and a separate add"),
    summary = "a·b + c in binary32 through Vulkan's Fma, one rounding on drivers that fuse it",
    check = fma,
    lowerings(vulkan => "Fma"),
)]
pub mod vulkan_fma {
    use cubecl::prelude::*;

    #[cube]
    pub fn vulkan(a: f32, b: f32, c: f32) -> f32 {
        cubecl::prelude::fma(a, b, c)
    }

    /// A fused multiply-add, what a driver that fuses computes.
    #[cube]
    pub fn emulate(a: f32, b: f32, c: f32) -> f32 {
        cubecl::prelude::fma(a, b, c)
    }
}

/// CUDA's `/` on f32: `div.rn.f32` without fast math.
#[intrinsic(
    name = "exact::div<f32>",
    semantics = float_device_defined("whether a subnormal operand or result is flushed to zero: the compiler's flags and the driver decide"),
    summary = "a / b in binary32, correctly rounded (CUDA's `/` without fast math is div.rn.f32)",
    check = div,
    lowerings(cuda => " / "),
)]
pub mod ieee_div {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(a: f32, b: f32) -> f32 {
        a / b
    }

    /// The CPU runtime's IEEE division (see the module docs).
    #[cube]
    pub fn emulate(a: f32, b: f32) -> f32 {
        a / b
    }
}

/// CUDA's `sqrt` on f32: `sqrt.rn.f32` without fast math.
#[intrinsic(
    name = "exact::sqrt<f32>",
    semantics = float_device_defined("whether a subnormal operand or result is flushed to zero: the compiler's flags and the driver decide"),
    summary = "sqrt(x) in binary32, correctly rounded (CUDA's `sqrt` without fast math is sqrt.rn.f32)",
    check = sqrt,
    lowerings(cuda => "sqrt("),
)]
pub mod ieee_sqrt {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(x: f32) -> f32 {
        x.sqrt()
    }

    /// The CPU runtime's IEEE square root (see the module docs).
    #[cube]
    pub fn emulate(x: f32) -> f32 {
        x.sqrt()
    }
}

// Measured divergences of these islands on devices (`island_runtime::quirks`): conformance
// declines the arm there, within the value groups measured, and launches take `default`.

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::NVIDIA_VULKAN_FMA_FLUSHES,
    islands: &[concat!(module_path!(), "::fma#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::LAVAPIPE_FMA_ROUNDS_TWICE,
    islands: &[concat!(module_path!(), "::fma#0"),],
});

// The 32-bit `mul_add` arm (WGSL) ends in one float add, which the driver flushes.
island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_ARITHMETIC,
    islands: &[concat!(module_path!(), "::mul_add#0"),],
});

island_runtime::divergence!(Divergence {
    of: Of::Default,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_ARITHMETIC,
    islands: &[concat!(module_path!(), "::fma#0"), concat!(module_path!(), "::mul_add#0"),],
});
