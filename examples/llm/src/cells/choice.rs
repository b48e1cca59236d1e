//! How an op function runs the candidate of its cell: the twin with the engine's tag, or an
//! incumbent on buffers built only when it runs.

use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::cell::{Buffers, CellError, CellKey, Shape};
use island_runtime::dispatch::{self, Choice};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Incumbent launches so far in this process.
static INCUMBENT_LAUNCHES: AtomicUsize = AtomicUsize::new(0);

/// How many times an op function ran an incumbent in this process: a recording of launches
/// that contains one (its scalars are built for one step) must not be replayed at another.
pub fn incumbent_launches() -> usize {
    INCUMBENT_LAUNCHES.load(Ordering::Relaxed)
}

/// What an incumbent reads and writes: its inputs, scratch and output.
pub(crate) struct IncumbentBuffers {
    pub inputs: Vec<Handle>,
    pub scratch: Vec<Handle>,
    pub out: Handle,
}

/// Runs the candidate of `key` that the device's record selects for `tokens` tokens (see
/// [`run_choice`]).
pub(crate) fn run(
    client: &Client,
    key: &CellKey,
    target: Target,
    (shape, tokens): (Shape, usize),
    twin: impl FnOnce(Target),
    buffers: impl FnOnce() -> IncumbentBuffers,
) -> Result<(), CellError> {
    run_choice(dispatch::choose(client, key)?, client, target, (shape, tokens), twin, buffers)
}

/// Runs `choice` for `tokens` tokens: the twin with `target` (or with `default` in every island
/// where the choice forced it), or the incumbent at `shape` on the buffers `buffers` builds.
/// An incumbent computes one token: a batch of more runs the twin with `target`.
pub(crate) fn run_choice(
    choice: Choice,
    client: &Client,
    target: Target,
    (shape, tokens): (Shape, usize),
    twin: impl FnOnce(Target),
    buffers: impl FnOnce() -> IncumbentBuffers,
) -> Result<(), CellError> {
    match choice {
        Choice::Twin(forced) => {
            twin(twin_tag(&choice, forced, target));
            Ok(())
        }
        Choice::Incumbent(_) if tokens > 1 => {
            twin(target);
            Ok(())
        }
        Choice::Incumbent(inc) => {
            INCUMBENT_LAUNCHES.fetch_add(1, Ordering::Relaxed);
            let b = buffers();
            (inc.launch)(client, &shape, &Buffers { inputs: &b.inputs, scratch: &b.scratch, out: &b.out })
        }
    }
}

/// The tag the twin of `key` runs with on `client`'s device (`target`, or `default` in every
/// island where the choice forces it), or `None` where the device's record selects an
/// incumbent: what a fused kernel that stands for the twins of several cells runs with.
pub fn twin_target(client: &Client, key: &CellKey, target: Target) -> Result<Option<Target>, CellError> {
    let choice = dispatch::choose(client, key)?;
    Ok(match choice {
        Choice::Twin(forced) => Some(twin_tag(&choice, forced, target)),
        Choice::Incumbent(_) => None,
    })
}

/// The tag a twin chosen by `choice` runs with: `forced` (`default` in every island) where the
/// choice forced `default`, else the engine's `target`.
fn twin_tag(choice: &Choice, forced: Target, target: Target) -> Target {
    if choice.name() == "default" { forced } else { target }
}

/// A `u32` buffer of an incumbent's scalars.
pub(crate) fn scalars(client: &Client, values: &[u32]) -> Handle {
    client.create_from_slice(u32::as_bytes(values))
}

/// `n` values of `h` as a kernel argument.
///
/// # Safety
/// `h` holds at least `n` values of the kernel's element type.
pub(crate) unsafe fn arg(h: &Handle, n: usize) -> BufferArg {
    // SAFETY: the caller's.
    unsafe { BufferArg::from_raw_parts(h.clone(), n) }
}
