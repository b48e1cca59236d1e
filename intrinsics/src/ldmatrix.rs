//! Loads of register fragments from shared memory: PTX `ldmatrix` (sm_75 and later), which
//! hands each lane of a warp its slice of up to four 8×8 matrices of 16-bit elements, each
//! matrix row 16 contiguous bytes whose address one lane supplies.
//!
//! With `x4`, lane `l` supplies the address of row `l % 8` of matrix `l / 8`; register `j` of
//! lane `l` then holds bytes `4·(l % 4) … 4·(l % 4) + 3` of row `l / 4` of matrix `j`. For
//! 8-bit data that is exactly a lane's `mma.sync` fragment ([`crate::mma_sync`]): four
//! 16-byte chunks of `a` make its four registers, two of `b` its two.
//!
//! Emulation: the lanes of the (emulated) warp exchange their row addresses through shared
//! memory, and each lane reads its four words. The addresses are arbitrary 16-byte rows, as
//! natively; the conformance check runs a permutation of rows and the native instruction.

use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

/// Four 8×8 b16 matrices (each lane naming one 16-byte row of `tile` by its index) into this
/// lane's four fragment registers.
#[intrinsic(
    name = "ldmatrix::x4",
    semantics = defined,
    summary = "four 8×8 b16 matrices from shared memory into per-lane fragments, one warp, each lane naming one 16-byte row (sm_75+)",
    check = crate::ldmatrix::ldmatrix_x4,
    lowerings(cuda => "ldmatrix.sync.aligned.m8n8.x4.shared.b16" sass "LDSM.16.M88.4"),
)]
pub mod x4 {
    use crate::mma_sync::WARP;
    use cubecl::prelude::*;
    use island_runtime::emulation;

    /// The CUDA lowering: the row's generic address converted to a shared-window one. `tile`
    /// must be shared memory.
    /// The conversion (`cvta.to.shared`) sits in the same asm statement as the instruction, as in
    /// the other shared-memory lowering: CubeCL 0.11 hands an asm output to a later asm statement
    /// as its local's address, so it cannot be a helper of its own.
    #[cube]
    pub fn cuda(tile: &[Vector<i32, Const<4>>], row: u32) -> Vector<i32, Const<4>> {
        let ptr = tile.slice(row as usize, row as usize + 1).as_ptr();
        let v: Vector<i32, Const<4>>;
        gpu_asm!(
            "{{ .reg .u64 a; .reg .u32 s; cvta.to.shared.u64 a, {}; cvt.u32.u64 s, a; ldmatrix.sync.aligned.m8n8.x4.shared.b16 {}, [s]; }}",
            in(_) ptr, out(_) v,
            options(readonly)
        );
        v
    }

    /// The warp's row indices gathered; register `j` is word `lane % 4` of the row lane
    /// `8j + lane / 4` named.
    #[cube]
    pub fn emulate(tile: &[Vector<i32, Const<4>>], row: u32) -> Vector<i32, Const<4>> {
        let rows = emulation::gather::<u32>(row, WARP);
        let lane = UNIT_POS % WARP;
        let mut v = Vector::<i32, Const<4>>::empty();
        #[unroll]
        for j in 0..4usize {
            let named = rows[(8 * j as u32 + lane / 4) as usize];
            v.insert(j, tile[named as usize].extract_dynamic((lane % 4) as usize));
        }
        v
    }
}

// The checks: islands whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

/// The row of the check's tile that unit `u` names: a permutation of the 64 rows, different
/// for each warp.
#[cube]
fn named_row(u: u32) -> u32 {
    (u * 13 + 7) % 64
}

/// `ldmatrix.x4` on a shared tile of 64 rows of 16 bytes, each lane naming a permuted row.
#[islands]
#[cube]
pub fn ldmatrix_x4(src: &[Vector<i32, Const<4>>], #[comptime] target: Target) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 64]) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda if sm >= 80 => {
            let mut tile = Shared::<[Vector<i32, Const<4>>]>::new_slice(64usize);
            tile[UNIT_POS as usize] = src[UNIT_POS as usize];
            sync_cube();
            x4::call(&tile, named_row(UNIT_POS), target)
        },
        default => {
            let (w, lane) = (UNIT_POS / 32, UNIT_POS % 32);
            let mut v = Vector::<i32, Const<4>>::empty();
            #[unroll]
            for j in 0..4u32 {
                v.insert(j as usize, src[named_row(w * 32 + 8 * j + lane / 4) as usize].extract_dynamic((lane % 4) as usize));
            }
            v
        },
    }
}
