//! An arm the machine-code check exists for: its CUDA C++ calls `__dp4a`, so every check of the
//! generated source passes (the lowering check, the gate's instruction search), but the call sits
//! in a branch the compiler proves dead (`c == c + 1` never holds) and the live branch computes
//! with four multiplies. It is bit-exact everywhere; on a CUDA device the gate reads the machine
//! code, finds no `IDP.4A`, and declines it (`declined (machine code)`): the GPU would run a
//! slower program than the table promises.

use cubecl::prelude::*;
use island_intrinsics::{dp4a, portable};
use island_runtime::prelude::*;

/// `c + Σ a[i]·b[i]` over four packed signed bytes, with a `dp4a` the compiler removes.
#[islands]
#[cube]
pub fn dp4a_behind_dead_code(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        cuda if dp4a => if c == c + 1i32 { dp4a::call(a, b, c, target) } else { dp4a::emulate(a, b, c) },
        default => portable::dot4_i8(a, b, c),
    }
}
