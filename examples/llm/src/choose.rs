//! The next token chosen on the device: the first index of the largest logit, written into the
//! step buffer with the position advanced, so that the next step can be enqueued before the
//! host has read this one's logits ([`crate::generate`] keeps two steps in flight).
//!
//! The choice is [`crate::generate::argmax`]'s: NaN never wins, ties go to the first index
//! (`+0` and `−0` tie), and a vector of NaN gives 0. A maximum and its first index do not depend
//! on the order they are taken in, so the cube's tree (or, through wgpu, a second launch that
//! merges the units' bests in order) gives the host's answer; the host checks each choice
//! against its own `argmax` of the logits it reads.

use crate::error::LlmError;
use crate::kernels::slots;
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::prelude::*;

/// Logits each unit's loop loads at a time (all in flight together).
const DEPTH: usize = 16;

/// Whether logit `v` at index `i` displaces `best` at `at`: larger, or equal (`+0` and `−0`
/// alike) at an earlier index; NaN never does.
#[cube]
fn beats(v: f32, i: u32, best: f32, at: u32) -> bool {
    v > best || (v == best && i < at)
}

/// The first index of the largest of the logits unit `u` of `units` walks (`u, u + units, …`
/// in increasing order; past the end, the last logit again, which can only tie with itself),
/// and that logit: `(−∞, u32::MAX)` where it saw only NaN. Every load of a round before its
/// comparisons.
#[cube]
fn unit_best(logits: &[f32], u: usize, #[comptime] vocab: usize, #[comptime] units: usize) -> (f32, u32) {
    let mut best = f32::reinterpret(0xff80_0000u32);
    let mut at = 0xffff_ffffu32;
    #[unroll]
    for round in 0..comptime!(vocab.div_ceil(units * DEPTH)) {
        let mut v = Array::<f32>::new(DEPTH);
        #[unroll]
        for k in 0..DEPTH {
            v[k] = logits[min(u + units * (round * DEPTH + k), vocab - 1)];
        }
        #[unroll]
        for k in 0..DEPTH {
            let i = min(u + units * (round * DEPTH + k), vocab - 1) as u32;
            let take = beats(v[k], i, best, at);
            best = select(take, v[k], best);
            at = select(take, i, at);
        }
    }
    (best, at)
}

/// `step[TOKEN]` = the chosen index `i` (0 for none, `u32::MAX`), `step[POS]` and `step[N]`
/// advanced by one.
#[cube]
fn advance(step: &mut [u32], i: u32) {
    step[comptime!(slots::TOKEN)] = select(i == 0xffff_ffffu32, 0u32, i);
    step[comptime!(slots::POS)] += 1u32;
    step[comptime!(slots::N)] += 1u32;
}

/// `step[TOKEN]` = the first index of the largest of `logits`' `vocab` values (0 if all are
/// NaN); `step[POS]` and `step[N]` advanced by one. One cube of `units` units, their bests
/// merged in shared memory.
#[islands]
#[cube(launch_unchecked)]
pub fn choose(logits: &[f32], step: &mut [u32], #[comptime] vocab: usize, #[comptime] units: usize) {
    let u = UNIT_POS as usize;
    let (best, at) = unit_best(logits, u, vocab, units);
    let mut values = Shared::<[f32]>::new_slice(units);
    let mut indices = Shared::<[u32]>::new_slice(units);
    values[u] = best;
    indices[u] = at;
    sync_cube();
    #[unroll]
    for level in 0..comptime!(units.trailing_zeros() as usize) {
        let half = comptime!(units >> (level + 1));
        if u < half {
            let (v, i) = (values[u + half], indices[u + half]);
            let take = beats(v, i, values[u], indices[u]);
            if take {
                values[u] = v;
                indices[u] = i;
            }
        }
        sync_cube();
    }
    if u == 0 {
        advance(step, indices[0]);
    }
}

/// [`choose`]'s first half without shared memory: unit `u` of one cube of `units` writes its
/// best logit's bits to `parts[u]` and its index to `parts[units + u]`.
#[islands]
#[cube(launch_unchecked)]
pub fn choose_parts(logits: &[f32], parts: &mut [u32], #[comptime] vocab: usize, #[comptime] units: usize) {
    let u = UNIT_POS as usize;
    let (best, at) = unit_best(logits, u, vocab, units);
    parts[u] = u32::reinterpret(best);
    parts[units + u] = at;
}

/// [`choose`]'s second half without shared memory: one unit merges the `units` bests of
/// [`choose_parts`] in unit order (a maximum and its first index do not depend on the order)
/// and advances the step buffer.
#[islands]
#[cube(launch_unchecked)]
pub fn choose_merge(parts: &[u32], step: &mut [u32], #[comptime] units: usize) {
    let mut best = f32::reinterpret(0xff80_0000u32);
    let mut at = 0xffff_ffffu32;
    for round in 0..comptime!(units / DEPTH) {
        let mut v = Array::<f32>::new(DEPTH);
        let mut x = Array::<u32>::new(DEPTH);
        #[unroll]
        for k in 0..DEPTH {
            v[k] = f32::reinterpret(parts[round * DEPTH + k]);
            x[k] = parts[units + round * DEPTH + k];
        }
        #[unroll]
        for k in 0..DEPTH {
            let take = beats(v[k], x[k], best, at);
            best = select(take, v[k], best);
            at = select(take, x[k], at);
        }
    }
    advance(step, at);
}

/// The units of [`choose_parts`] and the `u32`s of the `parts` buffer [`launch`] takes.
pub const PARTS_UNITS: usize = 256;
/// The length of the `parts` buffer [`launch`] takes, in `u32`s.
pub const PARTS_LEN: usize = 2 * PARTS_UNITS;

/// Whether [`launch`] merges the units' bests in shared memory ([`choose`], one launch): on
/// CUDA and the CPU runtime. Through wgpu [`choose_parts`] and [`choose_merge`] pass the bests
/// through `parts`, two launches: the form that ran there while CubeCL's SPIR-V for shared
/// memory was invalid (before the patched `cubecl-spirv`), kept until the one launch is measured
/// there.
pub fn merges_in_shared_memory(client: &Client) -> bool {
    matches!(island_runtime::hardware::device::runtime_name(client), "cuda" | "cpu")
}

/// Launches [`choose`] on the `vocab` logits in `logits` and the step buffer `step` (of
/// [`slots::len`]`(1)` values at least): a cube of 1,024 units where the runtime takes them
/// (CUDA), else 256 (WebGPU's default limit). Where the bests cannot meet in shared memory
/// ([`merges_in_shared_memory`]), [`choose_parts`] then [`choose_merge`] through `parts` (of
/// [`PARTS_LEN`] values at least).
pub fn launch(
    client: &Client,
    logits: &Handle,
    step: &Handle,
    parts: &Handle,
    vocab: usize,
    target: Target,
) -> Result<(), LlmError> {
    if vocab == 0 || vocab >= u32::MAX as usize {
        return Err(LlmError::Setting(format!("a vocabulary of {vocab} tokens cannot be chosen from")));
    }
    if !merges_in_shared_memory(client) {
        let units = PARTS_UNITS;
        // SAFETY: `logits` holds at least `vocab` values and `parts` at least `PARTS_LEN` (the
        // engine allocates them, `Engine::new`); `choose_parts` reads `logits` below `vocab`
        // (indices clamped) and writes `parts` below `2 · units`; `choose_merge` reads those
        // and writes the step buffer's first three slots.
        unsafe {
            choose_parts::launch_unchecked_with(
                client,
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(units as u32),
                BufferArg::from_raw_parts(logits.clone(), vocab),
                BufferArg::from_raw_parts(parts.clone(), PARTS_LEN),
                vocab,
                units,
                target,
            );
            choose_merge::launch_unchecked_with(
                client,
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(1),
                BufferArg::from_raw_parts(parts.clone(), PARTS_LEN),
                BufferArg::from_raw_parts(step.clone(), slots::len(1)),
                units,
                target,
            );
        }
        return Ok(());
    }
    let units = if island_runtime::hardware::device::runtime_name(client) == "cuda" { 1024 } else { 256 };
    // SAFETY: `logits` holds at least `vocab` values and `step` at least `slots::len(1)` (the
    // engine allocates both, `Engine::new`); the kernel reads `logits` below `vocab` (indices
    // clamped), shared memory below `units`, and writes the step buffer's first three slots.
    unsafe {
        choose::launch_unchecked_with(
            client,
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(units as u32),
            BufferArg::from_raw_parts(logits.clone(), vocab),
            BufferArg::from_raw_parts(step.clone(), slots::len(1)),
            vocab,
            units,
            target,
        );
    }
    Ok(())
}
