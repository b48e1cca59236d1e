//! Kernel-only timing for bench binaries: buffers are created by the caller once, the work is
//! dispatched back to back, and the device is synchronised once at the end.

use cubecl::prelude::Client;
use std::time::{Duration, Instant};

/// Waits until every dispatched kernel of `client` has finished.
pub fn sync(client: &Client) -> Result<(), SyncError> {
    cubecl_environment::future::block_on(client.sync()).map_err(|e| SyncError(e.to_string()))
}

/// The runtime's error while waiting for dispatched kernels.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SyncError(pub String);

/// Time per call of `dispatch`: `warmup` calls and a sync (compilation, caches), then `iters`
/// calls back to back and one sync.
pub fn time_per_call(
    client: &Client,
    warmup: usize,
    iters: usize,
    mut dispatch: impl FnMut(),
) -> Result<Duration, SyncError> {
    for _ in 0..warmup {
        dispatch();
    }
    sync(client)?;
    let start = Instant::now();
    for _ in 0..iters {
        dispatch();
    }
    sync(client)?;
    Ok(start.elapsed() / iters.max(1) as u32)
}

/// Times several variants side by side: `rounds` rounds, each timing every variant once in
/// turn, so drift (clocks, temperature) affects them alike, in alternating order; returns each
/// variant's median.
pub fn side_by_side(
    client: &Client,
    rounds: usize,
    iters: usize,
    variants: &mut [(&str, &mut dyn FnMut())],
) -> Result<Vec<Duration>, SyncError> {
    Ok(side_by_side_samples(client, rounds, iters, variants)?
        .into_iter()
        .map(|mut s| {
            s.sort();
            s[s.len() / 2]
        })
        .collect())
}

/// [`side_by_side`]'s samples: for each variant, its time per call in each round, in round
/// order (a round's samples of two variants were taken next to each other).
pub fn side_by_side_samples(
    client: &Client,
    rounds: usize,
    iters: usize,
    variants: &mut [(&str, &mut dyn FnMut())],
) -> Result<Vec<Vec<Duration>>, SyncError> {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for round in 0..rounds {
        // Forward in even rounds, backward in odd ones, so that no variant always runs first
        // (after the host has idled through a graph replay) or always right after another.
        let order: Vec<usize> =
            if round % 2 == 0 { (0..variants.len()).collect() } else { (0..variants.len()).rev().collect() };
        for i in order {
            samples[i].push(time_per_call(client, 3, iters, &mut *variants[i].1)?);
        }
    }
    Ok(samples)
}
