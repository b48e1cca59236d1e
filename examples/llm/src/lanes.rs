//! The fixed order of every long sum in the engine's definitions: a *lane sum*.
//!
//! A lane sum of `count` terms over `L` lanes (a power of two) is `L` partial sums, lane `l`
//! folding terms `l, l + L, l + 2L, …` in order from `+0.0`, then the `L` partials added
//! pairwise, neighbours first: `((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))`. The tree
//! [`flush`]es: each partial, and each pairwise sum, is a zero of its sign where it is subnormal.
//! So a device that flushes subnormal operands and results of float arithmetic (NVIDIA's Vulkan
//! driver, which offers no `DenormPreserve`) computes the definition's bits, and so does every
//! other device, with the flush written out. The order belongs to the definition, not to a
//! device: it does not depend on a plane width, a core count or a launch shape. How the work is
//! spread does:
//!
//! - `width` [`units`] share one lane sum: each holds `L / width` consecutive lanes, folds its
//!   own partials in registers (pairwise, the same tree's lower levels), and the group adds the
//!   rest of the tree across units with [`tree8`] or [`tree32`]: plane shuffles where a device
//!   has them and they are taken (`xor 1, 2, 4, …`, the same tree: `a + b = b + a` in IEEE
//!   arithmetic, so both units of a pair hold the same bits).
//! - On the CPU runtime (plane size 1, where a barrier costs a thread per unit), or where the
//!   exchange is not taken, `width` is 1: each unit computes every lane and the whole tree.
//!
//! Either way the bytes are the definition's; [`crate::reference`] computes them serially.

use crate::math::flush;
use cubecl::prelude::*;
use island_intrinsics::{plane, portable};
use island_runtime::prelude::*;
use island_runtime::{Selection, Target};

/// The lanes of a matvec row's sum over its blocks, and of attention's weighted sum over the
/// cached positions.
pub const LANES_8: u32 = 8;
/// The lanes of a sum over a whole vector: RMSNorm's squares, softmax's exponentials.
pub const LANES_32: u32 = 32;

/// The sum over each aligned group of 8 units, neighbours first, [`flush`]ed as the lane sum's
/// tree is, received by every unit of the group. Every unit of the cube must call it
/// (`default` synchronises the cube).
#[islands]
#[cube]
pub fn tree8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan | metal | webgpu if plane >= 8 => {
            let v = flush(v);
            let a = flush(v + plane::shuffle_xor::call::<f32>(v, 1u32, target));
            let b = flush(a + plane::shuffle_xor::call::<f32>(a, 2u32, target));
            flush(b + plane::shuffle_xor::call::<f32>(b, 4u32, target))
        },
        default => group_tree(v, 8u32),
    }
}

/// The sum over each aligned group of 32 units, neighbours first, received by every unit of
/// the group (as [`tree8`]).
#[islands]
#[cube]
pub fn tree32(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan | metal | webgpu if plane >= 32 => {
            let v = flush(v);
            let a = flush(v + plane::shuffle_xor::call::<f32>(v, 1u32, target));
            let b = flush(a + plane::shuffle_xor::call::<f32>(a, 2u32, target));
            let c = flush(b + plane::shuffle_xor::call::<f32>(b, 4u32, target));
            let d = flush(c + plane::shuffle_xor::call::<f32>(c, 8u32, target));
            flush(d + plane::shuffle_xor::call::<f32>(d, 16u32, target))
        },
        default => group_tree(v, 32u32),
    }
}

/// The maximum over each aligned group of 8 units ([`portable::max_signed_zero`] at each
/// step, neighbours first), received by every unit of the group: a quantization block's
/// maximum magnitude, where each of its 8 units holds four of its values. A maximum of
/// magnitudes does not depend on its order, so this is the bits of one unit's maximum over the
/// whole block. Every unit of the cube must call it (`default` synchronises the cube).
#[islands]
#[cube]
pub fn max8(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 64;
        cuda | vulkan | metal | webgpu if plane >= 8 => {
            let a = portable::max_signed_zero::<f32>(v, plane::shuffle_xor::call::<f32>(v, 1u32, target));
            let b = portable::max_signed_zero::<f32>(a, plane::shuffle_xor::call::<f32>(a, 2u32, target));
            portable::max_signed_zero::<f32>(b, plane::shuffle_xor::call::<f32>(b, 4u32, target))
        },
        default => portable::tree_max::<f32>(v, 8u32),
    }
}

/// The units that share one lane sum of `lanes` lanes (8 or 32) on `target`: `lanes` where the
/// tree's accelerated arm is taken, else 1.
pub fn units(target: &Target, lanes: u32) -> u32 {
    let site = match lanes {
        LANES_8 => island_runtime::sites_of!(tree8)[0],
        LANES_32 => island_runtime::sites_of!(tree32)[0],
        _ => return 1,
    };
    if matches!(target.explain(site), Selection::Arm(_)) { lanes } else { 1 }
}

/// The units that share one quantization block's maximum on `target`: 8 (one a word) where
/// [`max8`]'s accelerated arm is taken, else 1 (each unit computes the whole block).
pub fn block_units(target: &Target) -> u32 {
    if matches!(target.explain(island_runtime::sites_of!(max8)[0]), Selection::Arm(_)) { 8 } else { 1 }
}

/// The lane sum's tree of each aligned group of `width` units' values, through shared memory:
/// [`tree8`]'s and [`tree32`]'s `default`.
#[cube]
fn group_tree(v: f32, #[comptime] width: u32) -> f32 {
    let mut p = portable::group_values::<f32>(v, width);
    fold(&mut p, width);
    p[0]
}

/// The lane sum's tree over the first `n` values of `p` (a power of two): each value and each
/// pairwise sum [`flush`]ed, neighbours first, in place; `p[0]` holds it.
#[cube]
pub fn fold(p: &mut Array<f32>, #[comptime] n: u32) {
    fold_at(p, 0, n);
}

/// [`fold`] of the `n` values of `p` from `at`; `p[at]` holds their sum.
#[cube]
pub fn fold_at(p: &mut Array<f32>, at: usize, #[comptime] n: u32) {
    #[unroll]
    for j in 0..comptime!(n as usize) {
        p[at + j] = flush(p[at + j]);
    }
    #[unroll]
    for level in 0..comptime!(n.trailing_zeros()) {
        #[unroll]
        for j in 0..comptime!((n >> (level + 1)) as usize) {
            p[at + j] = flush(p[at + 2 * j] + p[at + 2 * j + 1]);
        }
    }
}

/// The lane sum of a group of `width` units (1, or `lanes` as [`units`] gives) sharing
/// `lanes` lanes, each unit's partials folded already into `own`: the rest of the tree, across
/// the group.
#[cube]
pub fn across(own: f32, #[comptime] lanes: u32, #[comptime] width: u32, #[comptime] target: Target) -> f32 {
    let mut s = own;
    if comptime!(width > 1 && lanes == LANES_8) {
        s = tree8(own, target);
    } else if comptime!(width > 1) {
        s = tree32(own, target);
    }
    s
}
