//! Correctly rounded binary32 division and square root (IEEE 754, round to nearest even).
//!
//! Native lowering: `div.rn.f32` and `sqrt.rn.f32` on CUDA (inline PTX through CubeCL's C++
//! path). Emulation: the runtime's own `/` and `sqrt`, which the CPU runtime (LLVM) computes
//! correctly rounded; so the CPU proof of an arm that calls these compares IEEE arithmetic with
//! the integer formulations of [`crate::portable::div_rn`] and [`crate::portable::sqrt_rn`].
//! Vulkan does not promise either operation correctly rounded (`OpFDiv` may be off by 2.5 ulp,
//! `sqrt` inherits the error of `inversesqrt`), which is why islands take the integer
//! formulation there: see [`crate::exact`].

use cubecl::prelude::*;
use island_runtime::{Backend, Target};

/// `a / b`, correctly rounded: `div.rn.f32` on a CUDA device, the runtime's `/` otherwise.
#[cube]
pub fn div(a: f32, b: f32, #[comptime] target: Target) -> f32 {
    if comptime!(target.native_on(Backend::Cuda)) { native_div(a, b) } else { a / b }
}

/// `sqrt(x)`, correctly rounded: `sqrt.rn.f32` on a CUDA device, the runtime's `sqrt` otherwise.
#[cube]
pub fn sqrt(x: f32, #[comptime] target: Target) -> f32 {
    if comptime!(target.native_on(Backend::Cuda)) { native_sqrt(x) } else { x.sqrt() }
}

/// The CUDA lowering of [`div`].
#[cube]
pub fn native_div(a: f32, b: f32) -> f32 {
    let value: f32;
    gpu_asm!("div.rn.f32 {}, {}, {};", out(_) value, in(_) a, in(_) b, options(pure, nomem));
    value
}

/// The CUDA lowering of [`sqrt`].
#[cube]
pub fn native_sqrt(x: f32) -> f32 {
    let value: f32;
    gpu_asm!("sqrt.rn.f32 {}, {};", out(_) value, in(_) x, options(pure, nomem));
    value
}
