//! Warp-level matrix multiply-accumulate on register fragments: PTX `mma.sync` with the int8
//! shape m16n8k32 (sm_80 and later), the instruction CUTLASS-style GEMMs are built from.
//!
//! `d[16×8] = a[16×32] · b[32×8] + c`, s8 inputs, s32 accumulators, one warp of 32 lanes. Each
//! lane holds a slice of every operand in registers, as the PTX ISA lays them out
//! ("Matrix Fragments for mma.m16n8k32"), with `g = lane / 4` and `t = lane % 4`:
//!
//! | operand | registers | register `r`, byte `i` holds |
//! |---|---|---|
//! | `a` | 4 × b32 | row `g + 8·(r % 2)`, column `16·(r / 2) + 4t + i` |
//! | `b` | 2 × b32 | row (k) `16·r + 4t + i`, column `g` |
//! | `c`, `d` | 4 × s32 | row `g + 8·(r / 2)`, column `2t + r % 2` |
//!
//! `ldmatrix` ([`crate::ldmatrix`]) loads exactly these fragments from a row-major `a` and a
//! column-major `b` (each output column's 32 bytes contiguous).
//!
//! Emulation: the lanes of the (emulated) warp exchange their fragments through shared memory
//! and each lane computes its four outputs from the gathered tiles. Integer products and
//! wrapping sums are exact in any order, so the emulation is bit-exact whatever order the
//! tensor cores add in; the conformance check shows the native instruction agrees, fragment
//! layout included.

use cubecl::prelude::*;
use island_portable as portable;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

/// The lanes of the warp `mma.sync` runs on.
pub const WARP: u32 = 32;

/// `a · b + c` on one 16×8×32 tile, from and to this lane's fragments (layout above).
#[intrinsic(
    name = "mma_sync::m16n8k32<s8>",
    semantics = defined,
    summary = "16×8 s32 tile = 16×32 s8 · 32×8 s8 + c, on per-lane register fragments, one warp (sm_80+)",
    check = crate::mma_sync::mma_sync_m16n8k32,
    lowerings(cuda => "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" sass "IMMA.16832.S8.S8"),
)]
pub mod m16n8k32_s8 {
    use crate::mma_sync::WARP;
    use cubecl::prelude::*;
    use island_runtime::emulation;

    /// The CUDA lowering, also for kernels written for CUDA alone. Registers are passed as
    /// scalar operands (a vector the caller keeps in a mutable local would reach inline asm as
    /// that local's address), `b`'s two packed in one 64-bit operand: CubeCL numbers operands
    /// `$0`…`$9` and substitutes `$1` inside `$10`, so an asm statement takes at most ten.
    #[cube]
    pub fn cuda(a: Vector<i32, Const<4>>, b: Vector<i32, Const<2>>, c: Vector<i32, Const<4>>) -> Vector<i32, Const<4>> {
        let (a0, a1, a2, a3) = (a.extract(0usize), a.extract(1usize), a.extract(2usize), a.extract(3usize));
        let b01 = (u64::cast_from(b.extract(1usize) as u32) << 32) | u64::cast_from(b.extract(0usize) as u32);
        let (c0, c1, c2, c3) = (c.extract(0usize), c.extract(1usize), c.extract(2usize), c.extract(3usize));
        let d: Vector<i32, Const<4>>;
        gpu_asm!(
            "{{ .reg .b32 b0, b1; mov.b64 {{b0, b1}}, {}; mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {}, {{{}, {}, {}, {}}}, {{b0, b1}}, {{{}, {}, {}, {}}}; }}",
            in(_) b01, out(_) d, in(_) a0, in(_) a1, in(_) a2, in(_) a3, in(_) c0, in(_) c1, in(_) c2, in(_) c3,
            options(pure, nomem)
        );
        d
    }

    /// The warp's fragments gathered, each lane's four outputs summed in `k` order, word by
    /// word with [`crate::dp4a`]'s emulation.
    #[cube]
    pub fn emulate(
        a: Vector<i32, Const<4>>,
        b: Vector<i32, Const<2>>,
        c: Vector<i32, Const<4>>,
    ) -> Vector<i32, Const<4>> {
        let lanes_a = emulation::gather::<Vector<i32, Const<4>>>(a, WARP);
        let lanes_b = emulation::gather::<Vector<i32, Const<2>>>(b, WARP);
        let lane = UNIT_POS % WARP;
        let (g, t) = (lane / 4, lane % 4);
        let mut d = c;
        #[unroll]
        for r in 0..4usize {
            let row = g + 8 * (r as u32 / 2);
            let col = 2 * t + r as u32 % 2;
            let mut sum = c.extract(r);
            // Words in `k` order: word `w` holds k = 4w … 4w + 3, in a's register
            // (row / 8) + 2·(w / 4) of lane 4·(row % 8) + w % 4, and in b's register w / 4 of
            // lane 4·col + w % 4.
            for w in 0..8u32 {
                let a_word =
                    lanes_a[(4 * (row % 8) + w % 4) as usize].extract_dynamic(((row / 8) + 2 * (w / 4)) as usize);
                let b_word = lanes_b[(4 * col + w % 4) as usize].extract_dynamic((w / 4) as usize);
                sum = crate::dp4a::emulate(a_word, b_word, sum);
            }
            d.insert(r, sum);
        }
        d
    }
}

// The checks: islands whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

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
/// builds the fragments with the PTX layout ([`m16n8k32_s8`]) from plain loads.
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
            let d = m16n8k32_s8::call(fa, fb, fc, target);
            #[unroll]
            for r in 0..4u32 {
                c[(w * 128 + (g + 8 * (r / 2)) * 8 + 2 * t + r % 2) as usize] = d.extract(r as usize);
            }
        },
        default => m16n8k32_scalar(a, b, c),
    }
}
