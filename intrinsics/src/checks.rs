//! The check of every intrinsic: an island whose accelerated arm calls the intrinsic and whose
//! `default` computes the same function another way. The registry proves each on the CPU
//! (emulation against `default`), the conformance run compares each arm's native lowering with
//! its emulation on a real device, and the lowering check compiles each for its backends.
//!
//! Plane operations are checked once per plane width, since `default` must know the width
//! the arm computes with: 8 (lavapipe), 32 (NVIDIA, Apple, AMD wave32, most Vulkan), 64 (AMD
//! wave64). Each check's cube holds two planes, so a reduction that leaks across planes shows.

use crate::{cp_async, ldmatrix, mma, mma_sync, plane, portable, stream};
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

/// A shuffle over a partial plane: the lanes of an 8-lane plane at and past `n[0] % 9` hold no
/// data (their producer ran behind `if lane < n`), so a lane whose own value or whose partner's
/// is missing has no defined result. Proven modulo those lanes, with a taint run: neither side
/// may read a missing lane into a defined one.
#[islands]
#[cube]
pub fn partial_shuffle_xor_w8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 16,
            dont_care = UNIT_POS % 8 >= n[0] % 9 || (UNIT_POS % 8) ^ 1 >= n[0] % 9;
        vulkan if plane == 8 => v + plane::shuffle_xor::call::<f32>(v, 1u32, target),
        default => v + portable::group_read::<f32>(v, (UNIT_POS % 8) ^ 1, 8u32),
    }
}

/// [`partial_shuffle_xor_w8`] on a 32-lane plane, partner `lane ^ 3`.
#[islands]
#[cube]
pub fn partial_shuffle_xor_w32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 64,
            dont_care = UNIT_POS % 32 >= n[0] % 33 || (UNIT_POS % 32) ^ 3 >= n[0] % 33;
        cuda | vulkan | metal | webgpu if plane == 32 => v + plane::shuffle_xor::call::<f32>(v, 3u32, target),
        default => v + portable::group_read::<f32>(v, (UNIT_POS % 32) ^ 3, 32u32),
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
pub fn stream_load_x4(
    src: &[Vector<i32, Const<4>>],
    index: usize,
    #[comptime] target: Target,
) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 64], index: usize = UNIT_POS as usize) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda => stream::load_x4::call(src, index, target),
        default => src[index],
    }
}

/// The `default` of the `mma.sync` check: warp `w`'s 16×8 tile, each lane its 4 consecutive
/// outputs, `c + Σ a·b` over packed words with [`portable::dot4_i8`].
#[cube]
fn m16n8k32_scalar(a: &[i32], b: &[i32], c: &mut [i32]) {
    let (w, lane) = (UNIT_POS / 32, UNIT_POS % 32);
    #[unroll]
    for j in 0..4u32 {
        let e = lane * 4 + j;
        let (row, col) = (e / 8, e % 8);
        let mut sum = c[(w * 128 + e) as usize];
        for kw in 0..8u32 {
            sum = portable::dot4_i8(a[(w * 128 + row * 8 + kw) as usize], b[(w * 64 + col * 8 + kw) as usize], sum);
        }
        c[(w * 128 + e) as usize] = sum;
    }
}

/// `mma.sync` m16n8k32 on each warp's own tile: `a` 16×32 row-major, `b` 32×8 column-major
/// (each column's 32 bytes contiguous) and `c` 16×8 row-major, bytes packed in words. The arm
/// builds the fragments with the PTX layout ([`mma_sync`]) from plain loads.
#[islands]
#[cube]
pub fn mma_sync_m16n8k32(a: &[i32], b: &[i32], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[i32; 256], b: &[i32; 128], c: &mut [i32; 256]), cube_dim = 64;
        cuda if sm >= 80 => {
            let (w, lane) = (UNIT_POS / 32, UNIT_POS % 32);
            let (g, t) = (lane / 4, lane % 4);
            let mut fa = Vector::<i32, Const<4>>::empty();
            let mut fc = Vector::<i32, Const<4>>::empty();
            #[unroll]
            for r in 0..4u32 {
                fa.insert(r as usize, a[(w * 128 + (g + 8 * (r % 2)) * 8 + 4 * (r / 2) + t) as usize]);
                fc.insert(r as usize, c[(w * 128 + (g + 8 * (r / 2)) * 8 + 2 * t + r % 2) as usize]);
            }
            let mut fb = Vector::<i32, Const<2>>::empty();
            #[unroll]
            for r in 0..2u32 {
                fb.insert(r as usize, b[(w * 64 + g * 8 + 4 * r + t) as usize]);
            }
            let d = mma_sync::m16n8k32_s8::call(fa, fb, fc, target);
            #[unroll]
            for r in 0..4u32 {
                c[(w * 128 + (g + 8 * (r / 2)) * 8 + 2 * t + r % 2) as usize] = d.extract(r as usize);
            }
        },
        default => m16n8k32_scalar(a, b, c),
    }
}

/// The row of the check's tile that unit `u` names: a permutation of the 64 rows, different
/// for each warp.
#[cube]
fn named_row(u: u32) -> u32 {
    (u * 13 + 7) % 64
}

/// `ldmatrix.x4` on a shared tile of 64 rows of 16 bytes, each lane naming a permuted row.
#[islands]
#[cube]
pub fn ldmatrix_x4(src: &[Vector<i32, Const<4>>], #[comptime] target: Target) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 64]) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda if sm >= 80 => {
            let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_slice(64usize);
            tile[UNIT_POS as usize] = src[UNIT_POS as usize];
            sync_cube();
            ldmatrix::x4::call(&tile, named_row(UNIT_POS), target)
        },
        default => {
            let (w, lane) = (UNIT_POS / 32, UNIT_POS % 32);
            let mut v = Vector::<i32, Const<4>>::empty();
            #[unroll]
            for j in 0..4u32 {
                v.insert(j as usize, src[named_row(w * 32 + 8 * j + lane / 4) as usize].extract_dynamic((lane % 4) as usize));
            }
            v
        },
    }
}

/// Two groups of `cp.async` copies into a shared tile, waited for, then each unit reads a
/// chunk another unit copied.
#[islands]
#[cube]
pub fn cp_async_copy(src: &[Vector<i32, Const<4>>], #[comptime] target: Target) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 128]) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda if sm >= 80 => {
            let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_slice(128usize);
            cp_async::copy16::call(&mut tile, UNIT_POS, src, (UNIT_POS * 37 + 5) % 128, target);
            cp_async::commit::call(target);
            cp_async::copy16::call(&mut tile, UNIT_POS + 64, src, ((UNIT_POS + 64) * 37 + 5) % 128, target);
            cp_async::commit::call(target);
            cp_async::wait::call(0u32, target);
            sync_cube();
            tile[((UNIT_POS + 17) % 128) as usize]
        },
        default => src[(((UNIT_POS + 17) % 128) * 37 + 5) as usize % 128],
    }
}
