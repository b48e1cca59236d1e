//! An arm the machine-code check exists for: its CUDA C++ calls `__dp4a`, so every check of the
//! generated source passes (the lowering check, the gate's instruction search), but the call sits
//! in a branch the compiler proves dead (`c == c + 1` never holds) and the live branch computes
//! the four byte products in f32 (exact: each is at most 2^14 in magnitude, their sum below 2^24).
//! It is bit-exact everywhere; on a CUDA device the gate reads the machine code, finds no
//! `IDP.4A`, and declines it (`declined (machine code)`): the GPU would not run what the table
//! promises.
//!
//! (Measured on an H200, 2026-12-02: a live branch of integer shifts and multiplies is not such a
//! case. NVRTC recognises the sign-extended byte dot product and emits `IDP.4A` for it, as it
//! does for `portable::dot4_i8`, the `default` of every dp4a island.)

use cubecl::prelude::*;
use island_intrinsics::{dp4a, portable};
use island_runtime::prelude::*;

/// `c + Σ a[i]·b[i]` over four packed signed bytes, the products and their sum in f32.
#[cube]
fn dot4_in_floats(a: i32, b: i32, c: i32) -> i32 {
    let mut sum = 0.0f32;
    #[unroll]
    for byte in 0..4i32 {
        let x = f32::cast_from((a << (24 - 8 * byte)) >> 24);
        let y = f32::cast_from((b << (24 - 8 * byte)) >> 24);
        sum += x * y;
    }
    c + i32::cast_from(sum)
}

/// `c + Σ a[i]·b[i]` over four packed signed bytes, with a `dp4a` the compiler removes.
#[islands]
#[cube]
pub fn dp4a_behind_dead_code(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        cuda if dp4a => if c == c + 1i32 { dp4a::call(a, b, c, target) } else { dot4_in_floats(a, b, c) },
        default => portable::dot4_i8(a, b, c),
    }
}
