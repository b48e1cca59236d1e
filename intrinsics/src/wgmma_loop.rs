//! A cube's whole `k` loop on Hopper, in one asm statement: TMA boxes ([`crate::tma`]) fill a
//! ring of shared-memory stages, each warpgroup runs its `wgmma`s ([`crate::wgmma`]) on every
//! stage, and [`crate::mbarrier`] barriers pass the stages between them. One intrinsic because of what CubeCL 0.11's inline asm cannot express: between two asm
//! statements the C++ compiler owns the accumulator registers, so a `wgmma` call must wait for
//! its instructions before it returns ([`crate::wgmma`]'s module docs). Inside one statement the
//! accumulators stay in the statement's own registers for the whole loop, so each stage's
//! `wgmma`s run while the warpgroup waits for the next stage: the tensor cores are fed across
//! stages instead of draining at each.
//!
//! The stages: `stages` slots, each an `a` box of `tile_a.box_rows` rows (64 per warpgroup) and a
//! `bᵀ` box of `tile_b.box_rows` rows (the `wgmma`'s `N`), 128 bytes of `k` each, at the 128-byte
//! swizzle ([`LAYOUT`]). Stage `s` (bytes `128·s…` of each row) lands in slot `s % stages`.
//! Barriers `0..stages` of `bars` say a slot is full (one arrival, the boxes' bytes),
//! `stages..2·stages` that every unit has read it.
//!
//! What one call does, every unit of the cube calling it:
//! 1. Unit 0 initializes the barriers, acquires both maps, and issues the first `stages` stages;
//!    then a cube barrier.
//! 2. For each stage `s`: wait for the slot's "full" phase; issue the warpgroup's four
//!    `wgmma` m64n`N`k32 steps on its 64 rows of `a` and the whole `bᵀ` box, then wait until only
//!    these are in flight, so stage `s − 1`'s are complete; arrive on stage `s − 1`'s "empty"
//!    barrier. Unit 0 then waits for that phase (every unit has read stage `s − 1`) and refills
//!    the slot with stage `s − 1 + stages`.
//! 3. Wait for the last `wgmma`s; the result is the accumulator fragment of
//!    [`crate::wgmma::m64n_k32_s8`].
//!
//! Emulation: the same steps in order with each intrinsic's emulation: unit 0 copies a stage at
//! once (from the tensor passed beside each map), a wait is a cube barrier, each stage's
//! products are [`crate::wgmma::m64n_k32_s8`]'s emulation, exact in any order. What it cannot
//! catch: a wrong parity, arrival count, byte count or slot reuse in the native loop (natively
//! a wait that never completes, which traps after 2^22 polls, or a stage read while it is
//! refilled), and the descriptors' start addresses. The conformance check
//! ([`wgmma_loop_tma`]: two warpgroups, two slots reused in both parities, native against
//! emulation) and the GEMM's whole-output comparisons cover those on the device.

use crate::wgmma::{Layout, Swizzle};
use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;
use island_runtime::tensor_map::TmaTile;

/// Bytes of `k` per stage: one 128-byte swizzled row.
pub const STAGE_K: u32 = 128;

/// The stages' layout: rows of 128 bytes of `k`, 16-byte chunks XORed with the row's low three
/// bits, 8-row groups 1 KiB apart (`wgmma`'s 128-byte swizzle, as the TMA box lands).
pub const LAYOUT: Layout = Layout { swizzle: Swizzle::B128, leading: 16, stride: 1024 };

/// The inline PTX of the loop (see [`tma_s8`]'s `cuda`): operands `%0…` the results, then the
/// accumulator's inputs, then the generic addresses of the slots and of the barriers and of both
/// maps, the boxes' rows `ya` and `yb`, and one word holding the stage count (bits 0…15), the
/// unit's warpgroup (bits 16…30) and whether it issues the copies (bit 31). CubeCL's asm names
/// at most ten operands, hence the packing.
pub(crate) fn loop_ptx(n: u32, stages: u32, tile_a: TmaTile, tile_b: TmaTile) -> String {
    let v = n / 2;
    let (a_bytes, b_bytes) = (tile_a.box_size(), tile_b.box_size());
    let tx = a_bytes + b_bytes;
    let op = |i: u32| format!("%{}", 2 * v + i);
    let (pt, pbar, map_a, map_b, ya, yb, ctl) = (op(0), op(1), op(2), op(3), op(4), op(5), op(6));
    let regs = (0..v).map(|i| format!("t{i}")).collect::<Vec<_>>().join(", ");
    let bits = LAYOUT.descriptor_bits();
    let mut p = String::from("{\n");
    p += &format!(".reg .b32 t<{v}>;\n");
    p += ".reg .u64 w, da0, db0, da, db, st;\n";
    p += ".reg .u32 sa, sb, sbar, kt, tiles, slot, par, pslot, ppar, n, full, empty, nxt, x, dst;\n";
    p += ".reg .pred p, lead, one;\n";
    for i in 0..v {
        p += &format!("mov.b32 t{i}, %{};\n", v + i);
    }
    // Shared addresses of the slots and barriers, and the descriptors of slot 0.
    p += &format!("cvta.to.shared.u64 w, {pt};\ncvt.u32.u64 sa, w;\nadd.u32 sb, sa, {};\n", stages * a_bytes);
    p += &format!("cvta.to.shared.u64 w, {pbar};\ncvt.u32.u64 sbar, w;\n");
    p += &format!(
        "bfe.u32 x, {ctl}, 16, 15;\nmad.lo.u32 x, x, {}, sa;\ncvt.u64.u32 w, x;\nand.b64 w, w, 262143;\nshr.u64 w, w, 4;\nor.b64 da0, w, {bits};\n",
        64 * STAGE_K
    );
    p += &format!("cvt.u64.u32 w, sb;\nand.b64 w, w, 262143;\nshr.u64 w, w, 4;\nor.b64 db0, w, {bits};\n");
    p += "mov.u32 x, 1;\nsetp.ne.u32 one, x, 0;\n";
    p += &format!("and.b32 tiles, {ctl}, 65535;\nshr.u32 x, {ctl}, 31;\nsetp.ne.u32 lead, x, 0;\n");
    // The stage's slot and parity, and the previous stage's, counted without a division.
    p += "mov.u32 kt, 0;\nmov.u32 slot, 0;\nmov.u32 par, 0;\nmov.u32 pslot, 0;\nmov.u32 ppar, 0;\n";
    p += "setp.eq.u32 p, tiles, 0;\n@p bra END;\n";
    p += "LOOP:\n";
    p += "mad.lo.u32 full, slot, 8, sbar;\nmov.u32 n, 0;\n";
    p += "WAITF:\nmbarrier.try_wait.parity.shared::cta.b64 p, [full], par;\n@p bra READY;\n";
    p += "add.u32 n, n, 1;\nsetp.lt.u32 p, n, 4194304;\n@p bra WAITF;\ntrap;\nREADY:\n";
    p += &format!("mul.wide.u32 w, slot, {};\nadd.u64 da, da0, w;\n", a_bytes >> 4);
    p += &format!("mul.wide.u32 w, slot, {};\nadd.u64 db, db0, w;\n", b_bytes >> 4);
    p += "wgmma.fence.sync.aligned;\n";
    for s in 0..STAGE_K / 32 {
        if s > 0 {
            p += &format!("add.s64 da, da, {};\nadd.s64 db, db, {};\n", LAYOUT.k_step() >> 4, LAYOUT.k_step() >> 4);
        }
        // The scale-d predicate is true: every step accumulates.
        p += &format!("wgmma.mma_async.sync.aligned.m64n{n}k32.s32.s8.s8 {{{regs}}}, da, db, one;\n");
    }
    p += "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;\n";
    // Stage kt - 1's `wgmma`s are complete: arrive on its "empty" barrier; unit 0 refills its slot.
    p += "setp.eq.u32 p, kt, 0;\n@p bra NEXT;\n";
    p += &format!("mad.lo.u32 empty, pslot, 8, sbar;\nadd.u32 empty, empty, {};\n", 8 * stages);
    p += "mbarrier.arrive.shared::cta.b64 st, [empty];\n@!lead bra NEXT;\n";
    p += &format!("add.u32 nxt, kt, {};\nsetp.ge.u32 p, nxt, tiles;\n@p bra NEXT;\nmov.u32 n, 0;\n", stages - 1);
    p += "WAITE:\nmbarrier.try_wait.parity.shared::cta.b64 p, [empty], ppar;\n@p bra FILL;\n";
    p += "add.u32 n, n, 1;\nsetp.lt.u32 p, n, 4194304;\n@p bra WAITE;\ntrap;\nFILL:\n";
    p += &format!("mad.lo.u32 full, pslot, 8, sbar;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [full], {tx};\n");
    p += &format!("mul.lo.u32 x, nxt, {STAGE_K};\n");
    p += &format!("mad.lo.u32 dst, pslot, {a_bytes}, sa;\n");
    p += &format!(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [{map_a}, {{x, {ya}}}], [full];\n"
    );
    p += &format!("mad.lo.u32 dst, pslot, {b_bytes}, sb;\n");
    p += &format!(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [{map_b}, {{x, {yb}}}], [full];\n"
    );
    p += "NEXT:\nbar.warp.sync 0xffffffff;\nmov.u32 pslot, slot;\nmov.u32 ppar, par;\nadd.u32 slot, slot, 1;\n";
    p += &format!("setp.eq.u32 p, slot, {stages};\n@p mov.u32 slot, 0;\n@p xor.b32 par, par, 1;\n");
    p += "add.u32 kt, kt, 1;\nsetp.lt.u32 p, kt, tiles;\n@p bra LOOP;\n";
    p += "END:\nwgmma.wait_group.sync.aligned 0;\n";
    for i in 0..v {
        p += &format!("mov.b32 %{i}, t{i};\n");
    }
    p += "}\n";
    p
}

/// The whole `k` loop of a cube of warpgroups over `k_tiles` stages (the module's steps): `c`
/// plus, for this unit's warpgroup, its 64 rows of the `a` boxes (rows `ya…` of `map_a`'s
/// tensor) times the `bᵀ` boxes (rows `yb…` of `map_b`'s), `k` from 0 to `128·k_tiles`; `c` and
/// the result are this unit's fragment of `N / 2` registers ([`crate::wgmma::m64n_k32_s8`]'s
/// layout, `2·N` = `tile_b.box_rows`). `tiles` holds the cube's shared slots, 1024-byte aligned:
/// `stages` `a` boxes, then `stages` `bᵀ` boxes; `bars` its `2·stages` barriers; `a` and `bt`
/// are the tensors the maps describe (`k_tiles` below 2^16).
#[intrinsic(
    name = "wgmma_loop::tma<s8>",
    semantics = synchronizing("the pipeline's barrier phases, slot reuse and the tensor-core groups in flight"),
    summary = "a cube's whole k loop: TMA boxes into a ring of 128-byte-swizzled stages, per stage four m64nNk32 s8 wgmmas per warpgroup kept in flight one stage deep, mbarriers between them (sm_90a)",
    check = crate::wgmma_loop::wgmma_loop_tma,
    lowerings(cuda if sm == 90 => "wgmma.wait_group.sync.aligned 1" sass "IGMMA"),
)]
pub mod tma_s8 {
    use crate::wgmma::WARPGROUP;
    use crate::wgmma_loop::{LAYOUT, STAGE_K, loop_ptx};
    use cubecl::prelude::*;
    use island_runtime::tensor_map::TmaTile;

    /// The CUDA lowering: the setup in CubeCL through the intrinsics' own lowerings, then the
    /// loop in one asm statement ([`loop_ptx`]) whose registers hold the accumulator throughout.
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn cuda<N: Size>(
        tiles: &mut [Vector<i32, Const<4>>],
        bars: &mut [u64],
        map_a: &[u32],
        ya: u32,
        map_b: &[u32],
        yb: u32,
        c: Vector<i32, N>,
        k_tiles: u32,
        #[comptime] stages: u32,
        #[comptime] tile_a: TmaTile,
        #[comptime] tile_b: TmaTile,
    ) -> Vector<i32, N> {
        let units = comptime!(tile_a.box_rows / 64 * WARPGROUP);
        let (a_words, b_words) = (comptime!(tile_a.box_size() / 16), comptime!(tile_b.box_size() / 16));
        if UNIT_POS == 0 {
            for i in 0..stages {
                crate::mbarrier::init::cuda(bars, i, 1u32);
                crate::mbarrier::init::cuda(bars, stages + i, units);
            }
            crate::tma::acquire_map::cuda(map_a);
            crate::tma::acquire_map::cuda(map_b);
            for s in 0..stages {
                if s < k_tiles {
                    crate::tma::arrive_expect_tx::cuda(bars, s, comptime!(tile_a.box_size() + tile_b.box_size()));
                    crate::tma::load_2d::cuda(tiles, s * a_words, map_a, s * 8, ya, bars, s);
                    crate::tma::load_2d::cuda(
                        tiles,
                        comptime!(stages * a_words) + s * b_words,
                        map_b,
                        s * 8,
                        yb,
                        bars,
                        s,
                    );
                }
            }
        }
        sync_cube();
        let pt = tiles.slice(0, 1).as_ptr();
        let pbar = bars.slice(0, 1).as_ptr();
        let ta = map_a.slice(0, 1).as_ptr();
        let tb = map_b.slice(0, 1).as_ptr();
        let ctl = k_tiles | ((UNIT_POS / WARPGROUP) << 16) | (u32::cast_from(UNIT_POS == 0) << 31);
        // A vector the caller keeps in a mutable local reaches inline asm as that local's
        // address; the sum with zero is a value (the C++ compiler folds the addition away).
        let c = c + Vector::<i32, N>::new(0i32);
        let d: Vector<i32, N>;
        gpu_asm!(
            "{}// {} {} {} {} {} {} {} {} {}",
            const loop_ptx(2 * N::value() as u32, stages, tile_a, tile_b),
            out(_) d, in(_) c, in(_) pt, in(_) pbar, in(_) ta, in(_) tb, in(_) ya, in(_) yb, in(_) ctl
        );
        d
    }

    /// The steps in order through each intrinsic's emulation: unit 0 copies, waits are cube
    /// barriers, each stage's products in `k` order.
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn emulate<N: Size>(
        tiles: &mut [Vector<i32, Const<4>>],
        bars: &mut [u64],
        a: &[Vector<i32, Const<4>>],
        map_a: &[u32],
        ya: u32,
        bt: &[Vector<i32, Const<4>>],
        map_b: &[u32],
        yb: u32,
        c: Vector<i32, N>,
        k_tiles: u32,
        #[comptime] stages: u32,
        #[comptime] tile_a: TmaTile,
        #[comptime] tile_b: TmaTile,
    ) -> Vector<i32, N> {
        let (a_words, b_words) = (comptime!(tile_a.box_size() / 16), comptime!(tile_b.box_size() / 16));
        let b_first = comptime!(stages * a_words);
        // The copies without the barriers' books: this emulation orders them by cube barriers.
        let _ = (map_a, map_b, bars);
        if UNIT_POS == 0 {
            for s in 0..stages {
                if s < k_tiles {
                    crate::tma::land_box(tiles, s * a_words, a, s * 8, ya, tile_a);
                    crate::tma::land_box(tiles, b_first + s * b_words, bt, s * 8, yb, tile_b);
                }
            }
        }
        let a_off = (UNIT_POS / WARPGROUP) * comptime!(64 * STAGE_K);
        let mut acc = c;
        for kt in 0..k_tiles {
            let slot = kt % stages;
            sync_cube();
            acc = crate::wgmma::m64n_k32_s8::emulate::<N>(
                tiles.slice(0, tiles.len()),
                slot * comptime!(tile_a.box_size()) + a_off,
                tiles.slice(0, tiles.len()),
                (b_first + slot * b_words) * 16,
                acc,
                comptime!(STAGE_K / 32),
                LAYOUT,
                LAYOUT,
            );
            sync_cube();
            let next = kt + stages;
            if UNIT_POS == 0 && next < k_tiles {
                crate::tma::land_box(tiles, slot * a_words, a, next * 8, ya, tile_a);
                crate::tma::land_box(tiles, b_first + slot * b_words, bt, next * 8, yb, tile_b);
            }
        }
        acc
    }
}

// The check: an island whose accelerated arm calls the loop and whose `default` computes the
// same products another way (proven on the CPU, compared natively on devices).

type Word = Vector<i32, Const<4>>;

/// The check's tensors: `a` 128 rows and `bᵀ` 16 rows of 640 bytes (five stages).
const K: u32 = 640;
const N: u32 = 16;
/// Its boxes: both warpgroups' rows of `a`, all of `bᵀ`, one stage each.
pub const TILE_A: TmaTile = TmaTile { row_bytes: K, box_rows: 128, box_bytes: STAGE_K, swizzle: 128 };
pub const TILE_B: TmaTile = TmaTile { row_bytes: K, box_rows: N, box_bytes: STAGE_K, swizzle: 128 };
/// Two slots for five stages: every slot reused, in both parities.
const STAGES: u32 = 2;

/// Two warpgroups' 128×16 block of `a · b` (row-major `c`) over five stages through two slots:
/// a wrong slot, parity, descriptor offset, warpgroup offset or refill shows in the products (or
/// stalls, then traps).
#[islands]
#[cube]
pub fn wgmma_loop_tma(
    a: &[Word],
    map_a: &[u32],
    bt: &[Word],
    map_b: &[u32],
    c: &mut [i32],
    #[comptime] target: Target,
) {
    island! {
        proof(
            a: &[Vector<i32, Const<4>>; 5120],
            map_a: tensor_map(a, crate::wgmma_loop::TILE_A),
            bt: &[Vector<i32, Const<4>>; 640],
            map_b: tensor_map(bt, crate::wgmma_loop::TILE_B),
            c: &mut [i32; 2048],
        ), cube_dim = 256;
        cuda if sm == 90 => {
            let mut tiles = Shared::<[Word]>::new_aligned_slice(
                comptime!((STAGES * (TILE_A.box_size() + TILE_B.box_size()) / 16) as usize),
                1024usize,
            );
            let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!((2 * STAGES) as usize), 8usize);
            let d = tma_s8::call::<Const<8>>(
                &mut tiles, &mut bars, a, map_a, 0u32, bt, map_b, 0u32, Vector::<i32, Const<8>>::new(0i32),
                comptime!(K / STAGE_K), STAGES, TILE_A, TILE_B, target,
            );
            let (group, unit) = (UNIT_POS / 128, UNIT_POS % 128);
            let (warp, g, t) = (unit / 32, (unit % 32) / 4, unit % 4);
            #[unroll]
            for r in 0..8u32 {
                let row = group * 64 + 16 * warp + g + 8 * ((r / 2) % 2);
                let col = 8 * (r / 4) + 2 * t + r % 2;
                c[(row * N + col) as usize] = d.extract(r as usize);
            }
        },
        default => {
            let words = comptime!(K / 16);
            for j in 0..8u32 {
                let e = UNIT_POS * 8 + j;
                let (row, col) = (e / N, e % N);
                let mut sum = 0i32;
                for w in 0..comptime!(K / 4) {
                    let x = a[(row * words + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    let y = bt[(col * words + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    sum = island_portable::dot4_i8(x, y, sum);
                }
                c[e as usize] = sum;
            }
        },
    }
}
