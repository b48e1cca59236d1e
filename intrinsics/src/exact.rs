//! Correctly rounded division and square root as islands any kernel can call: the same bits on
//! every backend. CUDA takes its IEEE instructions ([`crate::ieee`]); every other backend takes
//! `default`, the integer formulation of [`crate::portable`], because its native operations are
//! not promised correctly rounded (Vulkan: 2.5 ulp for `OpFDiv`, `sqrt` from `inversesqrt`;
//! Metal and WebGPU: looser still). Each island is also the check of its intrinsic.

use crate::{ieee, portable};
use cubecl::prelude::*;
use island_runtime::prelude::*;

/// `a / b` in binary32, rounded to nearest even, on every backend.
#[islands]
#[cube]
pub fn div(a: f32, b: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(a: f32, b: f32) -> f32;
        cuda => ieee::div(a, b, target),
        default => portable::div_rn(a, b),
    }
}

/// `sqrt(x)` in binary32, rounded to nearest even, on every backend.
#[islands]
#[cube]
pub fn sqrt(x: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(x: f32) -> f32;
        cuda => ieee::sqrt(x, target),
        default => portable::sqrt_rn(x),
    }
}
