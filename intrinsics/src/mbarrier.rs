//! Barriers in shared memory that count arrivals in phases: PTX `mbarrier` (sm_90 for the
//! parity wait). A pipeline keeps one per stage slot and direction: "full" (the slot's copies
//! landed: [`arrive_on_copies`]) and "empty" (every consumer is done reading it:
//! [`arrive`]). Units then wait for exactly the stage they need instead of for the whole cube,
//! so warpgroups drift apart and keep the tensor cores fed while another one waits.
//!
//! A barrier is one 8-byte word of a shared `u64` slice (`bars`, `index`), declared
//! `Shared::<[u64]>::new_aligned_slice(comptime!(mbarrier::words(n, units, &target)), 8usize)`
//! ([`words`]: `n` words natively, more where the intrinsics are emulated). [`init`] gives it
//! the arrivals a phase needs; a phase completes when that many arrivals are in (and every byte
//! an arrival expects, `tma.rs`), and the next phase starts. Phases alternate parity 0, 1, 0, …;
//! [`wait`] for parity `p` returns once the latest phase of parity `p` completed (the `k`-th use
//! of a slot waits for parity `k % 2`; before the first phase completes, a wait for parity 1
//! returns at once).
//!
//! Emulation, and its contract: **every unit of the cube calls [`wait`] at the same point, for
//! the same barrier and phase** (the pipelines here do), and the wait is a cube barrier, so the
//! emulation orders every access the hardware orders, and more. Copies land when they are
//! issued. The emulation keeps the books the hardware keeps: each unit counts its arrivals and
//! the bytes it expects and delivers per barrier (in the slice's extra words), and a wait checks
//! them against the phase it waits for, as the hardware would decide whether it returns. A wait
//! whose phase would never complete (an arrival missing, a wrong arrival count or byte count, a
//! wait skipped, so that two phases' arrivals pile up) or would return before its phase's
//! arrivals are in (a wrong parity) ends the kernel for the whole cube: its outputs stay
//! unwritten and the proof fails, deterministically, where the native kernel would trap after
//! 2^22 polls or read a stage early. What the books cannot show: a wait skipped for a barrier's
//! last phase (no later wait sees the surplus), and anything about units that wait at different
//! points (roles), which the contract excludes. The conformance checks ([`mbarrier_pipeline`],
//! six stages through two slots, every parity twice; `tma.rs`'s, ten copies through one barrier;
//! native against emulation) and the GEMMs' whole-output comparisons run the same kernels on the
//! device; `proofs/tests/negative.rs` holds a pipeline for each kind of bug above, each of which
//! must fail its proof.

use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

/// The length of a `u64` shared slice holding `barriers` barriers for a cube of `units` units:
/// `barriers` words where the tag lowers the intrinsics natively, and per barrier also two words
/// per unit (its arrivals and its expected-minus-delivered bytes) where they are emulated.
pub fn words(barriers: u32, units: u32, target: &Target) -> usize {
    if target.native_on(island_runtime::Backend::Cuda) {
        barriers as usize
    } else {
        (barriers + barriers * 2 * units) as usize
    }
}

/// A header word the emulation could not lay out: the slice is too short for the cube (declare
/// it with [`words`]).
pub(crate) const SHORT: u64 = 1 << 63;
/// No region: the slice is too short.
pub(crate) const NONE: u32 = u32::MAX;
/// What an emulated wait concludes: the phase it waits for completes now, it returns at once
/// (its phase completed before and nothing is in flight), or the native wait would hang or
/// return early.
pub(crate) const COMPLETES: u32 = 0;
pub(crate) const AT_ONCE: u32 = 1;
pub(crate) const FAULT: u32 = 2;

/// Where barrier `index`'s books start, counted from the slice's end (two words per unit), or
/// [`NONE`] where they would overlap the barriers' own words `0..=index`.
#[cube]
pub(crate) fn books(bars: &mut [u64], index: u32) -> u32 {
    let len = bars.len() as u32;
    let size = (index + 1) * 2 * CUBE_DIM;
    let mut start = 0xffff_ffffu32;
    if size + index < len {
        start = len - size;
    }
    start
}

/// The emulation's record of one arrival of this unit on barrier `index`, expecting `bytes` more
/// bytes of asynchronous copies on its phase.
#[cube]
pub(crate) fn book_arrival(bars: &mut [u64], index: u32, bytes: u32) {
    let start = books(bars, index);
    if start != NONE {
        let at = (start + 2 * UNIT_POS) as usize;
        bars[at] += 1u64;
        bars[at + 1] += u64::cast_from(bytes);
    }
}

/// The emulation's record of `bytes` of this unit's asynchronous copies delivered on barrier
/// `index` (they landed at their issue).
#[cube]
pub(crate) fn book_delivery(bars: &mut [u64], index: u32, bytes: u32) {
    let start = books(bars, index);
    if start != NONE {
        let at = (start + 2 * UNIT_POS + 1) as usize;
        bars[at] -= u64::cast_from(bytes);
    }
}

/// What a wait for parity `parity` on barrier `index` concludes from the books (every unit
/// reads the same words, between two cube barriers): the phase it waits for needs exactly the
/// barrier's count of arrivals since the last completed phase and every expected byte
/// delivered; a wait for the other parity returns at once natively, which is right only when
/// nothing of the current phase is in flight.
#[cube]
pub(crate) fn conclude(bars: &mut [u64], index: u32, parity: u32) -> u32 {
    let header = bars[index as usize];
    let start = books(bars, index);
    let mut verdict = 2u32;
    if start != NONE && (header & SHORT) == 0 {
        let count = header & 0xffff_ffffu64;
        let completed = header >> 32u64;
        let mut arrivals = 0u64;
        let mut bytes = 0u64;
        for u in 0..CUBE_DIM {
            arrivals += bars[(start + 2 * u) as usize];
            bytes += bars[(start + 2 * u + 1) as usize];
        }
        let pending = arrivals - completed * count;
        if u64::cast_from(parity) == completed % 2u64 {
            if pending == count && bytes == 0u64 {
                verdict = COMPLETES;
            }
        } else if pending == 0u64 && bytes == 0u64 {
            verdict = AT_ONCE;
        }
    }
    verdict
}

/// Gives barrier `index` of `bars` `count` arrivals per phase and starts phase 0. One unit calls
/// it for each barrier, before a cube barrier that precedes any other use.
#[intrinsic(
    name = "mbarrier::init",
    semantics = synchronizing("a barrier's arrival count and phase parity, and the waits that read them"),
    summary = "initializes a shared-memory barrier to `count` arrivals per phase (sm_90; one unit, then a cube barrier)",
    check = crate::mbarrier::mbarrier_pipeline,
    lowerings(cuda if sm >= 90 => "mbarrier.init.shared::cta.b64"),
)]
pub mod init {
    use cubecl::prelude::*;

    /// The CUDA lowering, with the fence that makes an initialization visible to other units'
    /// and the copy engines' arrivals.
    #[cube]
    pub fn cuda(bars: &mut [u64], index: u32, count: u32) {
        let at = bars.slice_mut(index as usize, index as usize + 1).as_mut_ptr();
        gpu_asm!(
            "{{ .reg .u64 a; .reg .u32 s; cvta.to.shared.u64 a, {}; cvt.u32.u64 s, a; mbarrier.init.shared::cta.b64 [s], {}; fence.mbarrier_init.release.cluster; }}",
            in(_) at, in(_) count
        );
    }

    /// The barrier's word holds its count and, above it, its completed phases (none); every
    /// unit's books for it are cleared.
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32, count: u32) {
        let start = crate::mbarrier::books(bars, index);
        if start == crate::mbarrier::NONE {
            bars[index as usize] = crate::mbarrier::SHORT;
        } else {
            bars[index as usize] = u64::cast_from(count);
            for w in 0..2 * CUBE_DIM {
                bars[(start + w) as usize] = 0u64;
            }
        }
    }
}

/// One arrival of this unit on barrier `index`'s current phase (release: this unit's earlier
/// accesses happen before the phase completes).
#[intrinsic(
    name = "mbarrier::arrive",
    semantics = synchronizing("a barrier's arrival count and phase parity, and the waits that read them"),
    summary = "one arrival on a shared-memory barrier's current phase, with release semantics (sm_90)",
    check = crate::mbarrier::mbarrier_pipeline,
    lowerings(cuda if sm >= 90 => "mbarrier.arrive.shared::cta.b64" sass "SYNCS.ARRIVE"),
)]
pub mod arrive {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(bars: &mut [u64], index: u32) {
        let at = bars.slice_mut(index as usize, index as usize + 1).as_mut_ptr();
        gpu_asm!(
            "{{ .reg .u64 a, st; .reg .u32 s; cvta.to.shared.u64 a, {}; cvt.u32.u64 s, a; mbarrier.arrive.shared::cta.b64 st, [s]; }}",
            in(_) at
        );
    }

    /// Booked: one arrival, no bytes.
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32) {
        crate::mbarrier::book_arrival(bars, index, 0u32);
    }
}

/// Waits until the latest phase of parity `parity` (0 or 1) of barrier `index` completed
/// (acquire: what the arrivals released is visible after it). Every unit of the cube calls it at
/// the same point (the emulation's contract, above).
#[intrinsic(
    name = "mbarrier::wait",
    semantics = synchronizing("a barrier's arrival count and phase parity, and the waits that read them"),
    summary = "waits for a phase of a shared-memory barrier by parity, with acquire semantics (sm_90; every unit at the same point)",
    check = crate::mbarrier::mbarrier_pipeline,
    lowerings(cuda if sm >= 90 => "mbarrier.try_wait.parity.shared::cta.b64" sass "SYNCS.PHASECHK"),
)]
pub mod wait {
    use cubecl::prelude::*;

    /// The CUDA lowering: `try_wait` (which suspends the unit for a while) in a loop, and `trap`
    /// after 2^22 polls, so a phase that never completes fails the launch instead of hanging it.
    /// Labels are local to the statement's `{ }` block.
    #[cube]
    pub fn cuda(bars: &mut [u64], index: u32, parity: u32) {
        let at = bars.slice_mut(index as usize, index as usize + 1).as_mut_ptr();
        gpu_asm!(
            "{{ .reg .pred p; .reg .u64 a; .reg .u32 s, n; cvta.to.shared.u64 a, {}; cvt.u32.u64 s, a; mov.u32 n, 0; \
             WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [s], {}; @p bra DONE; add.u32 n, n, 1; \
             setp.lt.u32 p, n, 4194304; @p bra WAIT; trap; DONE: }}",
            in(_) at, in(_) parity
        );
    }

    /// A cube barrier, then the books decide, as the native wait would: the phase completes
    /// (unit 0 counts it after a second cube barrier, once every unit has read the books), the
    /// wait returns at once, or the kernel ends for every unit (`terminate!`: the native wait
    /// would hang or return before its phase).
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32, parity: u32) {
        sync_cube();
        let verdict = crate::mbarrier::conclude(bars, index, parity);
        sync_cube();
        if verdict == crate::mbarrier::FAULT {
            terminate!();
        }
        if verdict == crate::mbarrier::COMPLETES && UNIT_POS == 0 {
            bars[index as usize] += 1u64 << 32u64;
        }
    }
}

/// An arrival on barrier `index` of `bars` once every `cp.async` ([`crate::cp_async::copy16`])
/// this unit issued before it has landed. It counts as one of the phase's arrivals (`.noinc`),
/// so the barrier's count includes one per unit that calls it.
#[intrinsic(
    name = "mbarrier::arrive_on_copies",
    semantics = synchronizing("a barrier's arrival count and phase parity, and the waits that read them"),
    summary = "an mbarrier arrival once this unit's earlier asynchronous copies have landed (sm_90 here)",
    check = crate::mbarrier::mbarrier_pipeline,
    lowerings(cuda if sm >= 90 => "cp.async.mbarrier.arrive.noinc.shared::cta.b64" sass "ARRIVES"),
)]
pub mod arrive_on_copies {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(bars: &mut [u64], index: u32) {
        let at = bars.slice_mut(index as usize, index as usize + 1).as_mut_ptr();
        gpu_asm!(
            "{{ .reg .u64 a; .reg .u32 s; cvta.to.shared.u64 a, {}; cvt.u32.u64 s, a; cp.async.mbarrier.arrive.noinc.shared::cta.b64 [s]; }}",
            in(_) at
        );
    }

    /// Booked: one arrival (the emulated copies landed at their issue).
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32) {
        crate::mbarrier::book_arrival(bars, index, 0u32);
    }
}

// The check: an island whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

type Word = Vector<i32, Const<4>>;

/// Units of [`mbarrier_pipeline`]'s cube, 16-byte chunks per stage.
const UNITS: u32 = 128;
/// Stages, and the slots they cycle through: each slot used three times (parities 0, 1, 0).
const STAGES: u32 = 6;
const SLOTS: u32 = 2;

/// The chunk of stage `t`'s source unit `u` copies.
#[cube]
fn chunk_of(t: u32, u: u32) -> u32 {
    t * UNITS + (u * 37 + 5) % UNITS
}

/// Stage `t` into slot `t % SLOTS`: one `cp.async` chunk per unit, and the unit's arrival on the
/// slot's "full" barrier once its copy lands.
#[cube]
fn fill(src: &[Word], tile: &mut [Word], bars: &mut [u64], t: u32, #[comptime] target: Target) {
    let slot = t % SLOTS;
    crate::cp_async::copy16::call(tile, slot * UNITS + UNIT_POS, src, chunk_of(t, UNIT_POS), target);
    arrive_on_copies::call(bars, slot, target);
}

/// A two-slot pipeline through six stages: each unit reads a chunk another unit copied, for every
/// stage, in slots reused with both parities; the slot is refilled once its "empty" barrier says
/// every unit read it. A wrong parity, arrival count or slot reads another stage's bytes (or
/// stalls, then traps).
#[islands]
#[cube]
pub fn mbarrier_pipeline(src: &[Word], out: &mut [Word], #[comptime] target: Target) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 768], out: &mut [Vector<i32, Const<4>>; 768]), cube_dim = 128;
        cuda if sm >= 90 => {
            let mut tile = Shared::<[Word]>::new_slice(comptime!((SLOTS * UNITS) as usize));
            // Barriers 0 and 1: the slots' "full"; 2 and 3: their "empty".
            let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(words(2 * SLOTS, UNITS, &target)), 8usize);
            if UNIT_POS == 0 {
                for i in 0..comptime!(2 * SLOTS) {
                    init::call(&mut bars, i, UNITS, target);
                }
            }
            sync_cube();
            for t in 0..SLOTS {
                fill(src, &mut tile, &mut bars, t, target);
            }
            for t in 0..STAGES {
                let (slot, parity) = (t % SLOTS, (t / SLOTS) % 2);
                wait::call(&mut bars, slot, parity, target);
                out[(t * UNITS + UNIT_POS) as usize] = tile[(slot * UNITS + (UNIT_POS + 17) % UNITS) as usize];
                arrive::call(&mut bars, SLOTS + slot, target);
                wait::call(&mut bars, SLOTS + slot, parity, target);
                if t + SLOTS < STAGES {
                    fill(src, &mut tile, &mut bars, t + SLOTS, target);
                }
            }
        },
        default => {
            for t in 0..STAGES {
                out[(t * UNITS + UNIT_POS) as usize] = src[chunk_of(t, (UNIT_POS + 17) % UNITS) as usize];
            }
        },
    }
}
