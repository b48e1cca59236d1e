//! Asynchronous copies from global to shared memory: PTX `cp.async` (sm_80 and later), the
//! loads of a multi-stage GEMM pipeline. A unit issues 16-byte copies, closes them into a group
//! with [`commit`], and [`wait`]s until at most `pending` of its groups are still in flight;
//! after the wait and a cube barrier the whole cube sees the copied bytes.
//!
//! Emulation: [`copy16`] copies at once, and [`commit`] and [`wait`] do nothing. That is one
//! of the orders the hardware may take (a copy may complete any time between its issue and
//! the wait), so a kernel that waits correctly computes the same bytes. A kernel that reads a
//! stage before waiting for it may still pass on the CPU: the on-device checks (native against
//! emulation, the GEMM against its plain-Rust reference) are what catch a missing wait.

use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

/// `dst[dst_index] = src[src_index]`, 16 bytes, completing asynchronously. `dst` must be shared
/// memory, `src` global.
#[intrinsic(
    name = "cp_async::copy16",
    semantics = synchronizing("the wait, fence and barrier phase that order an asynchronous copy with its readers"),
    summary = "16 bytes from global to shared memory, completing asynchronously (sm_80+), visible after `wait` and a barrier",
    check = crate::cp_async::cp_async_copy,
    lowerings(cuda => "cp.async.cg.shared.global" sass "LDGSTS"),
)]
pub mod copy16 {
    use cubecl::prelude::*;

    /// The CUDA lowering: L2 only (`.cg`), the shared address converted from a generic one.
    /// The conversion (`cvta.to.shared`) sits in the same asm statement as the instruction, as in
    /// the other shared-memory lowering: CubeCL 0.11 hands an asm output to a later asm statement
    /// as its local's address, so it cannot be a helper of its own.
    #[cube]
    pub fn cuda(dst: &mut [Vector<i32, Const<4>>], dst_index: u32, src: &[Vector<i32, Const<4>>], src_index: u32) {
        let to = dst.slice_mut(dst_index as usize, dst_index as usize + 1).as_mut_ptr();
        let from = src.slice(src_index as usize, src_index as usize + 1).as_ptr();
        gpu_asm!(
            "{{ .reg .u64 a; .reg .u32 s; cvta.to.shared.u64 a, {}; cvt.u32.u64 s, a; cp.async.cg.shared.global [s], [{}], 16; }}",
            in(_) to, in(_) from
        );
    }

    /// The copy, at once.
    #[cube]
    pub fn emulate(dst: &mut [Vector<i32, Const<4>>], dst_index: u32, src: &[Vector<i32, Const<4>>], src_index: u32) {
        dst[dst_index as usize] = src[src_index as usize];
    }
}

/// Closes this unit's copies issued since the last commit into one group.
#[intrinsic(
    name = "cp_async::commit",
    semantics = synchronizing("the wait, fence and barrier phase that order an asynchronous copy with its readers"),
    summary = "closes this unit's outstanding asynchronous copies into a group (sm_80+)",
    check = crate::cp_async::cp_async_copy,
    lowerings(cuda => "cp.async.commit_group" sass "LDGDEPBAR"),
)]
pub mod commit {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda() {
        gpu_asm!("cp.async.commit_group;");
    }

    /// Nothing: the emulated copies are complete already.
    #[cube]
    pub fn emulate() {}
}

/// Waits until at most `pending` of this unit's committed groups are in flight.
#[intrinsic(
    name = "cp_async::wait",
    semantics = synchronizing("the wait, fence and barrier phase that order an asynchronous copy with its readers"),
    summary = "waits until at most `pending` of this unit's copy groups are in flight (sm_80+)",
    check = crate::cp_async::cp_async_copy,
    lowerings(cuda => "cp.async.wait_group" sass "DEPBAR"),
)]
pub mod wait {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(#[comptime] pending: u32) {
        gpu_asm!("cp.async.wait_group {};", const pending);
    }

    /// Nothing: the emulated copies are complete already.
    #[cube]
    pub fn emulate(#[comptime] pending: u32) {
        let _ = pending;
    }
}

// The checks: islands whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

/// Two groups of `cp.async` copies into a shared tile, waited for, then each unit reads a
/// chunk another unit copied.
#[islands]
#[cube]
pub fn cp_async_copy(src: &[Vector<i32, Const<4>>], #[comptime] target: Target) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 128]) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda if sm >= 80 => {
            let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_slice(128usize);
            copy16::call(&mut tile, UNIT_POS, src, (UNIT_POS * 37 + 5) % 128, target);
            commit::call(target);
            copy16::call(&mut tile, UNIT_POS + 64, src, ((UNIT_POS + 64) * 37 + 5) % 128, target);
            commit::call(target);
            wait::call(0u32, target);
            sync_cube();
            tile[((UNIT_POS + 17) % 128) as usize]
        },
        default => src[(((UNIT_POS + 17) % 128) * 37 + 5) as usize % 128],
    }
}
