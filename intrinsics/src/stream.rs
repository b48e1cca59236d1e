//! Streaming loads: read-only global loads that do not allocate in L1, for data a kernel reads
//! exactly once (a matvec's weights), so that the L1 keeps what is reused (its activations).
//!
//! Native lowering: `ld.global.nc.L1::no_allocate` on CUDA (inline PTX through CubeCL's C++
//! path). The hint changes where the bytes are cached, never which bytes arrive, so the
//! emulation is the plain load: every backend without the instruction, and the CPU, read
//! `src[index]`. The source is read-only for the kernel's whole run, so the load is declared
//! `nomem` (volatile, no memory clobber): issued where written, without fencing the loads
//! around it. The conformance run checks on the device that the native load returns exactly
//! what the plain load does (width, lane order, addressing).

use cubecl::prelude::*;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

/// `src[index]`, loaded without allocating in L1 where the target is a CUDA device.
#[intrinsic(
    name = "stream::load<i32>",
    semantics = synchronizing("a non-coherent load: a write to its buffer while the kernel runs is not seen"),
    summary = "a read-only load that does not allocate in L1 (data read once)",
    check = crate::stream::stream_load,
    lowerings(cuda => "ld.global.nc.L1::no_allocate.b32"),
)]
pub mod load {
    use cubecl::prelude::*;

    /// The CUDA lowering, also for kernels written for CUDA alone.
    #[cube]
    pub fn cuda(src: &[i32], index: usize) -> i32 {
        let ptr = src.slice(index, index + 1).as_ptr();
        let value: i32;
        gpu_asm!("ld.global.nc.L1::no_allocate.b32 {}, [{}];", out(_) value, in(_) ptr, options(nomem));
        value
    }

    /// The plain load: the hint changes caching, never the bytes.
    #[cube]
    pub fn emulate(src: &[i32], index: usize) -> i32 {
        src[index]
    }
}

/// `src[index]`, one 16-byte vector, loaded without allocating in L1 where the target is a
/// CUDA device.
#[intrinsic(
    name = "stream::load<i32x4>",
    semantics = synchronizing("a non-coherent load: a write to its buffer while the kernel runs is not seen"),
    summary = "a read-only 16-byte load that does not allocate in L1 (data read once)",
    check = crate::stream::stream_load_x4,
    lowerings(cuda => "ld.global.nc.L1::no_allocate.v4.b32"),
)]
pub mod load_x4 {
    use cubecl::prelude::*;

    /// The CUDA lowering, also for kernels written for CUDA alone.
    #[cube]
    pub fn cuda(src: &[Vector<i32, Const<4>>], index: usize) -> Vector<i32, Const<4>> {
        let ptr = src.slice(index, index + 1).as_ptr();
        let value: Vector<i32, Const<4>>;
        gpu_asm!("ld.global.nc.L1::no_allocate.v4.b32 {}, [{}];", out(_) value, in(_) ptr, options(nomem));
        value
    }

    /// The plain load: the hint changes caching, never the bytes.
    #[cube]
    pub fn emulate(src: &[Vector<i32, Const<4>>], index: usize) -> Vector<i32, Const<4>> {
        src[index]
    }
}

// The checks: islands whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

#[islands]
#[cube]
pub fn stream_load(src: &[i32], index: usize, #[comptime] target: Target) -> i32 {
    island! {
        proof(src: &[i32; 64], index: usize = UNIT_POS as usize) -> i32, cube_dim = 64;
        cuda => load::call(src, index, target),
        default => src[index],
    }
}

#[islands]
#[cube]
pub fn stream_load_x4(
    src: &[Vector<i32, Const<4>>],
    index: usize,
    #[comptime] target: Target,
) -> Vector<i32, Const<4>> {
    island! {
        proof(src: &[Vector<i32, Const<4>>; 64], index: usize = UNIT_POS as usize) -> Vector<i32, Const<4>>, cube_dim = 64;
        cuda => load_x4::call(src, index, target),
        default => src[index],
    }
}
