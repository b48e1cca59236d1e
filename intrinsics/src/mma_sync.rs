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

use island_runtime::intrinsic;

/// The lanes of the warp `mma.sync` runs on.
pub const WARP: u32 = 32;

/// `a · b + c` on one 16×8×32 tile, from and to this lane's fragments (layout above).
#[intrinsic(
    name = "mma_sync::m16n8k32<s8>",
    semantics = defined,
    summary = "16×8 s32 tile = 16×32 s8 · 32×8 s8 + c, on per-lane register fragments, one warp (sm_80+)",
    check = crate::checks::mma_sync_m16n8k32,
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
