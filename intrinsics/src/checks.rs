//! The check of every intrinsic: an island whose accelerated arm calls the intrinsic and whose
//! `default` computes the same function another way. The registry proves each on the CPU
//! (emulation against `default`), the conformance run compares each arm's native lowering with
//! its emulation on a real device, and the lowering check compiles each for its backends.
//!
//! Plane operations are checked once per plane width, since `default` must know the width
//! the arm computes with: 8 (lavapipe), 32 (NVIDIA, Apple, AMD wave32, most Vulkan), 64 (AMD
//! wave64). Each check's cube holds two planes, so a reduction that leaks across planes shows.

use crate::{mma, plane, portable, stream};
use cubecl::prelude::*;
use half::f16;
use island_runtime::prelude::*;

#[islands]
#[cube]
pub fn dp4a(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        cuda | vulkan if dp4a => crate::dp4a::call(a, b, c, target),
        default => portable::dot4_i8(a, b, c),
    }
}

#[islands]
#[cube]
pub fn plane_sum_f32_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => plane::sum::call::<f32>(v, target),
        default => portable::tree_sum::<f32>(v, 8u32),
    }
}

#[islands]
#[cube]
pub fn plane_sum_f32_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | hip | vulkan | metal | webgpu if plane == 32 => plane::sum::call::<f32>(v, target),
        default => portable::tree_sum::<f32>(v, 32u32),
    }
}

#[islands]
#[cube]
pub fn plane_sum_f32_w64(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 128;
        hip if plane == 64 => plane::sum::call::<f32>(v, target),
        default => portable::tree_sum::<f32>(v, 64u32),
    }
}

#[islands]
#[cube]
pub fn plane_sum_i32_w32(v: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(v: i32) -> i32, cube_dim = 64;
        cuda | vulkan if plane == 32 => plane::sum::call::<i32>(v, target),
        default => portable::tree_sum::<i32>(v, 32u32),
    }
}

#[islands]
#[cube]
pub fn plane_max_f32_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => plane::max::call::<f32>(v, target),
        default => portable::tree_max::<f32>(v, 8u32),
    }
}

#[islands]
#[cube]
pub fn plane_max_f32_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan if plane == 32 => plane::max::call::<f32>(v, target),
        default => portable::tree_max::<f32>(v, 32u32),
    }
}

#[islands]
#[cube]
pub fn group_max_f32_g8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | hip | vulkan | metal | webgpu if plane >= 8 => plane::group_max::call::<f32>(v, 8u32, target),
        default => portable::tree_max::<f32>(v, 8u32),
    }
}

#[islands]
#[cube]
pub fn shuffle_xor_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => plane::shuffle_xor::call::<f32>(v, 5u32, target),
        default => portable::group_read::<f32>(v, (UNIT_POS % 8) ^ 5, 8u32),
    }
}

#[islands]
#[cube]
pub fn shuffle_xor_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan | metal | webgpu if plane == 32 => plane::shuffle_xor::call::<f32>(v, 21u32, target),
        default => portable::group_read::<f32>(v, (UNIT_POS % 32) ^ 21, 32u32),
    }
}

#[islands]
#[cube]
pub fn broadcast_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 16;
        vulkan if plane == 8 => plane::broadcast::call::<f32>(v, 3u32, target),
        default => portable::group_read::<f32>(v, 3u32, 8u32),
    }
}

#[islands]
#[cube]
pub fn broadcast_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan if plane == 32 => plane::broadcast::call::<f32>(v, 17u32, target),
        default => portable::group_read::<f32>(v, 17u32, 32u32),
    }
}

/// The `default` of the i8 tile: a plain triple loop, each lane its 8 consecutive outputs.
#[cube]
fn tile_i8_scalar(a: &[i8], b: &[i8], c: &mut [i32]) {
    let lane = UNIT_POS % 32;
    #[unroll]
    for j in 0..8u32 {
        let e = lane * 8 + j;
        let (row, col) = (e / 16, e % 16);
        let mut sum = c[e as usize];
        for k in 0..32u32 {
            sum += i32::cast_from(a[(row * 32 + k) as usize]) * i32::cast_from(b[(k * 16 + col) as usize]);
        }
        c[e as usize] = sum;
    }
}

#[islands]
#[cube]
pub fn mma_i8(a: &[i8], b: &[i8], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[i8; 512], b: &[i8; 512], c: &mut [i32; 256]), cube_dim = 32;
        cuda | hip if cmma(i8, i8, i32, 16, 16, 16) => mma::tile_i8::call(a, 32u32, b, 16u32, mma::Layout::RowMajor, c, 16u32, 2u32, target),
        default => tile_i8_scalar(a, b, c),
    }
}

#[islands]
#[cube]
pub fn mma_f16(a: &[f16], b: &[f16], c: &mut [f32], #[comptime] target: Target) {
    island! {
        proof(a: &[f16; 256], b: &[f16; 256], c: &mut [f32; 256]), cube_dim = 32,
            contract = accumulation(32, "tensor cores add f16 products in an order and internal precision NVIDIA does not specify",
                                    exact_where = mma::f16_modelled);
        cuda if cmma(f16, f16, f32, 16, 16, 16) => mma::tile_f16::call(a, 16u32, b, 16u32, c, 16u32, 1u32, target),
        default => portable::tile_f16_fused(a, 16u32, b, 16u32, c, 16u32, 1u32),
    }
}

#[islands]
#[cube]
pub fn stream_load(src: &[i32], index: usize, #[comptime] target: Target) -> i32 {
    island! {
        proof(src: &[i32; 64], index: usize = UNIT_POS as usize) -> i32, cube_dim = 64;
        cuda => stream::load::call(src, index, target),
        default => src[index],
    }
}

#[islands]
#[cube]
pub fn stream_load_x4(src: &[Vector<i32, Const<4>>], index: usize, #[comptime] target: Target) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 64], index: usize = UNIT_POS as usize) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda => stream::load_x4::call(src, index, target),
        default => src[index],
    }
}
