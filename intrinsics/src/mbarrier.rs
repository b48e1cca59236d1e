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
//! Emulation. Copies land when they are issued; every unit of the cube runs as its own thread
//! on the CPU runtime. The emulation keeps the books the hardware keeps: each unit counts its
//! arrivals and the bytes it expects and delivers per barrier, and the phases it has waited
//! through (in the slice's extra words). Waits proceed in rounds: a round starts when every unit
//! of the cube is in a [`wait`] (at any point of its code: a producer and its consumers wait at
//! different ones) or has called [`retire`] (a cube barrier), and in it each wait whose phase
//! completed returns, as the native one would, the others waiting on. **The contract: every unit
//! of the cube ends in [`retire`] where units wait at different points** (a unit that returned
//! could not take part in the others' rounds, and they would never complete), and no unit calls
//! `sync_cube` while another waits on a barrier (natively a cube barrier then hangs too). Where
//! every unit waits at the same points (the pipelines here), `retire` is not needed.
//!
//! The books end the kernel for the whole cube (its outputs stay unwritten, so the proof fails,
//! deterministically) where the native kernel would hang, then trap after 2^22 polls, or read a
//! stage early: a round in which no wait can return and not every unit has retired (an arrival
//! missing, a wrong arrival count or byte count, a wrong parity that waits for a phase already
//! complete), or a wait that would pass over a phase its unit never waited through (a wait
//! skipped, so that two phases piled up: a stage read before its copies landed, or a slot
//! refilled while it was still read). What the books cannot show: a wait skipped for a
//! barrier's last phase (no later wait passes over it), and a wrong parity that returns before
//! the phase's arrivals are in but whose data is there anyway, since copies land at their issue.
//! The conformance checks ([`mbarrier_pipeline`], six stages through two slots, every parity
//! twice; [`mbarrier_roles`], a producer warp and three consumer warps; `tma.rs`'s, ten copies
//! through one barrier; native against emulation) and the GEMMs' whole-output comparisons run
//! the same kernels on the device; `proofs/tests/negative.rs` holds a pipeline for each kind of
//! bug above, each of which must fail its proof.

use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

/// The length of a `u64` shared slice holding `barriers` barriers for a cube of `units` units:
/// `barriers` words where the tag lowers the intrinsics natively; where they are emulated, also
/// the books: per barrier three words per unit (its arrivals, its expected-minus-delivered bytes,
/// the phases it has waited through), and one word per unit (its verdict in a round of waits).
pub fn words(barriers: u32, units: u32, target: &Target) -> usize {
    if target.native_on(island_runtime::Backend::Cuda) {
        barriers as usize
    } else {
        (barriers + barriers * 3 * units + units) as usize
    }
}

/// A barrier word the emulation could not lay out its books for: the slice is too short for
/// the cube (declare it with [`words`]).
pub(crate) const SHORT: u64 = 1 << 63;
/// No books: the slice is too short.
pub(crate) const NONE: u32 = u32::MAX;
/// A unit's verdict in a round of emulated waits: its wait returns, it still waits, or the unit
/// has retired; any other value (2) says the native wait would hang or pass over a phase.
pub(crate) const READY: u64 = 0;
pub(crate) const BLOCKED: u64 = 1;
pub(crate) const RETIRED: u64 = 3;

/// Where barrier `index`'s books start (three words per unit, counted from the slice's end,
/// after the units' verdict words), or [`NONE`] where they would reach the barriers' own words
/// `0..=index`.
#[cube]
pub(crate) fn books(bars: &mut [u64], index: u32) -> u32 {
    let len = bars.len() as u32;
    let size = CUBE_DIM + (index + 1) * 3 * CUBE_DIM;
    // NONE, written as a literal: a `const` would be a comptime value, not a variable.
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
        let at = (start + 3 * UNIT_POS) as usize;
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
        let at = (start + 3 * UNIT_POS + 1) as usize;
        bars[at] -= u64::cast_from(bytes);
    }
}

/// This unit's verdict for a wait for parity `parity` on barrier `index`, from the books (read
/// while every unit is in a round, between two cube barriers). The barrier's completed phases
/// are its arrivals over its count, less the last phase while bytes it expects are missing; the
/// native wait returns once the phase in progress has the other parity. A wait that returns
/// must not pass over a phase this unit never waited through (a skipped wait: two phases piled
/// up); on return the unit has waited through every completed phase.
#[cube]
pub(crate) fn decide(bars: &mut [u64], index: u32, parity: u32) -> u64 {
    let header = bars[index as usize];
    let start = books(bars, index);
    let mut verdict = 2u64; // a fault, written as a literal (see `books`)
    if start != NONE && (header & SHORT) == 0 && (header & 0xffff_ffffu64) > 0u64 {
        let count = header & 0xffff_ffffu64;
        let mut arrivals = 0u64;
        let mut bytes = 0u64;
        for u in 0..CUBE_DIM {
            arrivals += bars[(start + 3 * u) as usize];
            bytes += bars[(start + 3 * u + 1) as usize];
        }
        let phases = arrivals / count;
        let unpaid = bytes != 0u64 && phases > 0u64 && arrivals == phases * count;
        let completed = phases - select(unpaid, 1u64, 0u64);
        let seen_at = (start + 3 * UNIT_POS + 2) as usize;
        let seen = bars[seen_at];
        if completed % 2u64 == u64::cast_from(parity) {
            verdict = BLOCKED;
        } else if completed <= seen + 1u64 {
            verdict = READY;
            bars[seen_at] = completed;
        }
    }
    verdict
}

/// What every unit concludes from the round's verdicts (the same for all): 0, some wait returns;
/// 1, every unit has retired; 2, a fault, or no wait can return and not every unit has retired
/// (natively the cube would hang).
#[cube]
pub(crate) fn round_outcome(bars: &mut [u64]) -> u32 {
    let first = bars.len() as u32 - CUBE_DIM;
    let mut ready = 0u32;
    let mut retired = 0u32;
    let mut fault = 0u32;
    for u in 0..CUBE_DIM {
        let v = bars[(first + u) as usize];
        if v == READY {
            ready += 1;
        } else if v == RETIRED {
            retired += 1;
        } else if v != BLOCKED {
            fault += 1;
        }
    }
    let mut outcome = 2u32;
    if fault == 0 && ready > 0 {
        outcome = 0u32;
    } else if fault == 0 && retired == CUBE_DIM {
        outcome = 1u32;
    }
    outcome
}

/// One round of emulated waits for this unit with verdict `verdict`: every unit is in a wait or
/// retired (a cube barrier, before the call), each writes its verdict, and after a second cube
/// barrier every unit reads the same outcome ([`round_outcome`]). On a fault the caller ends the
/// kernel once it has left its loop of rounds (`terminate!` inside a loop does not end it on
/// CubeCL 0.11's CPU runtime).
#[cube]
pub(crate) fn round(bars: &mut [u64], verdict: u64) -> u32 {
    let mine = (bars.len() as u32 - CUBE_DIM + UNIT_POS) as usize;
    bars[mine] = verdict;
    sync_cube();
    round_outcome(bars)
}

/// Where units of a cube take roles that wait at different points (a producer and consumers),
/// each unit calls this when its role is done, before it returns: natively nothing; emulated, the
/// unit takes part in the rounds of the others' waits until every unit has retired (a unit that
/// returned could not, and the others' rounds would never complete).
#[cube]
pub fn retire(bars: &mut [u64], #[comptime] target: Target) {
    if comptime!(!target.native_on(island_runtime::Backend::Cuda)) {
        let mut outcome = 0u32;
        while outcome == 0u32 {
            sync_cube();
            outcome = crate::mbarrier::round(bars, RETIRED);
        }
        if outcome == 2u32 {
            terminate!();
        }
    }
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

    /// The barrier's word holds its count; every unit's books for it are cleared.
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32, count: u32) {
        let start = crate::mbarrier::books(bars, index);
        if start == crate::mbarrier::NONE {
            bars[index as usize] = crate::mbarrier::SHORT;
        } else {
            bars[index as usize] = u64::cast_from(count);
            for w in 0..3 * CUBE_DIM {
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
/// (acquire: what the arrivals released is visible after it). Units may wait at different
/// points; then each ends in [`retire`] (the emulation's contract, above).
#[intrinsic(
    name = "mbarrier::wait",
    semantics = synchronizing("a barrier's arrival count and phase parity, and the waits that read them"),
    summary = "waits for a phase of a shared-memory barrier by parity, with acquire semantics (sm_90)",
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

    /// Rounds until the wait returns: in each, every unit of the cube is in a wait or retired
    /// (a cube barrier), this unit's verdict comes from the books ([`crate::mbarrier::decide`]),
    /// and every unit reads the same outcome: the waits whose phase completed return, and the
    /// kernel ends for the whole cube (`terminate!`) on a fault or where no wait can return
    /// (natively a hang, then a trap).
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32, parity: u32) {
        // 0: waiting; 1: the wait returns; 2: a fault (numbers, not flags: CubeCL 0.11 keeps a
        // literal `bool` a compile-time value).
        let mut state = 0u32;
        while state == 0u32 {
            sync_cube();
            let verdict = crate::mbarrier::decide(bars, index, parity);
            let outcome = crate::mbarrier::round(bars, verdict);
            if outcome == 2u32 {
                state = 2u32;
            } else if verdict == crate::mbarrier::READY {
                state = 1u32;
            }
        }
        if state == 2u32 {
            terminate!();
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

/// The chunk of stage `t` (of `n` chunks) that slot word `u` holds: a permutation, so that each
/// unit reads a chunk another unit copied.
#[cube]
fn chunk_of(t: u32, u: u32, #[comptime] n: u32) -> u32 {
    t * n + (u * 37 + 5) % n
}

/// Stage `t` into slot `t % SLOTS`: one `cp.async` chunk per unit, and the unit's arrival on the
/// slot's "full" barrier once its copy lands.
#[cube]
fn fill(src: &[Word], tile: &mut [Word], bars: &mut [u64], t: u32, #[comptime] target: Target) {
    let slot = t % SLOTS;
    crate::cp_async::copy16::call(tile, slot * UNITS + UNIT_POS, src, chunk_of(t, UNIT_POS, UNITS), target);
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
                out[(t * UNITS + UNIT_POS) as usize] = src[chunk_of(t, (UNIT_POS + 17) % UNITS, UNITS) as usize];
            }
        },
    }
}

/// [`mbarrier_roles`]' cube: a producer warp and three consumer warps, one 16-byte chunk per
/// consumer a stage.
const PRODUCERS: u32 = 32;
const CONSUMERS: u32 = 96;

/// Producer and consumers that wait at different points: warp 0 copies each stage into its slot
/// (three `cp.async` chunks a unit) and arrives on the slot's "full" barrier, waiting on its
/// "empty" barrier before each refill; the other three warps wait on "full", read a chunk another
/// unit copied, and arrive on "empty". Six stages through two slots, each slot's barriers in both
/// parities; every unit retires at the end. A wrong parity, arrival count or slot, or a refill
/// before the slot is released, reads another stage's bytes (or stalls, then traps).
#[islands]
#[cube]
pub fn mbarrier_roles(src: &[Word], out: &mut [Word], #[comptime] target: Target) {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 576], out: &mut [Vector<i32, Const<4>>; 576]), cube_dim = 128;
        cuda if sm >= 90 => {
            let mut tile = Shared::<[Word]>::new_slice(comptime!((SLOTS * CONSUMERS) as usize));
            // Barriers 0 and 1: the slots' "full" (one arrival per producer unit); 2 and 3: their
            // "empty" (one per consumer).
            let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!(words(2 * SLOTS, UNITS, &target)), 8usize);
            if UNIT_POS == 0 {
                for i in 0..SLOTS {
                    init::call(&mut bars, i, PRODUCERS, target);
                    init::call(&mut bars, SLOTS + i, CONSUMERS, target);
                }
            }
            sync_cube();
            if UNIT_POS < PRODUCERS {
                for t in 0..STAGES {
                    let slot = t % SLOTS;
                    if t >= SLOTS {
                        // The consumers released the slot's previous use.
                        wait::call(&mut bars, SLOTS + slot, (t / SLOTS - 1) % 2, target);
                    }
                    for j in 0..comptime!(CONSUMERS / PRODUCERS) {
                        let c = UNIT_POS * comptime!(CONSUMERS / PRODUCERS) + j;
                        crate::cp_async::copy16::call(&mut tile, slot * CONSUMERS + c, src, chunk_of(t, c, CONSUMERS), target);
                    }
                    arrive_on_copies::call(&mut bars, slot, target);
                }
            } else {
                let c = UNIT_POS - PRODUCERS;
                for t in 0..STAGES {
                    let (slot, parity) = (t % SLOTS, (t / SLOTS) % 2);
                    wait::call(&mut bars, slot, parity, target);
                    out[(t * CONSUMERS + c) as usize] = tile[(slot * CONSUMERS + (c + 17) % CONSUMERS) as usize];
                    arrive::call(&mut bars, SLOTS + slot, target);
                }
            }
            retire(&mut bars, target);
        },
        default => {
            if UNIT_POS >= PRODUCERS {
                let c = UNIT_POS - PRODUCERS;
                for t in 0..STAGES {
                    out[(t * CONSUMERS + c) as usize] = src[chunk_of(t, (c + 17) % CONSUMERS, CONSUMERS) as usize];
                }
            }
        },
    }
}
