//! A persistent, warp-specialized int8 GEMM on Hopper: `c[m×n] = a[m×k] · b[k×n]`, i8 inputs,
//! i32 outputs, `a` row-major and `b` column-major (stored as `bᵀ`), the layouts and reference
//! of [`crate::gemm_i8_mma`].
//!
//! One cube per multiprocessor (at most one per tile) walks the `128 × block_n` tiles of `c`
//! in a swizzled order ([`tile_of`]: bands of [`GROUP`] rows of tiles, down each band's columns,
//! so the tiles in flight at once share rows of `a` and columns of `bᵀ` in L2), tile `t` taken
//! by cube `t % cubes`. The cube has three roles ([`UNITS`] units), one island:
//! - `cuda if sm == 90`: the first warpgroup's unit 0 produces: for every stage of every tile
//!   of the cube, it waits for the ring slot's "empty" barrier, expects the stage's bytes on its
//!   "full" barrier and issues the two TMA boxes ([`island_intrinsics::tma`]). The two consumer
//!   warpgroups each run their 64 rows of the tile through
//!   [`island_intrinsics::wgmma_consume`] (the whole `k` loop in one asm statement, one stage of
//!   `wgmma`s in flight), then store their fragment to `c` from registers while the producer
//!   already fills the ring with the next tile's stages: a tile's store overlaps the next
//!   tile's copies, and no cube waits for a launch to start its first copies. The ring's
//!   position runs on across tiles. Every unit ends in [`mbarrier::retire`] (the emulation's
//!   contract for roles that wait apart).
//! - `default`: the same walk, each unit its share of each tile's outputs, plain loops over
//!   packed words.
//!
//! Integer products and wrapping sums are exact in any order, so the arm is byte-equal to
//! `default`; the CPU proof runs all three roles through the intrinsics' emulations (rounds of
//! waits decided by the barriers' books) on two tiles whose ring wraps within and across them.

use crate::error::ShapeError;
use crate::gemm_i8_wgmma::{Maps, STAGE_K};
use cubecl::prelude::*;
use island_intrinsics::wgmma::WARPGROUP;
use island_intrinsics::wgmma_consume::{RELEASES_PER_GROUP, ROWS_PER_GROUP, consume_s8};
use island_intrinsics::{mbarrier, portable, tma};
use island_runtime::prelude::*;
use island_runtime::tensor_map::{self, TensorMapError, TmaTile};

/// Consumer warpgroups per cube, each 64 rows of a tile.
pub const CONSUMER_GROUPS: u32 = 2;
/// Rows of a tile.
pub const BLOCK_M: u32 = CONSUMER_GROUPS * ROWS_PER_GROUP;
/// Units of a cube: a producer warpgroup, then the consumers.
pub const UNITS: u32 = (1 + CONSUMER_GROUPS) * WARPGROUP;
/// Arrivals on a slot's "empty" barrier per stage: one per consumer warp.
pub const RELEASES: u32 = CONSUMER_GROUPS * RELEASES_PER_GROUP;
/// Rows of tiles per band of the walk ([`tile_of`]).
pub const GROUP: u32 = 16;

/// The geometry of a tile (comptime): `block_n` columns (the `N` of each consumer's `wgmma`, a
/// multiple of 8, at most 256) through a ring of `stages` slots (at least 2).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Config {
    pub block_n: u32,
    pub stages: u32,
}

/// 128×256 tiles, four stages of 48 KiB (192 KiB of shared memory).
pub const CONFIG_N256: Config = Config { block_n: 256, stages: 4 };
/// 128×128 tiles, six stages of 32 KiB (192 KiB).
pub const CONFIG_N128: Config = Config { block_n: 128, stages: 6 };

/// The TMA box of one stage of `a` (`k` bytes a row): a tile's 128 rows × [`STAGE_K`] bytes, at
/// [`crate::gemm_i8_wgmma::LAYOUT`] (the 128-byte swizzle).
pub const fn tile_a(k: u32) -> TmaTile {
    TmaTile { row_bytes: k, box_rows: BLOCK_M, box_bytes: STAGE_K, swizzle: 128 }
}

/// The TMA box of one stage of `bᵀ` (`k` bytes a row): a tile's columns × [`STAGE_K`] bytes.
pub const fn tile_b(k: u32, cfg: Config) -> TmaTile {
    TmaTile { row_bytes: k, box_rows: cfg.block_n, box_bytes: STAGE_K, swizzle: 128 }
}

type Word = Vector<i32, Const<4>>;
type Pair = Vector<i32, Const<2>>;

/// Tile `t`'s row and column of tiles: bands of [`GROUP`] rows of tiles (fewer in the last), each
/// walked column by column, down the band's rows.
#[cube]
pub fn tile_of(t: u32, #[comptime] tiles_m: u32, #[comptime] tiles_n: u32) -> (u32, u32) {
    let band_tiles = comptime!(GROUP * tiles_n);
    let first = (t / band_tiles) * GROUP;
    let within = t % band_tiles;
    // Initialized from a variable: a mutable local initialized from a constant stays a
    // compile-time value in CubeCL 0.11.
    let mut rows = tiles_m - first;
    if rows > GROUP {
        rows = GROUP;
    }
    (first + within % rows, within / rows)
}

/// The three roles on tensor cores (the module's steps).
#[cube]
#[allow(clippy::too_many_arguments)]
fn tiles_tensor_cores<N: Size>(
    a: &[Word],
    map_a: &[u32],
    bt: &[Word],
    map_b: &[u32],
    c: &mut [Pair],
    #[comptime] m: u32,
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
    #[comptime] target: Target,
) {
    let stages = comptime!(cfg.stages);
    let (ta, tb) = (comptime!(tile_a(k)), comptime!(tile_b(k, cfg)));
    let (a_words, b_words) = (comptime!(ta.box_size() / 16), comptime!(tb.box_size() / 16));
    let mut tiles = Shared::<[Word]>::new_aligned_slice(comptime!((stages * (a_words + b_words)) as usize), 1024usize);
    let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(2 * stages, UNITS, &target)), 8usize);
    if UNIT_POS == 0 {
        for i in 0..stages {
            mbarrier::init::call(&mut bars, i, 1u32, target);
            mbarrier::init::call(&mut bars, stages + i, RELEASES, target);
        }
    }
    sync_cube();
    let (tiles_m, tiles_n) = (comptime!(m / BLOCK_M), comptime!(n / cfg.block_n));
    let total = comptime!(tiles_m * tiles_n);
    let k_tiles = comptime!(k / STAGE_K);
    if UNIT_POS == 0 {
        tma::acquire_map::call(map_a, target);
        tma::acquire_map::call(map_b, target);
        let mut g = 0u32;
        let mut t = CUBE_POS_X;
        while t < total {
            let (tm, tn) = tile_of(t, tiles_m, tiles_n);
            for kt in 0..k_tiles {
                let slot = g % stages;
                // The `j`-th use of a slot waits until the consumers released use `j − 1`.
                if g >= stages {
                    mbarrier::wait::call(&mut bars, stages + slot, (g / stages + 1) % 2, target);
                }
                tma::arrive_expect_tx::call(&mut bars, slot, comptime!(ta.box_size() + tb.box_size()), target);
                let x = kt * comptime!(STAGE_K / 16);
                tma::load_2d::call(&mut tiles, slot * a_words, map_a, a, x, tm * BLOCK_M, &mut bars, slot, ta, target);
                tma::load_2d::call(
                    &mut tiles,
                    comptime!(stages * a_words) + slot * b_words,
                    map_b,
                    bt,
                    x,
                    tn * comptime!(cfg.block_n),
                    &mut bars,
                    slot,
                    tb,
                    target,
                );
                g += 1;
            }
            t += CUBE_COUNT_X;
        }
    } else if UNIT_POS >= WARPGROUP {
        let group = UNIT_POS / WARPGROUP - 1;
        let mut first = 0u32;
        let mut t = CUBE_POS_X;
        while t < total {
            let (tm, tn) = tile_of(t, tiles_m, tiles_n);
            let acc = consume_s8::call::<N>(
                &tiles,
                &mut bars,
                Vector::<i32, N>::new(0i32),
                first,
                k_tiles,
                group,
                stages,
                ta,
                tb,
                target,
            );
            store_fragment::<N>(acc, c, tm * BLOCK_M + group * ROWS_PER_GROUP, tn * comptime!(cfg.block_n), n);
            first += k_tiles;
            t += CUBE_COUNT_X;
        }
    }
    mbarrier::retire(&mut bars, target);
}

/// Writes a consumer warpgroup's accumulator fragment to `c` at row `row0`, column `col0`.
#[cube]
fn store_fragment<N: Size>(acc: Vector<i32, N>, c: &mut [Pair], row0: u32, col0: u32, #[comptime] n: u32) {
    // Register `r` of unit `u` holds row `16·warp + (u % 32)/4 + 8·((r/2) % 2)` of the
    // warpgroup's rows, column `8·(r/4) + 2·(u % 4) + r % 2`: pairs of registers are pairs of
    // columns.
    let unit = UNIT_POS % WARPGROUP;
    let (warp, g, t) = (unit / 32, (unit % 32) / 4, unit % 4);
    #[unroll]
    for r in 0..comptime!(N::value() / 2) {
        let row = row0 + 16 * warp + g + 8 * (r as u32 % 2);
        let col = col0 + 8 * (r as u32 / 2) + 2 * t;
        let mut p = Pair::empty();
        p.insert(0usize, acc.extract(2 * r));
        p.insert(1usize, acc.extract(2 * r + 1));
        c[((row * n + col) / 2) as usize] = p;
    }
}

/// The `default`: the same walk of tiles; unit `u` computes pairs of outputs `u, u + UNITS, …`
/// of each tile, each output the sum over packed words of `a`'s row and `bᵀ`'s row, in `k`
/// order.
#[cube]
fn tiles_scalar(
    a: &[Word],
    bt: &[Word],
    c: &mut [Pair],
    #[comptime] m: u32,
    #[comptime] k: u32,
    #[comptime] n: u32,
    #[comptime] cfg: Config,
) {
    let kc = comptime!(k / 16);
    let pairs = comptime!(cfg.block_n / 2);
    let (tiles_m, tiles_n) = (comptime!(m / BLOCK_M), comptime!(n / cfg.block_n));
    let mut t = CUBE_POS_X;
    while t < comptime!(tiles_m * tiles_n) {
        let (tm, tn) = tile_of(t, tiles_m, tiles_n);
        let mut e = UNIT_POS;
        while e < comptime!(BLOCK_M * pairs) {
            let row = tm * BLOCK_M + e / pairs;
            let col = tn * comptime!(cfg.block_n) + 2 * (e % pairs);
            let mut s0 = 0i32;
            let mut s1 = 0i32;
            for w in 0..comptime!(kc * 4) {
                let x = a[(row * kc + w / 4) as usize].extract_dynamic((w % 4) as usize);
                s0 = portable::dot4_i8(x, bt[(col * kc + w / 4) as usize].extract_dynamic((w % 4) as usize), s0);
                s1 = portable::dot4_i8(x, bt[((col + 1) * kc + w / 4) as usize].extract_dynamic((w % 4) as usize), s1);
            }
            let mut p = Pair::empty();
            p.insert(0usize, s0);
            p.insert(1usize, s1);
            c[((row * n + col) / 2) as usize] = p;
            e += UNITS;
        }
        t += CUBE_COUNT_X;
    }
}

/// The problem an entry point's island is proven on: two tiles down `m` (so the walk moves the
/// ring on from one tile to the next), `k` of five stages (so every ring wraps, within the first
/// tile or across into the second, and slots are reused in both parities).
pub const PROOF_M: u32 = 2 * BLOCK_M;
pub const PROOF_K: u32 = 640;

/// Lengths of the proof inputs for `cfg`: `a`'s and `bᵀ`'s rows of [`PROOF_K`] bytes in 16-byte
/// words, and `c`'s pairs.
pub const fn proof_a_words() -> u32 {
    PROOF_M * PROOF_K / 16
}
pub const fn proof_b_words(cfg: Config) -> u32 {
    cfg.block_n * PROOF_K / 16
}
pub const fn proof_c_pairs(cfg: Config) -> u32 {
    PROOF_M * cfg.block_n / 2
}

/// One entry point for a configuration: the island reads the operands through their tensor maps
/// (`map_a`, `map_b`, one `u32` slice of 32 words each, [`Maps`]). `$n` is the `N` of each
/// consumer's `wgmma`, halved (the fragment's registers).
macro_rules! persistent_entry {
    ($(#[$doc:meta])* $name:ident, $cfg:ident, $n:ty) => {
        $(#[$doc])*
        #[islands]
        #[cube(launch)]
        pub fn $name(
            a: &[Word],
            bt: &[Word],
            map_a: &[u32],
            map_b: &[u32],
            c: &mut [Pair],
            #[comptime] m: u32,
            #[comptime] k: u32,
            #[comptime] n: u32,
        ) {
            island! {
                proof(a: &[Vector<i32, Const<4>>; crate::gemm_i8_persistent::proof_a_words()],
                      map_a: tensor_map(a, crate::gemm_i8_persistent::tile_a(crate::gemm_i8_persistent::PROOF_K)),
                      bt: &[Vector<i32, Const<4>>; crate::gemm_i8_persistent::proof_b_words(crate::gemm_i8_persistent::$cfg)],
                      map_b: tensor_map(bt, crate::gemm_i8_persistent::tile_b(crate::gemm_i8_persistent::PROOF_K, crate::gemm_i8_persistent::$cfg)),
                      c: &mut [Vector<i32, Const<2>>; crate::gemm_i8_persistent::proof_c_pairs(crate::gemm_i8_persistent::$cfg)],
                      m: u32 = crate::gemm_i8_persistent::PROOF_M,
                      k: u32 = crate::gemm_i8_persistent::PROOF_K,
                      n: u32 = crate::gemm_i8_persistent::$cfg.block_n),
                      cube_dim = crate::gemm_i8_persistent::UNITS;
                cuda if sm == 90 => tiles_tensor_cores::<$n>(a, map_a, bt, map_b, c, m, k, n, $cfg, target),
                default => tiles_scalar(a, bt, c, m, k, n, $cfg),
            }
        }
    };
}

persistent_entry!(
    /// The GEMM on [`CONFIG_N256`]'s tiles.
    gemm_i8_persistent_n256, CONFIG_N256, Const<128>
);
persistent_entry!(
    /// The GEMM on [`CONFIG_N128`]'s tiles.
    gemm_i8_persistent_n128, CONFIG_N128, Const<64>
);

/// The persistent GEMM's variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tiles {
    /// [`CONFIG_N256`]: 128×256 tiles, four stages.
    M128N256,
    /// [`CONFIG_N128`]: 128×128 tiles, six stages.
    M128N128,
}

impl Tiles {
    /// Every variant, in the order the bench lists them.
    pub const ALL: [Tiles; 2] = [Tiles::M128N256, Tiles::M128N128];

    pub const fn config(self) -> Config {
        match self {
            Tiles::M128N256 => CONFIG_N256,
            Tiles::M128N128 => CONFIG_N128,
        }
    }

    /// The variant in words.
    pub fn label(self) -> String {
        let cfg = self.config();
        format!("persistent {BLOCK_M}×{}, {} stages", cfg.block_n, cfg.stages)
    }
}

/// Checks a shape before launch: `m` and `n` whole tiles of every variant, `k` whole stages of
/// fewer than 2^16.
pub fn check(m: usize, k: usize, n: usize) -> Result<(), ShapeError> {
    let (bm, bn) = (BLOCK_M as usize, CONFIG_N256.block_n.max(CONFIG_N128.block_n) as usize);
    let stage = STAGE_K as usize;
    if m == 0
        || n == 0
        || k == 0
        || !m.is_multiple_of(bm)
        || !n.is_multiple_of(bn)
        || !k.is_multiple_of(stage)
        || k / stage >= 1 << 16
        || u32::try_from(m * n).is_err()
    {
        return Err(ShapeError(format!(
            "the persistent int8 GEMM works on whole {bm}×{bn} tiles and {stage}-byte steps of k (fewer than 65,536) with m·n below 2^32: m must be a positive multiple of {bm}, n of {bn}, k of {stage}; got {m}×{k}×{n}"
        )));
    }
    Ok(())
}

/// Encodes the tensor maps of `a` (m×k) and `bt` (n×k) for `tiles`' boxes on `client`'s device
/// (zeros on a runtime without TMA, whose emulation reads the operands directly).
pub fn maps(
    client: &Client,
    (a, bt): (&cubecl::server::Handle, &cubecl::server::Handle),
    (m, k, n): (usize, usize, usize),
    tiles: Tiles,
) -> Result<Maps, TensorMapError> {
    let map_a = tensor_map::map_for(client, a, 0, m * k, &tile_a(k as u32))?;
    let map_b = tensor_map::map_for(client, bt, 0, n * k, &tile_b(k as u32, tiles.config()))?;
    Ok(Maps { a: client.create_from_slice(&map_a), b: client.create_from_slice(&map_b) })
}

/// Cubes a launch on `client` runs: one per multiprocessor, at most one per tile (one per tile
/// where the runtime names no multiprocessor count, as the CPU runtime does).
pub fn cubes(client: &Client, (m, n): (usize, usize), tiles: Tiles) -> u32 {
    let count = (m / BLOCK_M as usize * (n / tiles.config().block_n as usize)) as u32;
    client.properties().hardware.num_streaming_multiprocessors.map_or(count, |sms| sms.min(count))
}

/// Launches the GEMM on `tiles`' variant over `cubes` cubes ([`cubes`] where `None`), reading its operands through
/// `maps` ([`maps`] for these buffers, this shape and variant), encoded here when `None`; a map
/// the driver refuses is an error before launch.
///
/// # Safety
/// `a` must hold m·k i8, `bt` k·n i8 and `c` m·n i32 values, the shape must pass [`check`], and
/// `maps`, if given, must be those of `a` and `bt`.
pub unsafe fn launch(
    client: &Client,
    (a, bt, c): (&cubecl::server::Handle, &cubecl::server::Handle, &cubecl::server::Handle),
    (m, k, n): (usize, usize, usize),
    tiles: Tiles,
    maps: Option<&Maps>,
    cubes: Option<u32>,
    target: Target,
) -> Result<(), TensorMapError> {
    let encoded;
    let maps = match maps {
        Some(maps) => maps,
        None => {
            encoded = self::maps(client, (a, bt), (m, k, n), tiles)?;
            &encoded
        }
    };
    let count = CubeCount::Static(cubes.unwrap_or_else(|| self::cubes(client, (m, n), tiles)), 1, 1);
    let dim = CubeDim::new_1d(UNITS);
    // SAFETY: the caller's contract: the handles hold these many values; each map buffer holds
    // one 128-byte map, 32 words.
    let (a, bt, c, ma, mb) = unsafe {
        (
            BufferArg::from_raw_parts(a.clone(), m * k / 16),
            BufferArg::from_raw_parts(bt.clone(), k * n / 16),
            BufferArg::from_raw_parts(c.clone(), m * n / 2),
            BufferArg::from_raw_parts(maps.a.clone(), tensor_map::MAP_WORDS as usize),
            BufferArg::from_raw_parts(maps.b.clone(), tensor_map::MAP_WORDS as usize),
        )
    };
    let (m, k, n) = (m as u32, k as u32, n as u32);
    match tiles {
        Tiles::M128N256 => gemm_i8_persistent_n256::launch_with(client, count, dim, a, bt, ma, mb, c, m, k, n, target),
        Tiles::M128N128 => gemm_i8_persistent_n128::launch_with(client, count, dim, a, bt, ma, mb, c, m, k, n, target),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`tile_of`]'s formula, in plain Rust, visits every tile once, bands of `GROUP` rows (the
    /// last one shorter) column by column (the kernel's own walk is checked by whole outputs).
    #[test]
    fn the_walks_formula_is_a_permutation_of_the_tiles() {
        for (tiles_m, tiles_n) in [(32u32, 16u32), (64, 32), (4, 56), (20, 3), (1, 1)] {
            let mut seen = vec![false; (tiles_m * tiles_n) as usize];
            for t in 0..tiles_m * tiles_n {
                let band_tiles = GROUP * tiles_n;
                let first = t / band_tiles * GROUP;
                let rows = GROUP.min(tiles_m - first);
                let (tm, tn) = (first + t % band_tiles % rows, t % band_tiles / rows);
                assert!(tm < tiles_m && tn < tiles_n, "tile {t} of {tiles_m}×{tiles_n} at ({tm}, {tn})");
                let i = (tm * tiles_n + tn) as usize;
                assert!(!seen[i], "tile ({tm}, {tn}) visited twice");
                seen[i] = true;
            }
        }
    }

    #[test]
    fn bad_shapes_are_refused_with_their_numbers() {
        let e = check(100, 4096, 4096).unwrap_err();
        assert!(e.0.contains("100×4096×4096"), "{e}");
        assert!(check(128, 100, 256).is_err());
        assert!(check(128, 128, 128).is_err(), "n must be whole 256-column tiles");
        assert!(check(512, 4096, 14336).is_ok());
    }
}
