//! `dp4a`: the dot product of two words of four packed signed bytes, plus an i32 accumulator.
//!
//! Native lowering: `__dp4a` on CUDA (CubeCL's C++ path, sm_61+), `OpSDot` with the packed 4×8
//! format on Vulkan. CubeCL 0.11 has no native lowering on HIP, Metal or WGSL (it emits its
//! polyfill there), so those backends run the emulation. Emulation: sign-extend each byte,
//! multiply, and add with 32-bit wrap-around. Integer addition modulo 2³² is associative, so
//! the emulation is exact whatever order the hardware adds in.

use cubecl::prelude::*;
use island_portable as portable;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

pub use definition::{call, emulate, native, reference};

/// The intrinsic; `dp4a::call(a, b, c, target)`: `c + Σ a[i]·b[i]` over the four signed bytes of
/// `a` and `b` (byte 0 = least significant), wrapping at 32 bits.
#[intrinsic(
    name = "dp4a",
    semantics = defined,
    summary = "c + Σ a[i]·b[i] over four packed signed bytes, wrapping i32",
    check = crate::dp4a::check,
    lowerings(cuda if dp4a => "__dp4a(" sass "IDP.4A", vulkan if dp4a => "OpSDot"),
)]
mod definition {
    use cubecl::prelude::*;

    /// Native on CUDA (`__dp4a`) and Vulkan (`OpSDot`): CubeCL's `dp4a`.
    #[cube]
    pub fn native(a: i32, b: i32, c: i32) -> i32 {
        cubecl::prelude::dp4a(a, b, c)
    }

    /// The emulation: what every backend's instruction computes, spelled out.
    #[cube]
    pub fn emulate(a: i32, b: i32, c: i32) -> i32 {
        let mut acc = c;
        #[unroll]
        for byte in 0..4i32 {
            // Shift the byte to the top, then arithmetic-shift it back: sign extension.
            let x = (a << (24 - 8 * byte)) >> 24;
            let y = (b << (24 - 8 * byte)) >> 24;
            // i32 arithmetic wraps on every CubeCL backend.
            acc += x * y;
        }
        acc
    }

    /// The same function in plain Rust, the reference the conformance and unit tests use.
    /// Written out byte by byte (byte 0 first) rather than folded: unoptimised test builds call
    /// it for every weight word of the model's plain-Rust forward pass.
    pub fn reference(a: i32, b: i32, c: i32) -> i32 {
        let (a, b) = (a.to_le_bytes(), b.to_le_bytes());
        c.wrapping_add(a[0] as i8 as i32 * b[0] as i8 as i32)
            .wrapping_add(a[1] as i8 as i32 * b[1] as i8 as i32)
            .wrapping_add(a[2] as i8 as i32 * b[2] as i8 as i32)
            .wrapping_add(a[3] as i8 as i32 * b[3] as i8 as i32)
    }
}

// The checks: islands whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

#[islands]
#[cube]
pub fn check(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        cuda | vulkan if dp4a => call(a, b, c, target),
        default => portable::dot4_i8(a, b, c),
    }
}
