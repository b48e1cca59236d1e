//! Correctly rounded division and square root as islands any kernel can call: the same bits on
//! every backend. CUDA takes its own `/` and `sqrt`, which NVRTC compiles, without fast math, to
//! `div.rn.f32` and `sqrt.rn.f32`; every other backend takes `default`, the integer formulation
//! of [`crate::portable`], because its native operations are not promised correctly rounded
//! (Vulkan allows 2.5 ulp for `OpFDiv` and lets `sqrt` inherit `inversesqrt`'s error; on the
//! H200's Vulkan driver `islands probe` measured 30 % of divisions and 17 % of square roots off
//! by 1–2 ulp). On the CPU the `cuda` arm runs LLVM's IEEE `/` and `sqrt`, so its proof checks
//! the integer formulation against IEEE arithmetic on every edge group. Each island is also the
//! check of its intrinsic.

use crate::portable;
use cubecl::prelude::*;
use island_runtime::prelude::*;

/// `a / b` in binary32, rounded to nearest even, on every backend.
#[islands]
#[cube]
pub fn div(a: f32, b: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32) -> f32;
        cuda => a / b,
        default => portable::div_rn(a, b),
    }
}

/// `sqrt(x)` in binary32, rounded to nearest even, on every backend.
#[islands]
#[cube]
pub fn sqrt(x: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(x: f32) -> f32;
        cuda => x.sqrt(),
        default => portable::sqrt_rn(x),
    }
}
