//! int8 GEMM on Hopper's warpgroup MMA: `c[m×n] = a[m×k] · b[k×n]`, i8 inputs, i32 outputs,
//! `a` row-major and `b` column-major (stored as `bᵀ`), the layouts and the reference of
//! [`crate::gemm_i8_mma`].
//!
//! One cube of `warpgroups` warpgroups computes a `64·warpgroups × block_n` block of `c`
//! ([`Config`]), each warpgroup 64 rows of it. The block is an island:
//! - `cuda if sm == 90` (`wgmma` is sm_90a's only): a pipeline of `stages` shared-memory stages of 128 bytes of `k`, filled
//!   by `cp.async` copies into the 128-byte-swizzled layout `wgmma` descriptors name
//!   ([`LAYOUT`]); per stage, each warpgroup runs four `wgmma` m64n`block_n`k32 steps on its rows
//!   of `a` and the whole stage of `bᵀ`, accumulators in registers for the whole `k` loop.
//!   Stages pass from copies to `wgmma`s through one cube barrier each, or through a pair of
//!   mbarriers per slot ([`Pipeline`]).
//! - `default`: each unit its share of the block's outputs, plain loops over packed words.
//!
//! Integer products and wrapping sums are exact in any order, so the arm is byte-equal to
//! `default`; the CPU proof runs the arm through each intrinsic's emulation on a `k` long
//! enough to reuse every stage.

use crate::error::ShapeError;
use cubecl::prelude::*;
use island_intrinsics::wgmma::{self, WARPGROUP};
use island_intrinsics::{cp_async, mbarrier, portable, tma, wgmma_loop};
use island_runtime::prelude::*;
use island_runtime::tensor_map::{self, TensorMapError, TmaTile};

/// The geometry of a cube's block (comptime).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Config {
    /// Warpgroups down the block, each 64 rows.
    pub warpgroups: u32,
    /// Columns of the block: the `N` of each warpgroup's `wgmma` (a multiple of 8, at most 256).
    pub block_n: u32,
    /// Shared-memory stages in flight.
    pub stages: u32,
    /// How stages pass between the copies and the `wgmma`s.
    pub pipeline: Pipeline,
}

/// How a block's stages pass between the copies that fill them and the `wgmma`s that read them.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Pipeline {
    /// Per stage, each unit waits for its own copies and fences them, then one cube barrier: every
    /// warpgroup starts a stage together, and the tensor cores idle while the last one finishes.
    CubeBarrier,
    /// Per slot, a "full" mbarrier (every unit's copies landed) and an "empty" one (every unit read
    /// it): a unit waits for the stage it reads, and the slot of the stage before is refilled
    /// once every unit has read that, so warpgroups drift up to one stage apart.
    Mbarrier,
    /// As [`Pipeline::Mbarrier`], but each stage is two TMA boxes ([`island_intrinsics::tma`])
    /// that one unit issues, completing on the "full" barrier by their bytes: no unit computes a
    /// copy's address, and no copy passes through registers.
    Tma,
    /// As [`Pipeline::Tma`], the whole `k` loop one intrinsic
    /// ([`island_intrinsics::wgmma_loop`]) whose accumulators stay in flight: each stage's
    /// `wgmma`s run while the warpgroup waits for the next stage, and only unit 0 waits for a
    /// slot to be read before refilling it.
    TmaLoop,
}

impl Pipeline {
    /// Whether the kernel reads its operands through tensor maps ([`Maps`]).
    pub const fn reads_maps(self) -> bool {
        matches!(self, Pipeline::Tma | Pipeline::TmaLoop)
    }
}

/// Bytes of `k` per stage (one 128-byte swizzled row), and the stages' layout, as the loop
/// intrinsic lays them out.
pub use island_intrinsics::wgmma_loop::{LAYOUT, STAGE_K};

impl Config {
    pub const fn block_m(&self) -> u32 {
        self.warpgroups * 64
    }
    pub const fn units(&self) -> u32 {
        self.warpgroups * WARPGROUP
    }
    /// 16-byte chunks of `a` and of `bᵀ` in one stage.
    pub const fn a_stage_chunks(&self) -> u32 {
        self.block_m() * STAGE_K / 16
    }
    pub const fn b_stage_chunks(&self) -> u32 {
        self.block_n * STAGE_K / 16
    }
}

/// The configuration [`gemm_i8_wgmma`] launches with: 256×128 blocks of four warpgroups, four
/// stages (192 KiB of shared memory).
pub const CONFIG: Config = Config { warpgroups: 4, block_n: 128, stages: 4, pipeline: Pipeline::CubeBarrier };

/// The configuration [`gemm_i8_wgmma_n256`] launches with: 128×256 blocks of two warpgroups,
/// each `wgmma` m64n256k32, four stages (192 KiB).
pub const CONFIG_N256: Config = Config { warpgroups: 2, block_n: 256, stages: 4, pipeline: Pipeline::CubeBarrier };

/// The configuration [`gemm_i8_wgmma_mbarrier`] launches with: [`CONFIG`]'s blocks on the
/// mbarrier pipeline.
pub const CONFIG_MBARRIER: Config = Config { warpgroups: 4, block_n: 128, stages: 4, pipeline: Pipeline::Mbarrier };

/// The configuration [`gemm_i8_wgmma_m128`] launches with: 128×128 blocks of two warpgroups,
/// three stages (96 KiB, so two cubes share a multiprocessor), on the mbarrier pipeline.
pub const CONFIG_M128: Config = Config { warpgroups: 2, block_n: 128, stages: 3, pipeline: Pipeline::Mbarrier };

/// The configuration [`gemm_i8_wgmma_tma`] launches with: [`CONFIG`]'s blocks on the TMA
/// pipeline.
pub const CONFIG_TMA: Config = Config { warpgroups: 4, block_n: 128, stages: 4, pipeline: Pipeline::Tma };

/// The configuration [`gemm_i8_wgmma_tma_m128`] launches with: [`CONFIG_M128`]'s blocks on the
/// TMA pipeline.
pub const CONFIG_TMA_M128: Config = Config { warpgroups: 2, block_n: 128, stages: 3, pipeline: Pipeline::Tma };

/// The configuration [`gemm_i8_wgmma_tma_loop`] launches with: [`CONFIG`]'s blocks, four
/// stages, on the [`Pipeline::TmaLoop`] pipeline.
pub const CONFIG_TMA_LOOP: Config = Config { warpgroups: 4, block_n: 128, stages: 4, pipeline: Pipeline::TmaLoop };

/// The configuration [`gemm_i8_wgmma_tma_loop_m128`] launches with: 128×128 blocks, three
/// stages (96 KiB, so two cubes share a multiprocessor and one's stores overlap the other's
/// loop), on the [`Pipeline::TmaLoop`] pipeline.
pub const CONFIG_TMA_LOOP_M128: Config = Config { warpgroups: 2, block_n: 128, stages: 3, pipeline: Pipeline::TmaLoop };

/// The TMA box of one stage of `a` (`k` bytes a row): the block's rows × [`STAGE_K`] bytes, at
/// [`LAYOUT`] (the 128-byte swizzle).
pub const fn tile_a(k: u32, cfg: Config) -> TmaTile {
    TmaTile { row_bytes: k, box_rows: cfg.block_m(), box_bytes: STAGE_K, swizzle: 128 }
}

/// The TMA box of one stage of `bᵀ` (`k` bytes a row): the block's columns × [`STAGE_K`] bytes.
pub const fn tile_b(k: u32, cfg: Config) -> TmaTile {
    TmaTile { row_bytes: k, box_rows: cfg.block_n, box_bytes: STAGE_K, swizzle: 128 }
}

type Word = Vector<i32, Const<4>>;
type Pair = Vector<i32, Const<2>>;

/// Issues the copies of `k` tile `kt` of `rows` rows (`k` bytes each) into stage `stage` of
/// `tile`, at [`LAYOUT`].
#[allow(clippy::too_many_arguments)]
#[cube]
fn load_stage(
    src: &[Word],
    tile: &mut [Word],
    stage: u32,
    kt: u32,
    #[comptime] rows: u32,
    #[comptime] k: u32,
    #[comptime] units: u32,
    #[comptime] target: Target,
) {
    let kc = comptime!(k / 16);
    let chunks = comptime!(rows * STAGE_K / 16);
    #[unroll]
    for i in 0..comptime!(chunks / units) {
        let idx = UNIT_POS + i * units;
        let (row, chunk) = (idx / 8, idx % 8);
        let slot = wgmma::offset(0u32, row, 16 * chunk, LAYOUT) / 16;
        cp_async::copy16::call(tile, stage * chunks + slot, src, row * kc + kt * 8 + chunk, target);
    }
}

/// The block on tensor cores, through the pipeline `cfg` names ([`Pipeline`]).
#[cube]
fn block_tensor_cores<N: Size>(
    a: &[Word],
    bt: &[Word],
    c: &mut [Pair],
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    if comptime!(cfg.pipeline == Pipeline::Mbarrier) {
        block_wgmma_mbarrier::<N>(a, bt, c, k, n, cfg, target);
    } else {
        block_wgmma::<N>(a, bt, c, k, n, cfg, target);
    }
}

/// The block on tensor cores through the [`Pipeline::CubeBarrier`] pipeline: `a` the block's
/// first row, `bt` its first column, `c` its top-left element (rows `n / 2` pairs apart).
#[cube]
fn block_wgmma<N: Size>(
    a: &[Word],
    bt: &[Word],
    c: &mut [Pair],
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    let k_tiles = comptime!(k / STAGE_K);
    let stages = comptime!(cfg.stages);
    let units = comptime!(cfg.units());
    let a_chunks = comptime!(cfg.a_stage_chunks());
    let b_chunks = comptime!(cfg.b_stage_chunks());
    let mut sa = Shared::<[Word]>::new_aligned_slice(comptime!((stages * a_chunks) as usize), 1024usize);
    let mut sb = Shared::<[Word]>::new_aligned_slice(comptime!((stages * b_chunks) as usize), 1024usize);
    let group = UNIT_POS / WARPGROUP;
    let mut acc = Vector::<i32, N>::empty();
    #[unroll]
    for r in 0..comptime!(N::value()) {
        acc.insert(r, 0i32);
    }
    // The first `stages - 1` tiles in flight; one group per tile, empty past the end.
    #[unroll]
    for s in 0..comptime!(stages - 1) {
        if s < k_tiles {
            load_stage(a, &mut sa, s, s, comptime!(cfg.block_m()), k, units, target);
            load_stage(bt, &mut sb, s, s, comptime!(cfg.block_n), k, units, target);
        }
        cp_async::commit::call(target);
    }
    for kt in 0..k_tiles {
        // Tile `kt` has landed once at most `stages - 2` groups are pending; each unit fences
        // its copies for the tensor cores' reads, and the barrier also retires the stage read
        // in the previous step, which the next copies overwrite (each `wgmma` call waits for
        // its instructions).
        cp_async::wait::call(comptime!(stages - 2), target);
        wgmma::fence_shared::call(target);
        sync_cube();
        let next = kt + stages - 1;
        if next < k_tiles {
            load_stage(a, &mut sa, next % stages, next, comptime!(cfg.block_m()), k, units, target);
            load_stage(bt, &mut sb, next % stages, next, comptime!(cfg.block_n), k, units, target);
        }
        cp_async::commit::call(target);
        let stage = kt % stages;
        // The warpgroup's 64 rows start 8 row groups (8 KiB) after the previous one's.
        let a_start = stage * comptime!(a_chunks * 16) + group * 8192;
        acc = wgmma::m64n_k32_s8::call::<N>(
            &sa,
            a_start,
            &sb,
            stage * comptime!(b_chunks * 16),
            acc,
            4u32,
            LAYOUT,
            LAYOUT,
            target,
        );
    }
    store_acc::<N>(acc, c, n);
}

/// The block on tensor cores, fed through the [`Pipeline::Mbarrier`] pipeline: barriers
/// `0..stages` say a slot is full, `stages..2·stages` that every unit has read it.
#[cube]
fn block_wgmma_mbarrier<N: Size>(
    a: &[Word],
    bt: &[Word],
    c: &mut [Pair],
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    let k_tiles = comptime!(k / STAGE_K);
    let stages = comptime!(cfg.stages);
    let units = comptime!(cfg.units());
    let a_chunks = comptime!(cfg.a_stage_chunks());
    let b_chunks = comptime!(cfg.b_stage_chunks());
    let mut sa = Shared::<[Word]>::new_aligned_slice(comptime!((stages * a_chunks) as usize), 1024usize);
    let mut sb = Shared::<[Word]>::new_aligned_slice(comptime!((stages * b_chunks) as usize), 1024usize);
    let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(2 * stages, units, &target)), 8usize);
    if UNIT_POS == 0 {
        for i in 0..comptime!(2 * stages) {
            mbarrier::init::call(&mut bars, i, units, target);
        }
    }
    sync_cube();
    let group = UNIT_POS / WARPGROUP;
    let mut acc = Vector::<i32, N>::empty();
    #[unroll]
    for r in 0..comptime!(N::value()) {
        acc.insert(r, 0i32);
    }
    // Every slot filled at once; each unit arrives on the slot's "full" barrier when its copies
    // land.
    #[unroll]
    for s in 0..stages {
        if s < k_tiles {
            load_stage(a, &mut sa, s, s, comptime!(cfg.block_m()), k, units, target);
            load_stage(bt, &mut sb, s, s, comptime!(cfg.block_n), k, units, target);
            mbarrier::arrive_on_copies::call(&mut bars, s, target);
        }
    }
    for kt in 0..k_tiles {
        let stage = kt % stages;
        // The `k`-th use of a slot completes its barriers' phase of parity `k % 2`. The fence
        // makes the copies (generic-proxy writes) visible to the tensor cores' reads.
        mbarrier::wait::call(&mut bars, stage, (kt / stages) % 2, target);
        wgmma::fence_shared::call(target);
        let a_start = stage * comptime!(a_chunks * 16) + group * 8192;
        acc = wgmma::m64n_k32_s8::call::<N>(
            &sa,
            a_start,
            &sb,
            stage * comptime!(b_chunks * 16),
            acc,
            4u32,
            LAYOUT,
            LAYOUT,
            target,
        );
        mbarrier::arrive::call(&mut bars, stages + stage, target);
        // Once every unit has read the previous stage, its slot takes the tile `stages` ahead of
        // it; a unit that finished this stage early waits only for the others to finish the one
        // before.
        if kt >= 1 {
            let prev = kt - 1;
            mbarrier::wait::call(&mut bars, stages + prev % stages, (prev / stages) % 2, target);
            let next = prev + stages;
            if next < k_tiles {
                load_stage(a, &mut sa, next % stages, next, comptime!(cfg.block_m()), k, units, target);
                load_stage(bt, &mut sb, next % stages, next, comptime!(cfg.block_n), k, units, target);
                mbarrier::arrive_on_copies::call(&mut bars, next % stages, target);
            }
        }
    }
    store_acc::<N>(acc, c, n);
}

/// Stage `kt` into slot `slot`: one unit expects both boxes' bytes on the slot's "full" barrier
/// and issues them.
#[allow(clippy::too_many_arguments)]
#[cube]
fn load_stage_tma(
    a: &[Word],
    map_a: &[u32],
    sa: &mut [Word],
    bt: &[Word],
    map_b: &[u32],
    sb: &mut [Word],
    bars: &mut [u64],
    slot: u32,
    kt: u32,
    ya: u32,
    yb: u32,
    #[comptime] k: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    let bytes = comptime!((cfg.block_m() + cfg.block_n) * STAGE_K);
    let words = comptime!(STAGE_K / 16);
    tma::arrive_expect_tx::call(bars, slot, bytes, target);
    tma::load_2d::call(
        sa,
        slot * comptime!(cfg.a_stage_chunks()),
        map_a,
        a,
        kt * words,
        ya,
        bars,
        slot,
        comptime!(tile_a(k, cfg)),
        target,
    );
    tma::load_2d::call(
        sb,
        slot * comptime!(cfg.b_stage_chunks()),
        map_b,
        bt,
        kt * words,
        yb,
        bars,
        slot,
        comptime!(tile_b(k, cfg)),
        target,
    );
}

/// The block on tensor cores, fed through the [`Pipeline::Tma`] pipeline: barriers
/// `0..stages` say a slot is full (one arrival and the boxes' bytes), `stages..2·stages` that
/// every unit has read it. `a` and `bt` are the whole operands, the block's first row of each
/// at `ya` and `yb`.
#[allow(clippy::too_many_arguments)]
#[cube]
fn block_wgmma_tma<N: Size>(
    a: &[Word],
    map_a: &[u32],
    ya: u32,
    bt: &[Word],
    map_b: &[u32],
    yb: u32,
    c: &mut [Pair],
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    let k_tiles = comptime!(k / STAGE_K);
    let stages = comptime!(cfg.stages);
    let a_chunks = comptime!(cfg.a_stage_chunks());
    let b_chunks = comptime!(cfg.b_stage_chunks());
    let mut sa = Shared::<[Word]>::new_aligned_slice(comptime!((stages * a_chunks) as usize), 1024usize);
    let mut sb = Shared::<[Word]>::new_aligned_slice(comptime!((stages * b_chunks) as usize), 1024usize);
    let mut bars =
        Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(2 * stages, cfg.units(), &target)), 8usize);
    if UNIT_POS == 0 {
        for i in 0..stages {
            mbarrier::init::call(&mut bars, i, 1u32, target);
            mbarrier::init::call(&mut bars, stages + i, comptime!(cfg.units()), target);
        }
    }
    sync_cube();
    let group = UNIT_POS / WARPGROUP;
    let mut acc = Vector::<i32, N>::empty();
    #[unroll]
    for r in 0..comptime!(N::value()) {
        acc.insert(r, 0i32);
    }
    if UNIT_POS == 0 {
        tma::acquire_map::call(map_a, target);
        tma::acquire_map::call(map_b, target);
        for s in 0..stages {
            if s < k_tiles {
                load_stage_tma(a, map_a, &mut sa, bt, map_b, &mut sb, &mut bars, s, s, ya, yb, k, cfg, target);
            }
        }
    }
    for kt in 0..k_tiles {
        let stage = kt % stages;
        // The `k`-th use of a slot completes its barriers' phase of parity `k % 2`. The boxes
        // are written by the copy engine, whose writes the tensor cores read without a fence.
        mbarrier::wait::call(&mut bars, stage, (kt / stages) % 2, target);
        let a_start = stage * comptime!(a_chunks * 16) + group * 8192;
        acc = wgmma::m64n_k32_s8::call::<N>(
            &sa,
            a_start,
            &sb,
            stage * comptime!(b_chunks * 16),
            acc,
            4u32,
            LAYOUT,
            LAYOUT,
            target,
        );
        mbarrier::arrive::call(&mut bars, stages + stage, target);
        // Once every unit has read the previous stage, unit 0 refills its slot with the tile
        // `stages` ahead of it.
        if kt >= 1 {
            let prev = kt - 1;
            mbarrier::wait::call(&mut bars, stages + prev % stages, (prev / stages) % 2, target);
            let next = prev + stages;
            if next < k_tiles && UNIT_POS == 0 {
                let slot = next % stages;
                load_stage_tma(a, map_a, &mut sa, bt, map_b, &mut sb, &mut bars, slot, next, ya, yb, k, cfg, target);
            }
        }
    }
    store_acc::<N>(acc, c, n);
}

/// The block on tensor cores through the [`Pipeline::TmaLoop`] pipeline: one call of the loop
/// intrinsic, then the fragment stored. `a` and `bt` are the whole operands, the block's first row
/// of each at `ya` and `yb`.
#[allow(clippy::too_many_arguments)]
#[cube]
fn block_wgmma_tma_loop<N: Size>(
    a: &[Word],
    map_a: &[u32],
    ya: u32,
    bt: &[Word],
    map_b: &[u32],
    yb: u32,
    c: &mut [Pair],
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    let stages = comptime!(cfg.stages);
    let mut tiles = Shared::<[Word]>::new_aligned_slice(
        comptime!((stages * (cfg.a_stage_chunks() + cfg.b_stage_chunks())) as usize),
        1024usize,
    );
    let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!((2 * stages) as usize), 8usize);
    let acc = wgmma_loop::tma_s8::call::<N>(
        &mut tiles,
        &mut bars,
        a,
        map_a,
        ya,
        bt,
        map_b,
        yb,
        Vector::<i32, N>::new(0i32),
        comptime!(k / STAGE_K),
        stages,
        comptime!(tile_a(k, cfg)),
        comptime!(tile_b(k, cfg)),
        target,
    );
    store_acc::<N>(acc, c, n);
}

/// Writes a warpgroup's accumulator fragment into the block of `c`.
#[cube]
fn store_acc<N: Size>(acc: Vector<i32, N>, c: &mut [Pair], #[comptime] n: u32) {
    let group = UNIT_POS / WARPGROUP;
    // Register `r` of unit `u` holds row `16·warp + (u % 32)/4 + 8·((r/2) % 2)` of the
    // warpgroup's rows, column `8·(r/4) + 2·(u % 4) + r % 2`: pairs of registers are pairs of
    // columns.
    let unit = UNIT_POS % WARPGROUP;
    let (warp, g, t) = (unit / 32, (unit % 32) / 4, unit % 4);
    #[unroll]
    for r in 0..comptime!(N::value() / 2) {
        let row = group * 64 + 16 * warp + g + 8 * (r as u32 % 2);
        let col = 8 * (r as u32 / 2) + 2 * t;
        let mut p = Pair::empty();
        p.insert(0usize, acc.extract(2 * r));
        p.insert(1usize, acc.extract(2 * r + 1));
        c[((row * n + col) / 2) as usize] = p;
    }
}

/// The `default` block: unit `u` computes pairs of outputs `u, u + units, …` of the block,
/// each output the sum over packed words of `a`'s row and `bᵀ`'s row, in `k` order.
#[cube]
fn block_scalar(
    a: &[Word],
    bt: &[Word],
    c: &mut [Pair],
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
) {
    let kc = comptime!(k / 16);
    let units = comptime!(cfg.units());
    let pairs = comptime!(cfg.block_n / 2);
    for i in 0..comptime!(cfg.block_m() * pairs / units) {
        let e = UNIT_POS + i * units;
        let (row, pair) = (e / pairs, e % pairs);
        let mut s0 = 0i32;
        let mut s1 = 0i32;
        for w in 0..comptime!(kc * 4) {
            let x = a[(row * kc + w / 4) as usize].extract_dynamic((w % 4) as usize);
            s0 = portable::dot4_i8(x, bt[(2 * pair * kc + w / 4) as usize].extract_dynamic((w % 4) as usize), s0);
            s1 = portable::dot4_i8(x, bt[((2 * pair + 1) * kc + w / 4) as usize].extract_dynamic((w % 4) as usize), s1);
        }
        let mut p = Pair::empty();
        p.insert(0usize, s0);
        p.insert(1usize, s1);
        c[((row * n) / 2 + pair) as usize] = p;
    }
}

/// The block of cube (`CUBE_POS_X`, `CUBE_POS_Y`): its first row of `a`, its first column of
/// `bᵀ` and its top-left element of `c`, as offsets.
#[cube]
fn block_offsets(#[comptime] k: u32, #[comptime] n: u32, #[comptime] cfg: Config) -> (usize, usize, usize) {
    let kc = comptime!(k / 16);
    (
        (CUBE_POS_Y * comptime!(cfg.block_m()) * kc) as usize,
        (CUBE_POS_X * comptime!(cfg.block_n) * kc) as usize,
        ((CUBE_POS_Y * comptime!(cfg.block_m()) * n + CUBE_POS_X * comptime!(cfg.block_n)) / 2) as usize,
    )
}

/// The size of the block an entry point's island is proven on: `k` of [`PROOF_K`] (five stages
/// of [`STAGE_K`], so every pipeline refills every slot), the configuration's `n`.
pub const PROOF_K: u32 = 640;

/// Per-cube lengths of a block's proof inputs for `cfg`: `a`'s and `bᵀ`'s rows of [`PROOF_K`]
/// bytes in 16-byte words, and `c`'s pairs.
pub const fn proof_a_words(cfg: Config) -> u32 {
    cfg.block_m() * PROOF_K / 16
}
pub const fn proof_b_words(cfg: Config) -> u32 {
    cfg.block_n * PROOF_K / 16
}
pub const fn proof_c_pairs(cfg: Config) -> u32 {
    cfg.block_m() * cfg.block_n / 2
}

/// One entry point of the GEMM for a configuration whose pipeline reads shared memory through
/// `a_block`, `b_block` (cube barrier, mbarrier): its island proves the configuration's block on
/// the tensor cores against `default`. `$n` is the `N` of each warpgroup's `wgmma`.
macro_rules! gemm_entry {
    ($(#[$doc:meta])* $name:ident, $cfg:ident, $n:ty) => {
        $(#[$doc])*
        #[islands]
        #[cube(launch)]
        pub fn $name(a: &[Word], bt: &[Word], c: &mut [Pair], #[comptime] k: u32, #[comptime] n: u32) {
            let (oa, ob, oc) = block_offsets(k, n, $cfg);
            let (a_block, b_block, c_block) = (&a[oa..], &bt[ob..], &mut c[oc..]);
            island! {
                proof(a_block: &[Vector<i32, Const<4>>; crate::gemm_i8_wgmma::proof_a_words(crate::gemm_i8_wgmma::$cfg)],
                      b_block: &[Vector<i32, Const<4>>; crate::gemm_i8_wgmma::proof_b_words(crate::gemm_i8_wgmma::$cfg)],
                      c_block: &mut [Vector<i32, Const<2>>; crate::gemm_i8_wgmma::proof_c_pairs(crate::gemm_i8_wgmma::$cfg)],
                      k: u32 = crate::gemm_i8_wgmma::PROOF_K, n: u32 = crate::gemm_i8_wgmma::$cfg.block_n),
                      cube_dim = crate::gemm_i8_wgmma::$cfg.units();
                cuda if sm == 90 => block_tensor_cores::<$n>(a_block, b_block, c_block, k, n, $cfg, target),
                default => block_scalar(a_block, b_block, c_block, k, n, $cfg),
            }
        }
    };
}

/// The block of a TMA pipeline: [`block_wgmma_tma`] or, on [`Pipeline::TmaLoop`],
/// [`block_wgmma_tma_loop`] (chosen while the kernel is expanded).
#[allow(clippy::too_many_arguments)]
#[cube]
fn block_tma_pipeline<N: Size>(
    a: &[Word],
    map_a: &[u32],
    ya: u32,
    bt: &[Word],
    map_b: &[u32],
    yb: u32,
    c: &mut [Pair],
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    if comptime!(cfg.pipeline == Pipeline::TmaLoop) {
        block_wgmma_tma_loop::<N>(a, map_a, ya, bt, map_b, yb, c, k, n, cfg, target);
    } else {
        block_wgmma_tma::<N>(a, map_a, ya, bt, map_b, yb, c, k, n, cfg, target);
    }
}

/// One entry point of the GEMM for a configuration on a TMA pipeline: the island reads the whole
/// operands through their tensor maps (`map_a`, `map_b`, one `u32` slice of 32 words each,
/// [`Maps`]).
macro_rules! gemm_tma_entry {
    ($(#[$doc:meta])* $name:ident, $cfg:ident) => {
        $(#[$doc])*
        #[islands]
        #[cube(launch)]
        pub fn $name(
            a: &[Word],
            bt: &[Word],
            map_a: &[u32],
            map_b: &[u32],
            c: &mut [Pair],
            #[comptime] k: u32,
            #[comptime] n: u32,
        ) {
            let (oa, ob, oc) = block_offsets(k, n, $cfg);
            let (ya, yb) = (CUBE_POS_Y * comptime!($cfg.block_m()), CUBE_POS_X * comptime!($cfg.block_n));
            let c_block = &mut c[oc..];
            island! {
                proof(a: &[Vector<i32, Const<4>>; crate::gemm_i8_wgmma::proof_a_words(crate::gemm_i8_wgmma::$cfg)],
                      map_a: tensor_map(a, crate::gemm_i8_wgmma::tile_a(crate::gemm_i8_wgmma::PROOF_K, crate::gemm_i8_wgmma::$cfg)),
                      bt: &[Vector<i32, Const<4>>; crate::gemm_i8_wgmma::proof_b_words(crate::gemm_i8_wgmma::$cfg)],
                      map_b: tensor_map(bt, crate::gemm_i8_wgmma::tile_b(crate::gemm_i8_wgmma::PROOF_K, crate::gemm_i8_wgmma::$cfg)),
                      c_block: &mut [Vector<i32, Const<2>>; crate::gemm_i8_wgmma::proof_c_pairs(crate::gemm_i8_wgmma::$cfg)],
                      oa: usize = 0, ob: usize = 0, ya: u32 = 0, yb: u32 = 0,
                      k: u32 = crate::gemm_i8_wgmma::PROOF_K, n: u32 = crate::gemm_i8_wgmma::$cfg.block_n),
                      cube_dim = crate::gemm_i8_wgmma::$cfg.units();
                cuda if sm == 90 => block_tma_pipeline::<Const<64>>(a, map_a, ya, bt, map_b, yb, c_block, k, n, $cfg, target),
                default => block_scalar(&a[oa..], &bt[ob..], c_block, k, n, $cfg),
            }
        }
    };
}

gemm_entry!(
    /// The GEMM on [`CONFIG`]'s blocks.
    gemm_i8_wgmma, CONFIG, Const<64>
);
gemm_entry!(
    /// The GEMM on [`CONFIG_N256`]'s blocks.
    gemm_i8_wgmma_n256, CONFIG_N256, Const<128>
);
gemm_entry!(
    /// The GEMM on [`CONFIG_MBARRIER`]'s blocks.
    gemm_i8_wgmma_mbarrier, CONFIG_MBARRIER, Const<64>
);
gemm_entry!(
    /// The GEMM on [`CONFIG_M128`]'s blocks.
    gemm_i8_wgmma_m128, CONFIG_M128, Const<64>
);
gemm_tma_entry!(
    /// The GEMM on [`CONFIG_TMA`]'s blocks through tensor maps.
    gemm_i8_wgmma_tma, CONFIG_TMA
);
gemm_tma_entry!(
    /// The GEMM on [`CONFIG_TMA_M128`]'s blocks, as [`gemm_i8_wgmma_tma`].
    gemm_i8_wgmma_tma_m128, CONFIG_TMA_M128
);
gemm_tma_entry!(
    /// The GEMM on [`CONFIG_TMA_LOOP`]'s blocks, as [`gemm_i8_wgmma_tma`].
    gemm_i8_wgmma_tma_loop, CONFIG_TMA_LOOP
);
gemm_tma_entry!(
    /// The GEMM on [`CONFIG_TMA_LOOP_M128`]'s blocks, as [`gemm_i8_wgmma_tma`].
    gemm_i8_wgmma_tma_loop_m128, CONFIG_TMA_LOOP_M128
);

/// The tensor maps of a TMA variant's operands, encoded once for their buffers: each one 128
/// bytes in a buffer of its own, as the kernel reads it.
pub struct Maps {
    pub a: cubecl::server::Handle,
    pub b: cubecl::server::Handle,
}

impl Maps {
    /// Encodes the maps of `a` (m×k) and `bt` (n×k) for `cfg`'s boxes on `client`'s device (zeros
    /// on a runtime without TMA, whose emulation reads the operands directly).
    pub fn new(
        client: &Client,
        (a, bt): (&cubecl::server::Handle, &cubecl::server::Handle),
        (m, k, n): (usize, usize, usize),
        cfg: Config,
    ) -> Result<Maps, TensorMapError> {
        let map_a = tensor_map::map_for(client, a, 0, m * k, &tile_a(k as u32, cfg))?;
        let map_b = tensor_map::map_for(client, bt, 0, n * k, &tile_b(k as u32, cfg))?;
        Ok(Maps { a: client.create_from_slice(&map_a), b: client.create_from_slice(&map_b) })
    }
}

/// Checks a shape before launch: `m` and `n` whole blocks (of both configurations), `k` whole
/// stages.
pub fn check(m: usize, k: usize, n: usize) -> Result<(), ShapeError> {
    let bm = CONFIG.block_m().max(CONFIG_N256.block_m()) as usize;
    let bn = CONFIG.block_n.max(CONFIG_N256.block_n) as usize;
    if m == 0
        || n == 0
        || k == 0
        || !m.is_multiple_of(bm)
        || !n.is_multiple_of(bn)
        || !k.is_multiple_of(STAGE_K as usize)
    {
        return Err(ShapeError(format!(
            "the wgmma int8 GEMM works on whole {bm}×{bn} blocks and {STAGE_K}-byte steps of k: m must be a positive multiple of {bm}, n of {bn}, k of {STAGE_K}; got {m}×{k}×{n}"
        )));
    }
    Ok(())
}

/// Launches the GEMM on [`CONFIG`]'s blocks with the given tag; `bt` holds `b` column-major (n
/// rows of k bytes).
///
/// # Safety
/// `a` must hold m·k i8, `bt` k·n i8 and `c` m·n i32 values, and the shape must pass [`check`].
pub unsafe fn launch(
    client: &Client,
    handles: (&cubecl::server::Handle, &cubecl::server::Handle, &cubecl::server::Handle),
    shape: (usize, usize, usize),
    target: Target,
) {
    let launched = unsafe { launch_blocks(client, handles, shape, Blocks::M256N128, None, target) };
    launched.expect("a variant without tensor maps")
}

/// The block shapes and pipelines the GEMM launches with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocks {
    /// [`CONFIG`]: 256×128, four warpgroups, a cube barrier per stage.
    M256N128,
    /// [`CONFIG_N256`]: 128×256, two warpgroups, a cube barrier per stage.
    M128N256,
    /// [`CONFIG_MBARRIER`]: 256×128, four warpgroups, mbarriers.
    M256N128Mbarrier,
    /// [`CONFIG_M128`]: 128×128, two warpgroups, mbarriers, two cubes per multiprocessor.
    M128N128Mbarrier,
    /// [`CONFIG_TMA`]: 256×128, four warpgroups, TMA boxes and mbarriers.
    M256N128Tma,
    /// [`CONFIG_TMA_M128`]: 128×128, two warpgroups, TMA boxes and mbarriers.
    M128N128Tma,
    /// [`CONFIG_TMA_LOOP`]: 256×128, four warpgroups, TMA boxes, `wgmma`s in flight.
    M256N128TmaLoop,
    /// [`CONFIG_TMA_LOOP_M128`]: 128×128, two warpgroups, TMA boxes, `wgmma`s in flight, two
    /// cubes per multiprocessor.
    M128N128TmaLoop,
}

impl Blocks {
    /// Every variant, in the order the bench lists them.
    pub const ALL: [Blocks; 8] = [
        Blocks::M256N128,
        Blocks::M128N256,
        Blocks::M256N128Mbarrier,
        Blocks::M128N128Mbarrier,
        Blocks::M256N128Tma,
        Blocks::M128N128Tma,
        Blocks::M256N128TmaLoop,
        Blocks::M128N128TmaLoop,
    ];

    pub const fn config(self) -> Config {
        match self {
            Blocks::M256N128 => CONFIG,
            Blocks::M128N256 => CONFIG_N256,
            Blocks::M256N128Mbarrier => CONFIG_MBARRIER,
            Blocks::M128N128Mbarrier => CONFIG_M128,
            Blocks::M256N128Tma => CONFIG_TMA,
            Blocks::M128N128Tma => CONFIG_TMA_M128,
            Blocks::M256N128TmaLoop => CONFIG_TMA_LOOP,
            Blocks::M128N128TmaLoop => CONFIG_TMA_LOOP_M128,
        }
    }

    /// The variant in words: block shape and pipeline.
    pub fn label(self) -> String {
        let cfg = self.config();
        let pipeline = match cfg.pipeline {
            Pipeline::CubeBarrier => "cube barrier",
            Pipeline::Mbarrier => "mbarriers",
            Pipeline::Tma => "TMA, mbarriers",
            Pipeline::TmaLoop => "TMA, wgmma in flight",
        };
        format!("{}×{} blocks, {}", cfg.block_m(), cfg.block_n, pipeline)
    }
}

/// Launches the GEMM on `blocks`' blocks. A TMA variant reads its operands through `maps`
/// ([`Maps::new`] for these buffers, this shape and `blocks`' configuration), encoded here when
/// `None`; a map the driver refuses is an error before launch.
///
/// # Safety
/// As [`launch`]; `maps`, if given, must be those of `a` and `bt`.
pub unsafe fn launch_blocks(
    client: &Client,
    (a, bt, c): (&cubecl::server::Handle, &cubecl::server::Handle, &cubecl::server::Handle),
    (m, k, n): (usize, usize, usize),
    blocks: Blocks,
    maps: Option<&Maps>,
    target: Target,
) -> Result<(), TensorMapError> {
    let cfg = blocks.config();
    let count = CubeCount::Static((n as u32) / cfg.block_n, (m as u32) / cfg.block_m(), 1);
    let dim = CubeDim::new_1d(cfg.units());
    let encoded;
    let maps = match (cfg.pipeline.reads_maps(), maps) {
        (true, None) => {
            encoded = Maps::new(client, (a, bt), (m, k, n), cfg)?;
            Some(&encoded)
        }
        (_, maps) => maps,
    };
    // SAFETY: the caller's contract: the handles hold these many values.
    let (a, bt, c) = unsafe {
        (
            BufferArg::from_raw_parts(a.clone(), m * k / 16),
            BufferArg::from_raw_parts(bt.clone(), k * n / 16),
            BufferArg::from_raw_parts(c.clone(), m * n / 2),
        )
    };
    let map_args = || {
        let maps = maps.expect("encoded above for a TMA variant");
        // SAFETY: each map buffer holds one 128-byte map, 32 words.
        unsafe {
            (
                BufferArg::from_raw_parts(maps.a.clone(), tensor_map::MAP_WORDS as usize),
                BufferArg::from_raw_parts(maps.b.clone(), tensor_map::MAP_WORDS as usize),
            )
        }
    };
    let (k, n) = (k as u32, n as u32);
    match blocks {
        Blocks::M256N128 => gemm_i8_wgmma::launch_with(client, count, dim, a, bt, c, k, n, target),
        Blocks::M128N256 => gemm_i8_wgmma_n256::launch_with(client, count, dim, a, bt, c, k, n, target),
        Blocks::M256N128Mbarrier => gemm_i8_wgmma_mbarrier::launch_with(client, count, dim, a, bt, c, k, n, target),
        Blocks::M128N128Mbarrier => gemm_i8_wgmma_m128::launch_with(client, count, dim, a, bt, c, k, n, target),
        Blocks::M256N128Tma => {
            let (ma, mb) = map_args();
            gemm_i8_wgmma_tma::launch_with(client, count, dim, a, bt, ma, mb, c, k, n, target)
        }
        Blocks::M128N128Tma => {
            let (ma, mb) = map_args();
            gemm_i8_wgmma_tma_m128::launch_with(client, count, dim, a, bt, ma, mb, c, k, n, target)
        }
        Blocks::M256N128TmaLoop => {
            let (ma, mb) = map_args();
            gemm_i8_wgmma_tma_loop::launch_with(client, count, dim, a, bt, ma, mb, c, k, n, target)
        }
        Blocks::M128N128TmaLoop => {
            let (ma, mb) = map_args();
            gemm_i8_wgmma_tma_loop_m128::launch_with(client, count, dim, a, bt, ma, mb, c, k, n, target)
        }
    }
    Ok(())
}

/// The top-left block (`CONFIG.block_m()` rows, `CONFIG.block_n` columns) of an `m×n` output:
/// what a CPU run of the kernel on the first block of rows of `a` and of `bᵀ` computes.
pub fn top_left(c: &[i32], n: usize) -> Vec<i32> {
    let (rows, cols) = (CONFIG.block_m() as usize, CONFIG.block_n as usize);
    (0..rows).flat_map(|r| c[r * n..r * n + cols].to_vec()).collect()
}
