//! Barriers in shared memory that count arrivals in phases: PTX `mbarrier` (sm_90 for the
//! parity wait). A pipeline keeps one per stage slot and direction: "full" (the slot's copies
//! landed: [`arrive_on_copies`]) and "empty" (every consumer is done reading it:
//! [`arrive`]). Units then wait for exactly the stage they need instead of for the whole cube,
//! so warpgroups drift apart and keep the tensor cores fed while another one waits.
//!
//! A barrier is one 8-byte word of a shared `u64` slice (`bars`, `index`). [`init`] gives it the
//! arrivals a phase needs; a phase completes when that many arrivals are in, and the next phase
//! starts. Phases alternate parity 0, 1, 0, …; [`wait`] for parity `p` returns once the latest
//! phase of parity `p` completed (the `k`-th use of a slot waits for parity `k % 2`).
//!
//! Emulation, and its contract: [`wait`] is a cube barrier, and [`init`], [`arrive`] and
//! [`arrive_on_copies`] (and `tma.rs`'s arrival that expects a copy's bytes) do nothing. So **every unit of the cube must
//! call [`wait`] at the same point, for the same barrier and phase** (the pipelines here do),
//! which makes the emulation order every access the hardware orders, and more. What it cannot
//! catch: a missing [`arrive`], a wrong arrival count, byte count or parity (natively a wait that
//! never completes, or one that completes a phase early). The native wait is written to end the
//! kernel with `trap` after 2^22 polls rather than hang (no device run has exercised that). The
//! conformance checks ([`mbarrier_pipeline`], six stages through two slots, every parity twice;
//! `tma.rs`'s, ten copies through one barrier; native against emulation) and the GEMMs'
//! whole-output comparisons cover those on the device.

use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

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

    /// Nothing: the emulated [`super::wait`] is a cube barrier.
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32, count: u32) {
        let _ = (bars, index, count);
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

    /// Nothing: the emulated [`super::wait`] is a cube barrier.
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32) {
        let _ = (bars, index);
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

    /// A cube barrier.
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32, parity: u32) {
        let _ = (bars, index, parity);
        sync_cube();
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

    /// Nothing: the emulated copies are complete already, and the emulated wait is a cube
    /// barrier.
    #[cube]
    pub fn emulate(bars: &mut [u64], index: u32) {
        let _ = (bars, index);
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
            let mut bars = Shared::<[u64]>::new_aligned_slice(comptime!((2 * SLOTS) as usize), 8usize);
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
