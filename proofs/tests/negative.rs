//! Negative fixtures: arms with planted bugs. Each is marked `expect_mismatch`, so its test
//! passes only when the generated proof catches the bug; a proof that could not fail would
//! turn these red.

use cubecl::prelude::*;
use island_intrinsics::{dp4a, mma, plane, portable};
use island_runtime::prelude::*;

/// A dp4a arm that forgets to sign-extend the bytes it unpacks.
#[cube]
fn dot4_zero_extended(a: i32, b: i32, c: i32) -> i32 {
    let mut acc = c;
    #[unroll]
    for byte in 0..4i32 {
        let x = (a >> (8 * byte)) & 0xff;
        let y = (b >> (8 * byte)) & 0xff;
        acc += x * y;
    }
    acc
}

#[islands(expect_mismatch)]
#[cube]
pub fn sign_extension_slip(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        cuda => dot4_zero_extended(a, b, c),
        default => dp4a::emulate(a, b, c),
    }
}

/// A plane sum whose butterfly pairs lanes in the wrong order (xor 16 first, then 8, …).
#[cube]
fn reversed_butterfly(value: f32, #[comptime] target: Target) -> f32 {
    let mut v = value;
    #[unroll]
    for level in 0..5u32 {
        let offset = 16u32 >> level;
        v += plane::shuffle_xor::<f32>(v, offset, target);
    }
    v
}

#[islands(expect_mismatch)]
#[cube]
pub fn wrong_lane_pairing(value: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(value: f32) -> f32, cube_dim = 32;
        cuda => reversed_butterfly(value, target),
        default => portable::tree_sum::<f32>(value, 32u32),
    }
}

#[cube]
fn gemm_tile_scalar(a: &[i8], b: &[i8], c: &mut [i32]) {
    island_examples::gemm_i8::tile_scalar(a, 16u32, b, 16u32, c, 16u32, 1u32);
}

#[islands(expect_mismatch)]
#[cube]
pub fn transposed_tile(a: &[i8], b: &[i8], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[i8; 256], b: &[i8; 256], c: &mut [i32; 256]), cube_dim = 32;
        cuda if cmma(i8, i8, i32, 16, 16, 16) => mma::tile_i8(a, 16u32, b, 16u32, mma::Layout::ColMajor, c, 16u32, 1u32, target),
        default => gemm_tile_scalar(a, b, c),
    }
}

/// The lane-breaking edit from the acceptance list, kept: one lane of the dp4a arm is wrong.
#[islands(expect_mismatch)]
#[cube]
pub fn one_broken_lane(w: i32, x: i32, acc: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(w: i32, x: i32, acc: i32) -> i32;
        cuda if dp4a => broken_lane(dp4a::dp4a(w, x, acc, target), target),
        default => portable::dot4_i8(w, x, acc),
    }
}

#[cube]
fn broken_lane(v: i32, #[comptime] target: Target) -> i32 {
    let mut r = v;
    if plane::lane(target) == 17 {
        r += 1;
    }
    r
}

/// A 16-byte load that reads the neighbouring vector: a vector-valued proof must catch it.
#[islands(expect_mismatch)]
#[cube]
pub fn off_by_one_vector(src: &[Vector<i32, Const<4>>], index: usize, #[comptime] target: Target) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 64], index: usize = UNIT_POS as usize) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda => island_intrinsics::stream::load_x4(src, (index + 1) % 64, target),
        default => src[index],
    }
}
