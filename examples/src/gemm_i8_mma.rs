//! int8 GEMM on `mma.sync`: `c[m×n] = a[m×k] · b[k×n]`, i8 inputs, i32 outputs, `a` row-major
//! and `b` column-major (stored as `bᵀ`: n rows of k contiguous bytes, the layout cuBLAS's int8
//! kernels take). Buffers are viewed as 16-byte words (`a`, `bᵀ`) and pairs of i32 (`c`).
//!
//! One cube computes a `block_m × block_n` block of `c` ([`Config`]); its warps each a
//! `16·tiles_m × 8·tiles_n` part. The block is an island:
//! - `cuda if sm >= 80`: a pipeline of `stages` shared-memory stages of 64 bytes of `k`,
//!   filled by `cp.async` copies; XOR-swizzled 16-byte chunks so that `ldmatrix` reads without
//!   bank conflicts; `ldmatrix.x4` into register fragments; `mma.sync` m16n8k32 into i32
//!   accumulators held in registers for the whole `k` loop.
//! - `default`: each unit its rows of the block, plain loops over packed words.
//!
//! Integer products and wrapping sums are exact in any order, so the arm is byte-equal to
//! `default`; the CPU proof runs the arm through each intrinsic's emulation on a `k` long
//! enough to reuse every stage.

use crate::error::ShapeError;
use cubecl::prelude::*;
use island_intrinsics::{cp_async, ldmatrix, mma_sync, portable};
use island_runtime::prelude::*;

/// The geometry of a cube's block (comptime).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Config {
    /// Warps down the block (`m`) and across it (`n`).
    pub warps_m: u32,
    pub warps_n: u32,
    /// 16-row `mma` tiles per warp down, 8-column tiles across (even: `ldmatrix.x4` loads two).
    pub tiles_m: u32,
    pub tiles_n: u32,
    /// Shared-memory stages in flight.
    pub stages: u32,
}

/// Bytes of `k` per stage.
pub const STAGE_K: u32 = 64;

impl Config {
    pub const fn block_m(&self) -> u32 {
        self.warps_m * self.tiles_m * 16
    }
    pub const fn block_n(&self) -> u32 {
        self.warps_n * self.tiles_n * 8
    }
    pub const fn units(&self) -> u32 {
        self.warps_m * self.warps_n * 32
    }
    /// 16-byte chunks of `a` and of `bᵀ` in one stage.
    pub const fn a_stage_chunks(&self) -> u32 {
        self.block_m() * STAGE_K / 16
    }
    pub const fn b_stage_chunks(&self) -> u32 {
        self.block_n() * STAGE_K / 16
    }
}

/// The configuration the kernel launches with: 128×128 blocks of four warps, each 64×64,
/// four stages (64 KiB of shared memory).
pub const CONFIG: Config = Config { warps_m: 2, warps_n: 2, tiles_m: 4, tiles_n: 8, stages: 4 };

/// The `k` of the island's proof: one [`CONFIG`] block over 384 (24 chunks, six stages of four).
pub const PROOF_K: u32 = 384;

type Word = Vector<i32, Const<4>>;
type Pair = Vector<i32, Const<2>>;

/// The shared-memory slot of 16-byte chunk `chunk` (0…3) of row `row` of a stage: the chunk
/// index XORed with bits 1–2 of the row, so the 8 rows an `ldmatrix` phase reads fall in 8
/// distinct bank groups.
#[cube]
fn slot(row: u32, chunk: u32) -> u32 {
    row * 4 + (chunk ^ ((row >> 1) & 3))
}

/// Issues the copies of `k` tile `kt` of the block's rows of `a` and `bᵀ` into `stage`.
#[allow(clippy::too_many_arguments)]
#[cube]
fn load_stage(
    a: &[Word],
    bt: &[Word],
    sa: &mut [Word],
    sb: &mut [Word],
    stage: u32,
    kt: u32,
    #[comptime] k: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    let kc = comptime!(k / 16);
    let units = comptime!(cfg.units());
    let a_chunks = comptime!(cfg.a_stage_chunks());
    let b_chunks = comptime!(cfg.b_stage_chunks());
    #[unroll]
    for i in 0..comptime!(a_chunks / units) {
        let idx = UNIT_POS + i * units;
        let (row, chunk) = (idx / 4, idx % 4);
        cp_async::copy16::call(sa, stage * a_chunks + slot(row, chunk), a, row * kc + kt * 4 + chunk, target);
    }
    #[unroll]
    for i in 0..comptime!(b_chunks / units) {
        let idx = UNIT_POS + i * units;
        let (row, chunk) = (idx / 4, idx % 4);
        cp_async::copy16::call(sb, stage * b_chunks + slot(row, chunk), bt, row * kc + kt * 4 + chunk, target);
    }
}

/// Elements `first` and `first + 1` of `w` (a constant wherever the loop around is unrolled).
#[cube]
fn pair(w: Word, first: u32) -> Pair {
    let mut p = Pair::empty();
    p.insert(0usize, w.extract_dynamic(first as usize));
    p.insert(1usize, w.extract_dynamic(first as usize + 1));
    p
}

/// The block on tensor cores: `a` the block's first row, `bt` its first column, `c` its
/// top-left element (rows `n / 2` pairs apart).
#[cube]
fn block_mma(
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
    let (tiles_m, tiles_n) = comptime!((cfg.tiles_m, cfg.tiles_n));
    let a_chunks = comptime!(cfg.a_stage_chunks());
    let b_chunks = comptime!(cfg.b_stage_chunks());
    let mut sa = Shared::<[Word]>::new_slice(comptime!((stages * a_chunks) as usize));
    let mut sb = Shared::<[Word]>::new_slice(comptime!((stages * b_chunks) as usize));
    let warp = UNIT_POS / 32;
    let lane = UNIT_POS % 32;
    let (wm, wn) = (warp / comptime!(cfg.warps_n), warp % comptime!(cfg.warps_n));
    let mut acc = Array::<Word>::new(comptime!((tiles_m * tiles_n) as usize));
    #[unroll]
    for i in 0..comptime!((tiles_m * tiles_n) as usize) {
        acc[i] = Word::new(0);
    }
    // The first `stages - 1` tiles in flight; one group per tile, empty past the end.
    #[unroll]
    for s in 0..comptime!(stages - 1) {
        if s < k_tiles {
            load_stage(a, bt, &mut sa, &mut sb, s, s, k, cfg, target);
        }
        cp_async::commit::call(target);
    }
    // Lane `l` names row `l % 8` of matrix `l / 8` of each `ldmatrix.x4`: for `a` the
    // matrices are (rows 0–7, 8–15) × (chunks 0, 1) of a 16×32 tile, for `bᵀ` (chunks 0, 1) ×
    // (rows 0–7, 8–15) of two 8-column tiles.
    let a_row = wm * comptime!(tiles_m * 16) + lane % 8 + 8 * ((lane / 8) % 2);
    let a_chunk = lane / 16;
    let b_row = wn * comptime!(tiles_n * 8) + lane % 8 + 8 * (lane / 16);
    let b_chunk = (lane / 8) % 2;
    // The `k` step is unrolled where the arm runs natively (fragments and accumulators in
    // registers) and left rolled under emulation, where each unrolled copy of the emulated
    // warp exchanges would only lengthen compilation, the same program either way.
    let native = comptime!(target.is_native());
    for kt in 0..k_tiles {
        // Tile `kt` has landed once at most `stages - 2` groups are pending; the barrier also
        // retires the stage read in the previous step, which the next copies overwrite.
        cp_async::wait::call(comptime!(stages - 2), target);
        sync_cube();
        let next = kt + stages - 1;
        if next < k_tiles {
            load_stage(a, bt, &mut sa, &mut sb, next % stages, next, k, cfg, target);
        }
        cp_async::commit::call(target);
        let stage = kt % stages;
        #[unroll(native)]
        for ks in 0..2u32 {
            let mut fa = Array::<Word>::new(tiles_m as usize);
            #[unroll(native)]
            for mt in 0..tiles_m {
                let row = a_row + mt * 16;
                fa[mt as usize] = ldmatrix::x4::call(&sa, stage * a_chunks + slot(row, ks * 2 + a_chunk), target);
            }
            let mut fb = Array::<Word>::new(comptime!(tiles_n as usize / 2));
            #[unroll(native)]
            for np in 0..comptime!(tiles_n / 2) {
                let row = b_row + np * 16;
                fb[np as usize] = ldmatrix::x4::call(&sb, stage * b_chunks + slot(row, ks * 2 + b_chunk), target);
            }
            #[unroll(native)]
            for mt in 0..tiles_m {
                #[unroll(native)]
                for nt in 0..tiles_n {
                    let b = pair(fb[(nt / 2) as usize], (nt % 2) * 2);
                    let i = (mt * tiles_n + nt) as usize;
                    acc[i] = mma_sync::m16n8k32_s8::call(fa[mt as usize], b, acc[i], target);
                }
            }
        }
    }
    // Lane `l` holds rows `l / 4` and `l / 4 + 8` of each tile, columns `2·(l % 4)` and `+1`.
    #[unroll]
    for mt in 0..tiles_m {
        #[unroll]
        for nt in 0..tiles_n {
            let v = acc[(mt * tiles_n + nt) as usize];
            #[unroll]
            for h in 0..2u32 {
                let row = wm * comptime!(tiles_m * 16) + mt * 16 + lane / 4 + 8 * h;
                let col = wn * comptime!(tiles_n * 8) + nt * 8 + 2 * (lane % 4);
                c[((row * n + col) / 2) as usize] = pair(v, 2 * h);
            }
        }
    }
}

/// The `default` block: unit `u` computes rows `u, u + units, …`, each output the sum over
/// packed words of `a`'s row and `bᵀ`'s row, in `k` order.
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
    for r in 0..comptime!(cfg.block_m() / units) {
        let row = UNIT_POS + r * units;
        for pair in 0..comptime!(cfg.block_n() / 2) {
            let mut s0 = 0i32;
            let mut s1 = 0i32;
            for w in 0..comptime!(kc * 4) {
                let x = a[(row * kc + w / 4) as usize].extract_dynamic((w % 4) as usize);
                s0 = portable::dot4_i8(x, bt[(2 * pair * kc + w / 4) as usize].extract_dynamic((w % 4) as usize), s0);
                s1 = portable::dot4_i8(
                    x,
                    bt[((2 * pair + 1) * kc + w / 4) as usize].extract_dynamic((w % 4) as usize),
                    s1,
                );
            }
            let mut p = Pair::empty();
            p.insert(0usize, s0);
            p.insert(1usize, s1);
            c[((row * n) / 2 + pair) as usize] = p;
        }
    }
}

#[islands]
#[cube(launch)]
pub fn gemm_i8_mma(a: &[Word], bt: &[Word], c: &mut [Pair], #[comptime] k: u32, #[comptime] n: u32) {
    let kc = comptime!(k / 16);
    let a_block = &a[(CUBE_POS_Y * CONFIG.block_m() * kc) as usize..];
    let b_block = &bt[(CUBE_POS_X * CONFIG.block_n() * kc) as usize..];
    let c_block = &mut c[((CUBE_POS_Y * CONFIG.block_m() * n + CUBE_POS_X * CONFIG.block_n()) / 2) as usize..];
    island! {
        proof(a_block: &[Vector<i32, Const<4>>; (CONFIG.block_m() * PROOF_K / 16) as usize],
              b_block: &[Vector<i32, Const<4>>; (CONFIG.block_n() * PROOF_K / 16) as usize],
              c_block: &mut [Vector<i32, Const<2>>; (CONFIG.block_m() * CONFIG.block_n() / 2) as usize],
              k: u32 = PROOF_K, n: u32 = CONFIG.block_n()), cube_dim = CONFIG.units();
        cuda if sm >= 80 => block_mma(a_block, b_block, c_block, k, n, CONFIG, target),
        default => block_scalar(a_block, b_block, c_block, k, n, CONFIG),
    }
}

/// Checks a shape before launch: `m` and `n` whole blocks, `k` whole stages.
pub fn check(m: usize, k: usize, n: usize) -> Result<(), ShapeError> {
    let (bm, bn) = (CONFIG.block_m() as usize, CONFIG.block_n() as usize);
    if m == 0
        || n == 0
        || k == 0
        || !m.is_multiple_of(bm)
        || !n.is_multiple_of(bn)
        || !k.is_multiple_of(STAGE_K as usize)
    {
        return Err(ShapeError(format!(
            "the mma.sync int8 GEMM works on whole {bm}×{bn} blocks and {STAGE_K}-byte steps of k: m must be a positive multiple of {bm}, n of {bn}, k of {STAGE_K}; got {m}×{k}×{n}"
        )));
    }
    Ok(())
}

/// Launches the GEMM with the given tag; `bt` holds `b` column-major (n rows of k bytes).
///
/// # Safety
/// `a` must hold m·k i8, `bt` k·n i8 and `c` m·n i32 values, and the shape must pass [`check`].
pub unsafe fn launch(
    client: &Client,
    (a, bt, c): (&cubecl::server::Handle, &cubecl::server::Handle, &cubecl::server::Handle),
    (m, k, n): (usize, usize, usize),
    target: Target,
) {
    let count = CubeCount::Static((n as u32) / CONFIG.block_n(), (m as u32) / CONFIG.block_m(), 1);
    unsafe {
        gemm_i8_mma::launch_with(
            client,
            count,
            CubeDim::new_1d(CONFIG.units()),
            BufferArg::from_raw_parts(a.clone(), m * k / 16),
            BufferArg::from_raw_parts(bt.clone(), k * n / 16),
            BufferArg::from_raw_parts(c.clone(), m * n / 2),
            k as u32,
            n as u32,
            target,
        );
    }
}

/// The top-left `CONFIG.block_m()` square of an `m×n` output: what a CPU run of the kernel on
/// the first block of rows of `a` and of `bᵀ` computes.
pub fn top_left(c: &[i32], n: usize) -> Vec<i32> {
    let block = CONFIG.block_m() as usize;
    (0..block).flat_map(|r| c[r * n..r * n + block].to_vec()).collect()
}

/// The plain-Rust reference: `bt` is `b` column-major. Rows are split over the host's cores.
pub fn reference(m: usize, k: usize, n: usize, a: &[i8], bt: &[i8]) -> Vec<i32> {
    let mut out = vec![0i32; m * n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(m.max(1));
    let rows_per = m.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (chunk, rows) in out.chunks_mut(rows_per * n).enumerate() {
            s.spawn(move || {
                for (r, row) in rows.chunks_mut(n).enumerate() {
                    let x = &a[(chunk * rows_per + r) * k..][..k];
                    for (j, out) in row.iter_mut().enumerate() {
                        let y = &bt[j * k..][..k];
                        *out = x.iter().zip(y).fold(0i32, |s, (&p, &q)| s.wrapping_add(p as i32 * q as i32));
                    }
                }
            });
        }
    });
    out
}
