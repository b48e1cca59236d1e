//! The Tensor Memory Accelerator: PTX `cp.async.bulk.tensor` (sm_90), a box of a tensor copied
//! from global to shared memory by one instruction of one unit, swizzled on the way as a `wgmma`
//! descriptor reads it ([`crate::wgmma::Layout`]), out-of-bounds parts filled with zeros, its
//! completion counted in bytes on an [`crate::mbarrier`] barrier.
//!
//! The tensor is described by a tensor map ([`island_runtime::tensor_map`]): a two-dimensional
//! byte tensor of rows `row_bytes` long and the `box_rows × box_bytes` box a copy moves
//! ([`TmaTile`]). A proof passes one as `map: tensor_map(src, TILE)`; a launcher encodes it with
//! [`island_runtime::tensor_map::map_for`]. The box lands at a 16-byte word of a shared slice
//! aligned to the swizzle's repeat (`8 · swizzle` bytes, 1024 for 128), row `r` at
//! `r · box_bytes` bytes from its start, each 16-byte chunk's bits 4… XORed with bits 7… of its
//! offset (`log2(swizzle / 16)` of them).
//!
//! A pipeline: the unit that issues the copies acquires each map once ([`acquire_map`]); per
//! stage it calls [`arrive_expect_tx`] with the box's bytes and [`load_2d`] on
//! the same barrier; every unit [`crate::mbarrier::wait`]s for the phase. Before a
//! slot is refilled, every unit must be done reading it (a cube barrier, or an "empty" barrier
//! the producer waits for).
//!
//! Emulation: [`load_2d`] copies the box at once from the tensor it is given beside the map, by
//! the calling unit, and books its bytes as delivered on its barrier; [`arrive_expect_tx`] books
//! an arrival expecting its bytes, so a wrong byte count fails the next wait on the CPU as it
//! would hang the native one ([`crate::mbarrier`]'s books). [`acquire_map`] does nothing. What it
//! cannot catch: a map that describes another tensor or box than the `TILE` the call names (the
//! CPU never reads the map), a slot refilled while it is still read, or a missing
//! [`acquire_map`]. The conformance check ([`tma_load_2d`]: ten boxes in the four swizzle modes,
//! out of bounds in rows, columns and both, native against emulation) covers the first on the
//! device, and a GEMM's whole-output comparison the second. A missing
//! acquire shows only when the copy engine still holds an older map at that address, which no
//! check here arranges: it is a rule of the API, stated here and at [`acquire_map`].

use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;
use island_runtime::tensor_map::TmaTile;

/// Makes the map the launch wrote to global memory visible to the copy engine, which reads it
/// through its own proxy and caches it. The unit that issues [`load_2d`]s calls it once per map,
/// before its first copy (a fence per copy would also invalidate the cached map each time).
#[intrinsic(
    name = "tma::acquire_map",
    semantics = synchronizing("the wait, fence and barrier phase that order an asynchronous copy with its readers"),
    summary = "acquires a tensor map written before the launch for the copy engine's proxy, once per map (sm_90)",
    check = crate::tma::tma_load_2d,
    lowerings(cuda if sm >= 90 => "fence.proxy.tensormap::generic.acquire.gpu" sass "UTMACCTL"),
)]
pub mod acquire_map {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(map: &[u32]) {
        let tensor = map.slice(0, 1).as_ptr();
        gpu_asm!("fence.proxy.tensormap::generic.acquire.gpu [{}], 128;", in(_) tensor);
    }

    /// Nothing: the emulated copy reads the tensor, not the map.
    #[cube]
    pub fn emulate(map: &[u32]) {
        let _ = map;
    }
}

/// One arrival on barrier `index`'s current phase that also makes the phase wait for `bytes` more
/// bytes of asynchronous copies completing on it (a [`load_2d`]'s box). The unit that
/// issues the copies calls it, before or after issuing them, once per phase.
#[intrinsic(
    name = "mbarrier::arrive_expect_tx",
    semantics = synchronizing("the wait, fence and barrier phase that order an asynchronous copy with its readers"),
    summary = "one mbarrier arrival that also expects `bytes` of asynchronous copies on the phase (sm_90)",
    check = crate::tma::tma_load_2d,
    lowerings(cuda if sm >= 90 => "mbarrier.arrive.expect_tx.shared::cta.b64" sass "SYNCS.ARRIVE.TRANS64"),
)]
pub mod arrive_expect_tx {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(bars: &mut [u64], index: u32, bytes: u32) {
        let at = bars.slice_mut(index as usize, index as usize + 1).as_mut_ptr();
        gpu_asm!(
            "{{ .reg .u64 a, st; .reg .u32 s; cvta.to.shared.u64 a, {}; cvt.u32.u64 s, a; mbarrier.arrive.expect_tx.shared::cta.b64 st, [s], {}; }}",
            in(_) at, in(_) bytes
        );
    }

    /// Booked: one arrival expecting `bytes` (the emulated copies landed at their issue and
    /// booked theirs as delivered).
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32, bytes: u32) {
        crate::mbarrier::book_arrival(bars, index, bytes);
    }
}

/// Copies the box of `map` at column word `x` (16 bytes each) and row `y` to `tile`, starting
/// at word `at`, completing on barrier `bar` of `bars`. `src` is the tensor `map` describes, as
/// `tile` (`map`'s `TILE`) says; the native copy reads it through the map. One unit calls it.
#[intrinsic(
    name = "tma::load_2d",
    semantics = synchronizing("the wait, fence and barrier phase that order an asynchronous copy with its readers"),
    summary = "one unit copies a swizzled box of a 2-D tensor to shared memory, zeros out of bounds, completing on an mbarrier (sm_90)",
    check = crate::tma::tma_load_2d,
    lowerings(cuda if sm >= 90 => "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" sass "UTMALDG"),
)]
pub mod load_2d {
    use cubecl::prelude::*;
    use island_runtime::tensor_map::TmaTile;

    /// The CUDA lowering: the copy reads the tensor through the map (acquired once by
    /// [`super::acquire_map`]).
    #[cube]
    pub fn cuda(tile: &mut [Vector<i32, Const<4>>], at: u32, map: &[u32], x: u32, y: u32, bars: &mut [u64], bar: u32) {
        let to = tile.slice_mut(at as usize, at as usize + 1).as_mut_ptr();
        let barrier = bars.slice_mut(bar as usize, bar as usize + 1).as_mut_ptr();
        let tensor = map.slice(0, 1).as_ptr();
        let column = x * 16;
        gpu_asm!(
            "{{ .reg .u64 a, b; .reg .u32 d, s; cvta.to.shared.u64 a, {}; cvt.u32.u64 d, a; cvta.to.shared.u64 b, {}; cvt.u32.u64 s, b; \
             cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [d], [{}, {{{}, {}}}], [s]; }}",
            in(_) to, in(_) barrier, in(_) tensor, in(_) column, in(_) y
        );
    }

    /// The box, copied at once from `src` by this unit ([`land_box`](crate::tma::land_box)), and its bytes
    /// booked as delivered on barrier `bar` ([`crate::mbarrier`]'s books).
    #[cube]
    pub fn emulate(
        tile: &mut [Vector<i32, Const<4>>],
        at: u32,
        map: &[u32],
        src: &[Vector<i32, Const<4>>],
        x: u32,
        y: u32,
        bars: &mut [u64],
        bar: u32,
        #[comptime] layout: TmaTile,
    ) {
        let _ = map;
        crate::mbarrier::book_delivery(bars, bar, comptime!(layout.box_size()));
        crate::tma::land_box(tile, at, src, x, y, layout);
    }
}

/// What a [`load_2d`] writes: the box of `src` at column word `x` and row `y`, at word `at` of
/// `tile`, each 16-byte chunk at its swizzled place, zeros outside the tensor.
#[cube]
pub fn land_box(
    tile: &mut [Vector<i32, Const<4>>],
    at: u32,
    src: &[Vector<i32, Const<4>>],
    x: u32,
    y: u32,
    #[comptime] layout: TmaTile,
) {
    let row_words = comptime!(layout.row_bytes / 16);
    let box_words = comptime!(layout.box_bytes / 16);
    let rows = src.len() as u32 / row_words;
    for r in 0..comptime!(layout.box_rows) {
        for w in 0..box_words {
            let mut byte = at * 16 + (r * box_words + w) * 16;
            if comptime!(layout.swizzle > 0) {
                byte ^= ((byte >> 7) & comptime!(layout.swizzle / 16 - 1)) << 4;
            }
            let (row, word) = (y + r, x + w);
            let mut value = Vector::<i32, Const<4>>::new(0);
            if row < rows && word < row_words {
                value = src[(row * row_words + word) as usize];
            }
            tile[(byte / 16) as usize] = value;
        }
    }
}

// The check: an island whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

type Word = Vector<i32, Const<4>>;

/// The tensor of [`tma_load_2d`], per cube: 32 rows of 256 bytes.
const ROW_BYTES: u32 = 256;
const ROWS: u32 = 32;
/// Its boxes, 1024 bytes each, in every swizzle mode.
pub const BOX_128: TmaTile = TmaTile { row_bytes: ROW_BYTES, box_rows: 8, box_bytes: 128, swizzle: 128 };
pub const BOX_64: TmaTile = TmaTile { row_bytes: ROW_BYTES, box_rows: 16, box_bytes: 64, swizzle: 64 };
pub const BOX_32: TmaTile = TmaTile { row_bytes: ROW_BYTES, box_rows: 32, box_bytes: 32, swizzle: 32 };
pub const BOX_PLAIN: TmaTile = TmaTile { row_bytes: ROW_BYTES, box_rows: 4, box_bytes: 256, swizzle: 0 };
/// Words of one box in shared memory.
const BOX_WORDS: u32 = 64;

/// Copy `n` of [`tma_load_2d`]: unit 0 expects the box's bytes and issues it, every unit waits
/// for the phase (parity `n % 2`), then units below [`BOX_WORDS`] store one word each, in shared
/// memory's order, so the swizzle shows.
#[cube]
#[allow(clippy::too_many_arguments)]
fn copy_box(
    tile: &mut [Word],
    bars: &mut [u64],
    map: &[u32],
    src: &[Word],
    out: &mut [Word],
    x: u32,
    y: u32,
    #[comptime] n: u32,
    #[comptime] layout: TmaTile,
    #[comptime] target: Target,
) {
    if UNIT_POS == 0 {
        arrive_expect_tx::call(bars, 0, comptime!(layout.box_size()), target);
        load_2d::call(tile, 0, map, src, x, y, bars, 0, layout, target);
    }
    crate::mbarrier::wait::call(bars, 0, comptime!(n % 2), target);
    if UNIT_POS < BOX_WORDS {
        out[(comptime!(n * BOX_WORDS) + UNIT_POS) as usize] = tile[UNIT_POS as usize];
    }
    // Every unit is done reading before the next copy overwrites the slot.
    sync_cube();
}

/// Word `p` of a box at (`x` words, `y` rows) as shared memory holds it: the swizzle undone
/// (it is its own inverse), then the tensor's word there, or zero outside the tensor.
#[cube]
fn box_word(src: &[Word], p: u32, x: u32, y: u32, #[comptime] layout: TmaTile) -> Word {
    let mut byte = p * 16;
    if comptime!(layout.swizzle > 0) {
        byte ^= ((byte >> 7) & comptime!(layout.swizzle / 16 - 1)) << 4;
    }
    let row = y + byte / comptime!(layout.box_bytes);
    let word = x + (byte % comptime!(layout.box_bytes)) / 16;
    let mut value = Word::new(0);
    if row < ROWS && word < comptime!(ROW_BYTES / 16) {
        value = src[(row * comptime!(ROW_BYTES / 16) + word) as usize];
    }
    value
}

/// Ten TMA copies through one barrier (both parities, five times each) into one 1024-byte slot:
/// two or three boxes per swizzle mode, inside the tensor and past its last row, its last
/// column, or both. A wrong swizzle, box geometry, zero fill or byte count shows (or stalls, then
/// traps).
#[islands]
#[cube]
#[allow(clippy::too_many_arguments)]
pub fn tma_load_2d(
    src: &[Word],
    map_128: &[u32],
    map_64: &[u32],
    map_32: &[u32],
    map_plain: &[u32],
    out: &mut [Word],
    #[comptime] target: Target,
) {
    island! {
        proof(
            src: &[Vector<i32, Const<4>>; 512],
            map_128: tensor_map(src, crate::tma::BOX_128),
            map_64: tensor_map(src, crate::tma::BOX_64),
            map_32: tensor_map(src, crate::tma::BOX_32),
            map_plain: tensor_map(src, crate::tma::BOX_PLAIN),
            out: &mut [Vector<i32, Const<4>>; 640],
        ), cube_dim = 128;
        cuda if sm >= 90 => {
            let mut tile = Shared::<[Word]>::new_aligned_slice(comptime!(BOX_WORDS as usize), 1024usize);
            let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(crate::mbarrier::words(1, 128, &target)), 8usize);
            if UNIT_POS == 0 {
                crate::mbarrier::init::call(&mut bars, 0, 1, target);
                acquire_map::call(map_128, target);
                acquire_map::call(map_64, target);
                acquire_map::call(map_32, target);
                acquire_map::call(map_plain, target);
            }
            sync_cube();
            copy_box(&mut tile, &mut bars, map_128, src, out, 0u32, 0u32, 0u32, BOX_128, target);
            copy_box(&mut tile, &mut bars, map_128, src, out, 8u32, 5u32, 1u32, BOX_128, target);
            copy_box(&mut tile, &mut bars, map_128, src, out, 12u32, 28u32, 2u32, BOX_128, target);
            copy_box(&mut tile, &mut bars, map_64, src, out, 2u32, 17u32, 3u32, BOX_64, target);
            copy_box(&mut tile, &mut bars, map_64, src, out, 14u32, 0u32, 4u32, BOX_64, target);
            copy_box(&mut tile, &mut bars, map_32, src, out, 5u32, 0u32, 5u32, BOX_32, target);
            copy_box(&mut tile, &mut bars, map_32, src, out, 15u32, 3u32, 6u32, BOX_32, target);
            copy_box(&mut tile, &mut bars, map_plain, src, out, 0u32, 30u32, 7u32, BOX_PLAIN, target);
            copy_box(&mut tile, &mut bars, map_plain, src, out, 1u32, 9u32, 8u32, BOX_PLAIN, target);
            copy_box(&mut tile, &mut bars, map_128, src, out, 3u32, 11u32, 9u32, BOX_128, target);
        },
        default => {
            if UNIT_POS < BOX_WORDS {
                let p = UNIT_POS;
                out[p as usize] = box_word(src, p, 0u32, 0u32, BOX_128);
                out[(BOX_WORDS + p) as usize] = box_word(src, p, 8u32, 5u32, BOX_128);
                out[(2 * BOX_WORDS + p) as usize] = box_word(src, p, 12u32, 28u32, BOX_128);
                out[(3 * BOX_WORDS + p) as usize] = box_word(src, p, 2u32, 17u32, BOX_64);
                out[(4 * BOX_WORDS + p) as usize] = box_word(src, p, 14u32, 0u32, BOX_64);
                out[(5 * BOX_WORDS + p) as usize] = box_word(src, p, 5u32, 0u32, BOX_32);
                out[(6 * BOX_WORDS + p) as usize] = box_word(src, p, 15u32, 3u32, BOX_32);
                out[(7 * BOX_WORDS + p) as usize] = box_word(src, p, 0u32, 30u32, BOX_PLAIN);
                out[(8 * BOX_WORDS + p) as usize] = box_word(src, p, 1u32, 9u32, BOX_PLAIN);
                out[(9 * BOX_WORDS + p) as usize] = box_word(src, p, 3u32, 11u32, BOX_128);
            }
        },
    }
}
