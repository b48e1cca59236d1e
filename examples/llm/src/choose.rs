//! The next token chosen on the device: the first index of the largest logit, written into the
//! step buffer with the position advanced, so that the next step can be enqueued before the
//! host has read this one's logits ([`crate::generate`] keeps two steps in flight).
//!
//! The choice is [`crate::generate::argmax`]'s: NaN never wins, ties go to the first index
//! (`+0` and `−0` tie), and a vector of NaN gives 0. A maximum and its first index do not depend
//! on the order they are taken in, so the cube's tree gives the host's answer; the host checks
//! each choice against its own `argmax` of the logits it reads.

use crate::error::LlmError;
use crate::kernels::slots;
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::prelude::*;

/// Logits each unit's loop loads at a time (all in flight together).
const DEPTH: usize = 16;

/// `step[TOKEN]` = the first index of the largest of `logits`' `vocab` values (0 if all are
/// NaN); `step[POS]` and `step[N]` advanced by one. One cube of `units` units.
#[islands]
#[cube(launch_unchecked)]
pub fn choose(logits: &[f32], step: &mut [u32], #[comptime] vocab: usize, #[comptime] units: usize) {
    let u = UNIT_POS as usize;
    let mut best = f32::reinterpret(0xff80_0000u32);
    let mut at = 0xffff_ffffu32;
    // Unit `u` walks `u, u + units, …` in increasing order; past the end, the last logit
    // again (it can only tie with itself). Every load of a round before its comparisons.
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
            let take = v[k] > best || (v[k] == best && i < at);
            best = select(take, v[k], best);
            at = select(take, i, at);
        }
    }
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
            let take = v > values[u] || (v == values[u] && i < indices[u]);
            if take {
                values[u] = v;
                indices[u] = i;
            }
        }
        sync_cube();
    }
    if u == 0 {
        let i = indices[0];
        step[comptime!(slots::TOKEN)] = select(i == 0xffff_ffffu32, 0u32, i);
        step[comptime!(slots::POS)] += 1u32;
        step[comptime!(slots::N)] += 1u32;
    }
}

/// Launches [`choose`] on the `vocab` logits in `logits` and the step buffer `step` (of
/// [`slots::len`]`(1)` values at least): a cube of 1,024 units where the runtime takes them
/// (CUDA), else 256 (WebGPU's default limit).
pub fn launch(client: &Client, logits: &Handle, step: &Handle, vocab: usize, target: Target) -> Result<(), LlmError> {
    if vocab == 0 || vocab >= u32::MAX as usize {
        return Err(LlmError::Setting(format!("a vocabulary of {vocab} tokens cannot be chosen from")));
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
