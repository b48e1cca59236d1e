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
use island_intrinsics::wgmma::{self, Layout, Swizzle, WARPGROUP};
use island_intrinsics::{cp_async, mbarrier, portable};
use island_runtime::prelude::*;

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
}

/// Bytes of `k` per stage: one 128-byte swizzled row.
pub const STAGE_K: u32 = 128;

/// The stages' layout: rows of 128 bytes of `k`, 16-byte chunks XORed with the row's low three
/// bits, 8-row groups 1 KiB apart (`wgmma`'s 128-byte swizzle).
pub const LAYOUT: Layout = Layout { swizzle: Swizzle::B128, leading: 16, stride: 1024 };

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
    let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!((2 * stages) as usize), 8usize);
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

/// The GEMM on [`CONFIG`]'s blocks.
#[islands]
#[cube(launch)]
pub fn gemm_i8_wgmma(a: &[Word], bt: &[Word], c: &mut [Pair], #[comptime] k: u32, #[comptime] n: u32) {
    let (oa, ob, oc) = block_offsets(k, n, CONFIG);
    let (a_block, b_block, c_block) = (&a[oa..], &bt[ob..], &mut c[oc..]);
    island! {
        proof(a_block: &[Vector<i32, Const<4>>; 10240], b_block: &[Vector<i32, Const<4>>; 5120],
              c_block: &mut [Vector<i32, Const<2>>; 16384], k: u32 = 640, n: u32 = 128), cube_dim = 512;
        cuda if sm == 90 => block_tensor_cores::<Const<64>>(a_block, b_block, c_block, k, n, CONFIG, target),
        default => block_scalar(a_block, b_block, c_block, k, n, CONFIG),
    }
}

/// The GEMM on [`CONFIG_N256`]'s blocks.
#[islands]
#[cube(launch)]
pub fn gemm_i8_wgmma_n256(a: &[Word], bt: &[Word], c: &mut [Pair], #[comptime] k: u32, #[comptime] n: u32) {
    let (oa, ob, oc) = block_offsets(k, n, CONFIG_N256);
    let (a_block, b_block, c_block) = (&a[oa..], &bt[ob..], &mut c[oc..]);
    island! {
        proof(a_block: &[Vector<i32, Const<4>>; 5120], b_block: &[Vector<i32, Const<4>>; 10240],
              c_block: &mut [Vector<i32, Const<2>>; 16384], k: u32 = 640, n: u32 = 256), cube_dim = 256;
        cuda if sm == 90 => block_tensor_cores::<Const<128>>(a_block, b_block, c_block, k, n, CONFIG_N256, target),
        default => block_scalar(a_block, b_block, c_block, k, n, CONFIG_N256),
    }
}

/// The GEMM on [`CONFIG_MBARRIER`]'s blocks.
#[islands]
#[cube(launch)]
pub fn gemm_i8_wgmma_mbarrier(a: &[Word], bt: &[Word], c: &mut [Pair], #[comptime] k: u32, #[comptime] n: u32) {
    let (oa, ob, oc) = block_offsets(k, n, CONFIG_MBARRIER);
    let (a_block, b_block, c_block) = (&a[oa..], &bt[ob..], &mut c[oc..]);
    island! {
        proof(a_block: &[Vector<i32, Const<4>>; 10240], b_block: &[Vector<i32, Const<4>>; 5120],
              c_block: &mut [Vector<i32, Const<2>>; 16384], k: u32 = 640, n: u32 = 128), cube_dim = 512;
        cuda if sm == 90 => block_tensor_cores::<Const<64>>(a_block, b_block, c_block, k, n, CONFIG_MBARRIER, target),
        default => block_scalar(a_block, b_block, c_block, k, n, CONFIG_MBARRIER),
    }
}

/// The GEMM on [`CONFIG_M128`]'s blocks.
#[islands]
#[cube(launch)]
pub fn gemm_i8_wgmma_m128(a: &[Word], bt: &[Word], c: &mut [Pair], #[comptime] k: u32, #[comptime] n: u32) {
    let (oa, ob, oc) = block_offsets(k, n, CONFIG_M128);
    let (a_block, b_block, c_block) = (&a[oa..], &bt[ob..], &mut c[oc..]);
    island! {
        proof(a_block: &[Vector<i32, Const<4>>; 5120], b_block: &[Vector<i32, Const<4>>; 5120],
              c_block: &mut [Vector<i32, Const<2>>; 8192], k: u32 = 640, n: u32 = 128), cube_dim = 256;
        cuda if sm == 90 => block_tensor_cores::<Const<64>>(a_block, b_block, c_block, k, n, CONFIG_M128, target),
        default => block_scalar(a_block, b_block, c_block, k, n, CONFIG_M128),
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
    unsafe { launch_blocks(client, handles, shape, Blocks::M256N128, target) }
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
}

impl Blocks {
    /// Every variant, in the order the bench lists them.
    pub const ALL: [Blocks; 4] =
        [Blocks::M256N128, Blocks::M128N256, Blocks::M256N128Mbarrier, Blocks::M128N128Mbarrier];

    pub const fn config(self) -> Config {
        match self {
            Blocks::M256N128 => CONFIG,
            Blocks::M128N256 => CONFIG_N256,
            Blocks::M256N128Mbarrier => CONFIG_MBARRIER,
            Blocks::M128N128Mbarrier => CONFIG_M128,
        }
    }

    /// The variant in words: block shape and pipeline.
    pub fn label(self) -> String {
        let cfg = self.config();
        let pipeline = match cfg.pipeline {
            Pipeline::CubeBarrier => "cube barrier",
            Pipeline::Mbarrier => "mbarriers",
        };
        format!("{}×{} blocks, {}", cfg.block_m(), cfg.block_n, pipeline)
    }
}

/// Launches the GEMM on `blocks`' blocks.
///
/// # Safety
/// As [`launch`].
pub unsafe fn launch_blocks(
    client: &Client,
    (a, bt, c): (&cubecl::server::Handle, &cubecl::server::Handle, &cubecl::server::Handle),
    (m, k, n): (usize, usize, usize),
    blocks: Blocks,
    target: Target,
) {
    let cfg = blocks.config();
    let count = CubeCount::Static((n as u32) / cfg.block_n, (m as u32) / cfg.block_m(), 1);
    let dim = CubeDim::new_1d(cfg.units());
    // SAFETY: the caller's contract: the handles hold these many values.
    let (a, bt, c) = unsafe {
        (
            BufferArg::from_raw_parts(a.clone(), m * k / 16),
            BufferArg::from_raw_parts(bt.clone(), k * n / 16),
            BufferArg::from_raw_parts(c.clone(), m * n / 2),
        )
    };
    match blocks {
        Blocks::M256N128 => gemm_i8_wgmma::launch_with(client, count, dim, a, bt, c, k as u32, n as u32, target),
        Blocks::M128N256 => gemm_i8_wgmma_n256::launch_with(client, count, dim, a, bt, c, k as u32, n as u32, target),
        Blocks::M256N128Mbarrier => {
            gemm_i8_wgmma_mbarrier::launch_with(client, count, dim, a, bt, c, k as u32, n as u32, target)
        }
        Blocks::M128N128Mbarrier => {
            gemm_i8_wgmma_m128::launch_with(client, count, dim, a, bt, c, k as u32, n as u32, target)
        }
    }
}

/// The top-left block (`CONFIG.block_m()` rows, `CONFIG.block_n` columns) of an `m×n` output:
/// what a CPU run of the kernel on the first block of rows of `a` and of `bᵀ` computes.
pub fn top_left(c: &[i32], n: usize) -> Vec<i32> {
    let (rows, cols) = (CONFIG.block_m() as usize, CONFIG.block_n as usize);
    (0..rows).flat_map(|r| c[r * n..r * n + cols].to_vec()).collect()
}
