//! One consumer warpgroup's `k` loop over one tile of a warp-specialized pipeline on Hopper, in
//! one asm statement: another role of the cube (a producer) fills a ring of shared-memory slots
//! with TMA boxes ([`crate::tma`]) and waits for them to be released; this warpgroup waits for
//! each slot's "full" phase, runs its `wgmma`s ([`crate::wgmma`]) on it, keeps one stage of
//! them in flight, and releases the slot on its "empty" barrier once they are complete. The
//! ring position is the caller's: a persistent kernel walks tile after tile through one ring,
//! passing the stage count so far as `first`, so slots and parities continue across tiles.
//!
//! One intrinsic for the reason [`crate::wgmma_loop`] is one: between two asm statements CubeCL
//! 0.11 hands the accumulator registers to the C++ compiler, so only inside one statement can a
//! stage's `wgmma`s run while the warpgroup waits for the next stage.
//!
//! The ring: `stages` slots (at least 2), slot `s` an `a` box of `tile_a.box_rows` rows (64 per
//! consumer warpgroup) at word `s · tile_a.box_size() / 16` of `tiles`, then after the `stages`
//! `a` boxes the `bᵀ` boxes of `tile_b.box_rows` rows (the `wgmma`'s `N`), 128 bytes of `k`
//! each at [`crate::wgmma_loop::LAYOUT`]. Stage `g` of the ring (counted from the kernel's
//! start) sits in slot `g % stages`; its "full" barrier is `g % stages` of `bars`, completing
//! phase `g / stages` (parity `(g / stages) % 2`), its "empty" barrier `stages + g % stages`,
//! on which lane 0 of every warp of every consumer warpgroup arrives once per stage
//! ([`RELEASES_PER_GROUP`] a warpgroup: one arrival a warp, not one a unit, since arrivals on
//! one barrier serialize).
//!
//! What one call does, every unit of the warpgroup calling it, for `k_tiles` stages from stage
//! `first`: wait for the stage's "full" phase; issue four `wgmma` m64n`N`k32 on the
//! warpgroup's 64 rows of the `a` box (rows `64·group…`) and the whole `bᵀ` box; commit, then
//! wait until only these are in flight, so the previous stage's are complete, and (lane 0 of
//! each warp) arrive on the previous stage's "empty" barrier. After the last stage, wait for every `wgmma` and arrive on
//! its "empty" barrier. The result is the accumulator fragment of [`crate::wgmma::m64n_k32_s8`].
//!
//! Emulation: per stage, the "full" wait through [`crate::mbarrier::wait`]'s emulation (rounds
//! with the other roles' waits, the barriers' books deciding), the stage's products through
//! [`crate::wgmma::m64n_k32_s8`]'s, exact in any order, and the "empty" arrival through
//! [`crate::mbarrier::arrive`]'s, booked as soon as the products are taken (natively after the
//! next stage's wait: with at least two slots neither order can hang where the other does not).
//! So a wrong parity, count or byte total, or a wait the producer skips, fails the CPU proof as
//! the books say (`mbarrier.rs`). What it cannot see: the same mistakes inside the asm text
//! itself (its slot, parity and descriptor arithmetic), which the conformance check
//! ([`wgmma_consume_roles`]: a producer warpgroup and two consumers, two tiles through two slots,
//! native against emulation) and the GEMM's whole-output comparisons cover on the device.

use crate::wgmma_loop::{LAYOUT, STAGE_K};
use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;
use island_runtime::tensor_map::TmaTile;

/// Rows of `a` per consumer warpgroup: the `M` of `wgmma`.
pub const ROWS_PER_GROUP: u32 = 64;

/// Arrivals each consumer warpgroup makes on a slot's "empty" barrier per stage: one per warp
/// (its lane 0). A pipeline initializes "empty" barriers to this times its consumer warpgroups.
pub const RELEASES_PER_GROUP: u32 = 4;

/// The control word's fields (CubeCL's asm names at most ten operands): the stage count in bits
/// 0…15, the first stage's slot in bits 16…23, its parity in bit 24, the warpgroup's rows in
/// bits 25…30.
#[cube]
pub(crate) fn control(first: u32, k_tiles: u32, group: u32, #[comptime] stages: u32) -> u32 {
    k_tiles | ((first % stages) << 16) | (((first / stages) % 2) << 24) | (group << 25)
}

/// The inline PTX of one consumer's loop (see [`consume_s8`]'s `cuda`): operands `%0…` the
/// results, then the accumulator's inputs, then the generic addresses of the slots and of the
/// barriers, and the control word ([`control`]).
pub(crate) fn consume_ptx(n: u32, stages: u32, tile_a: TmaTile, tile_b: TmaTile) -> String {
    let v = n / 2;
    let (a_bytes, b_bytes) = (tile_a.box_size(), tile_b.box_size());
    let op = |i: u32| format!("%{}", 2 * v + i);
    let (pt, pbar, ctl) = (op(0), op(1), op(2));
    let regs = (0..v).map(|i| format!("t{i}")).collect::<Vec<_>>().join(", ");
    let bits = LAYOUT.descriptor_bits();
    let mut p = String::from("{\n");
    p += &format!(".reg .b32 t<{v}>;\n");
    p += ".reg .u64 w, da0, db0, da, db, st;\n";
    p += ".reg .u32 sa, sb, sbar, kt, tiles, slot, par, pslot, n, full, empty, x;\n";
    p += ".reg .pred p, one, lane0;\n";
    for i in 0..v {
        p += &format!("mov.b32 t{i}, %{};\n", v + i);
    }
    // Shared addresses of the slots and barriers; the descriptors of slot 0, the warpgroup's
    // rows 64·group 8 row groups (8 KiB) apart.
    p += &format!("cvta.to.shared.u64 w, {pt};\ncvt.u32.u64 sa, w;\nadd.u32 sb, sa, {};\n", stages * a_bytes);
    p += &format!("cvta.to.shared.u64 w, {pbar};\ncvt.u32.u64 sbar, w;\n");
    p += &format!(
        "bfe.u32 x, {ctl}, 25, 6;\nmad.lo.u32 x, x, {}, sa;\ncvt.u64.u32 w, x;\nand.b64 w, w, 262143;\nshr.u64 w, w, 4;\nor.b64 da0, w, {bits};\n",
        ROWS_PER_GROUP * STAGE_K
    );
    p += &format!("cvt.u64.u32 w, sb;\nand.b64 w, w, 262143;\nshr.u64 w, w, 4;\nor.b64 db0, w, {bits};\n");
    p += "mov.u32 x, 1;\nsetp.ne.u32 one, x, 0;\nmov.u32 x, %laneid;\nsetp.eq.u32 lane0, x, 0;\n";
    p += &format!("and.b32 tiles, {ctl}, 65535;\nbfe.u32 slot, {ctl}, 16, 8;\nbfe.u32 par, {ctl}, 24, 1;\n");
    p += "mov.u32 kt, 0;\nmov.u32 pslot, 0;\n";
    p += "setp.eq.u32 p, tiles, 0;\n@p bra END;\n";
    p += "LOOP:\n";
    p += "mad.lo.u32 full, slot, 8, sbar;\nmov.u32 n, 0;\n";
    p += "WAITF:\nmbarrier.try_wait.parity.shared::cta.b64 p, [full], par;\n@p bra READY;\n";
    p += "add.u32 n, n, 1;\nsetp.lt.u32 p, n, 4194304;\n@p bra WAITF;\ntrap;\nREADY:\nbar.warp.sync 0xffffffff;\n";
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
    // The previous stage's `wgmma`s are complete: release its slot.
    p += "setp.eq.u32 p, kt, 0;\n@p bra NEXT;\n";
    p += &format!("mad.lo.u32 empty, pslot, 8, sbar;\nadd.u32 empty, empty, {};\n", 8 * stages);
    p += "@lane0 mbarrier.arrive.shared::cta.b64 st, [empty];\n";
    p += "NEXT:\nmov.u32 pslot, slot;\nadd.u32 slot, slot, 1;\n";
    p += &format!("setp.eq.u32 p, slot, {stages};\n@p mov.u32 slot, 0;\n@p xor.b32 par, par, 1;\n");
    p += "add.u32 kt, kt, 1;\nsetp.lt.u32 p, kt, tiles;\n@p bra LOOP;\n";
    // The last stage: every `wgmma` complete, then its slot released.
    p += "wgmma.wait_group.sync.aligned 0;\n";
    p += &format!("mad.lo.u32 empty, pslot, 8, sbar;\nadd.u32 empty, empty, {};\n", 8 * stages);
    p += "@lane0 mbarrier.arrive.shared::cta.b64 st, [empty];\n";
    p += "END:\n";
    for i in 0..v {
        p += &format!("mov.b32 %{i}, t{i};\n");
    }
    p += "}\n";
    p
}

/// One consumer warpgroup's `k` loop over `k_tiles` stages of the ring from stage `first` (the
/// module's steps): `c` plus its 64 rows (`64·group…` of each `a` box) times the `bᵀ` boxes, `k`
/// from 0 to `128·k_tiles`; `c` and the result are this unit's fragment of `N / 2` registers
/// ([`crate::wgmma::m64n_k32_s8`]'s layout, `2·N` = `tile_b.box_rows`). `tiles` holds the
/// ring's slots, 1024-byte aligned: `stages` `a` boxes, then `stages` `bᵀ` boxes; `bars` its
/// `2·stages` barriers ("full", then "empty"); `k_tiles` below 2^16, `stages` from 2 to 255.
#[intrinsic(
    name = "wgmma_loop::consume<s8>",
    semantics = synchronizing("the ring's barrier phases across tiles, its slot releases and the tensor-core groups in flight"),
    summary = "one consumer warpgroup's k loop of a warp-specialized pipeline: waits on each slot's full barrier, four m64nNk32 s8 wgmmas a stage kept in flight one stage deep, releases each slot on its empty barrier; the ring's position carried across tiles (sm_90a)",
    check = crate::wgmma_consume::wgmma_consume_roles,
    lowerings(cuda if sm == 90 => "wgmma.wait_group.sync.aligned 1" sass "IGMMA"),
)]
pub mod consume_s8 {
    use crate::wgmma_consume::{ROWS_PER_GROUP, consume_ptx, control};
    use crate::wgmma_loop::{LAYOUT, STAGE_K};
    use cubecl::prelude::*;
    use island_runtime::tensor_map::TmaTile;

    /// The CUDA lowering: the loop in one asm statement ([`consume_ptx`]) whose registers hold
    /// the accumulator throughout.
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn cuda<N: Size>(
        tiles: &[Vector<i32, Const<4>>],
        bars: &mut [u64],
        c: Vector<i32, N>,
        first: u32,
        k_tiles: u32,
        group: u32,
        #[comptime] stages: u32,
        #[comptime] tile_a: TmaTile,
        #[comptime] tile_b: TmaTile,
    ) -> Vector<i32, N> {
        let pt = tiles.slice(0, 1).as_ptr();
        let pbar = bars.slice(0, 1).as_ptr();
        let ctl = control(first, k_tiles, group, stages);
        // A vector the caller keeps in a mutable local reaches inline asm as that local's
        // address; the sum with zero is a value (the C++ compiler folds the addition away).
        let c = c + Vector::<i32, N>::new(0i32);
        let d: Vector<i32, N>;
        gpu_asm!(
            "{}// {} {} {} {} {}",
            const consume_ptx(2 * N::value() as u32, stages, tile_a, tile_b),
            out(_) d, in(_) c, in(_) pt, in(_) pbar, in(_) ctl
        );
        d
    }

    /// Per stage: the "full" wait's emulation (rounds with the other roles), the products in `k`
    /// order, the "empty" arrival of each warp's lane 0 (a cube's units are its lanes in order,
    /// 32 a warp).
    #[cube]
    // `UNIT_POS % 32 == 0` stays as written: CubeCL's expansion has no `is_multiple_of`.
    #[allow(clippy::too_many_arguments, clippy::manual_is_multiple_of)]
    pub fn emulate<N: Size>(
        tiles: &[Vector<i32, Const<4>>],
        bars: &mut [u64],
        c: Vector<i32, N>,
        first: u32,
        k_tiles: u32,
        group: u32,
        #[comptime] stages: u32,
        #[comptime] tile_a: TmaTile,
        #[comptime] tile_b: TmaTile,
    ) -> Vector<i32, N> {
        let b_first = comptime!(stages * tile_a.box_size());
        let a_off = group * comptime!(ROWS_PER_GROUP * STAGE_K);
        let mut acc = c;
        for kt in 0..k_tiles {
            let g = first + kt;
            let slot = g % stages;
            crate::mbarrier::wait::emulate(bars, slot, (g / stages) % 2);
            acc = crate::wgmma::m64n_k32_s8::emulate::<N>(
                tiles,
                slot * comptime!(tile_a.box_size()) + a_off,
                tiles,
                b_first + slot * comptime!(tile_b.box_size()),
                acc,
                comptime!(STAGE_K / 32),
                LAYOUT,
                LAYOUT,
            );
            if UNIT_POS % 32 == 0 {
                crate::mbarrier::arrive::emulate(bars, stages + slot);
            }
        }
        acc
    }
}

// The check: an island whose accelerated arm runs a producer warpgroup and two consumer
// warpgroups through the loop, and whose `default` computes the same products another way
// (proven on the CPU, compared natively on devices).

type Word = Vector<i32, Const<4>>;

/// The check's tensors: `a` 256 rows (two tiles of 128) and `bᵀ` 16 rows, 640 bytes each (five
/// stages a tile).
const K: u32 = 640;
const N: u32 = 16;
const TILES: u32 = 2;
/// Its boxes: a tile's 128 rows of `a`, all of `bᵀ`, one stage each.
pub const TILE_A: TmaTile = TmaTile { row_bytes: K, box_rows: 128, box_bytes: STAGE_K, swizzle: 128 };
pub const TILE_B: TmaTile = TmaTile { row_bytes: K, box_rows: N, box_bytes: STAGE_K, swizzle: 128 };
/// Two slots for ten stages: every slot reused in both parities, within a tile and across the
/// two tiles (the second tile starts at stage 5, slot 1, parity 0 of its third use).
const STAGES: u32 = 2;
/// The cube: a producer warpgroup, then two consumer warpgroups.
const UNITS: u32 = 384;
/// Arrivals on a slot's "empty" barrier per stage: both consumer warpgroups'.
const RELEASES: u32 = 2 * RELEASES_PER_GROUP;

/// Two 128×16 tiles of `a · b` (row-major `c`, the tiles one after the other) through one ring:
/// unit 0 produces every stage of both tiles, waiting on each slot's "empty" barrier before a
/// refill; the two consumer warpgroups run the loop per tile, continuing the ring. A wrong slot,
/// parity, release, descriptor offset or warpgroup offset shows in the products (or stalls,
/// then traps).
#[islands]
#[cube]
pub fn wgmma_consume_roles(
    a: &[Word],
    map_a: &[u32],
    bt: &[Word],
    map_b: &[u32],
    c: &mut [i32],
    #[comptime] target: Target,
) {
    island! {
        proof(
            a: &[Vector<i32, Const<4>>; 10240],
            map_a: tensor_map(a, crate::wgmma_consume::TILE_A),
            bt: &[Vector<i32, Const<4>>; 640],
            map_b: tensor_map(bt, crate::wgmma_consume::TILE_B),
            c: &mut [i32; 4096],
        ), cube_dim = 384;
        cuda if sm == 90 => {
            let (a_words, b_words) = (comptime!(TILE_A.box_size() / 16), comptime!(TILE_B.box_size() / 16));
            let mut tiles = Shared::<[Word]>::new_aligned_slice(
                comptime!((STAGES * (a_words + b_words)) as usize),
                1024usize,
            );
            let mut bars = Shared::<[u64]>::new_aligned_slice(
                comptime!(crate::mbarrier::words(2 * STAGES, UNITS, &target)),
                8usize,
            );
            if UNIT_POS == 0 {
                for i in 0..STAGES {
                    crate::mbarrier::init::call(&mut bars, i, 1u32, target);
                    crate::mbarrier::init::call(&mut bars, STAGES + i, RELEASES, target);
                }
            }
            sync_cube();
            let k_tiles = comptime!(K / STAGE_K);
            if UNIT_POS == 0 {
                crate::tma::acquire_map::call(map_a, target);
                crate::tma::acquire_map::call(map_b, target);
                for g in 0..comptime!(TILES * K / STAGE_K) {
                    let (tile, kt, slot) = (g / k_tiles, g % k_tiles, g % STAGES);
                    if g >= STAGES {
                        crate::mbarrier::wait::call(&mut bars, STAGES + slot, (g / STAGES + 1) % 2, target);
                    }
                    crate::tma::arrive_expect_tx::call(&mut bars, slot, comptime!(TILE_A.box_size() + TILE_B.box_size()), target);
                    crate::tma::load_2d::call(&mut tiles, slot * a_words, map_a, a, kt * 8, tile * 128, &mut bars, slot, TILE_A, target);
                    crate::tma::load_2d::call(
                        &mut tiles,
                        comptime!(STAGES * a_words) + slot * b_words,
                        map_b,
                        bt,
                        kt * 8,
                        0u32,
                        &mut bars,
                        slot,
                        TILE_B,
                        target,
                    );
                }
            } else if UNIT_POS >= 128 {
                let group = UNIT_POS / 128 - 1;
                let unit = UNIT_POS % 128;
                let (warp, g, t) = (unit / 32, (unit % 32) / 4, unit % 4);
                for tile in 0..TILES {
                    let d = consume_s8::call::<Const<8>>(
                        &tiles, &mut bars, Vector::<i32, Const<8>>::new(0i32), tile * k_tiles, k_tiles, group,
                        STAGES, TILE_A, TILE_B, target,
                    );
                    #[unroll]
                    for r in 0..8u32 {
                        let row = tile * 128 + group * 64 + 16 * warp + g + 8 * ((r / 2) % 2);
                        let col = 8 * (r / 4) + 2 * t + r % 2;
                        c[(row * N + col) as usize] = d.extract(r as usize);
                    }
                }
            }
            crate::mbarrier::retire(&mut bars, target);
        },
        default => {
            let words = comptime!(K / 16);
            let mut e = UNIT_POS;
            while e < comptime!(TILES * 128 * N) {
                let (row, col) = (e / N, e % N);
                let mut sum = 0i32;
                for w in 0..comptime!(K / 4) {
                    let x = a[(row * words + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    let y = bt[(col * words + w / 4) as usize].extract_dynamic((w % 4) as usize);
                    sum = island_portable::dot4_i8(x, y, sum);
                }
                c[e as usize] = sum;
                e += UNITS;
            }
        },
    }
}
