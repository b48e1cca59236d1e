//! Warpgroup matrix multiply-accumulate from shared memory: PTX `wgmma.mma_async` (sm_90a), the
//! instruction Hopper's tensor cores run at full rate, for s8 inputs and s32 accumulators
//! ([`m64n_k32_s8`]) and f16 or bf16 inputs and f32 accumulators ([`m64n_k16_f16`],
//! [`m64n_k16_bf16`], emulated with the measured sm_90 model of [`crate::tensor_core`]). Only sm_90a has `wgmma` (Blackwell's tensor
//! cores take other instructions), so its lowering rows and the arms that call it are guarded
//! by `sm == 90`: another generation runs `default`.
//!
//! `d[64×N] = a[64×32·steps] · b[32·steps×N] + c`, one warpgroup of 128 units (four warps). `a`
//! and `b` are read from shared memory through matrix descriptors, both K-major (each row of `a`
//! and each column of `b` holds its `k` bytes together: integer `wgmma` takes no other). A
//! [`Layout`] says how a tile lies in shared memory, as the descriptor encodes it:
//!
//! | swizzle | byte `k` of row `r` (before the swizzle) | swizzle |
//! |---|---|---|
//! | none (interleaved) | `(r/8)·stride + (k/16)·leading + (r%8)·16 + k%16` | none |
//! | 32, 64, 128 bytes (`W`) | `(r/8)·stride + (r%8)·W + k` | bits 4… of the offset XOR bits 7…, `log2(W/16)` of them |
//!
//! The offset counts from the tile's start (`start`, bytes); the tile slice must be aligned to
//! the swizzle's repeat (256, 512 or 1024 bytes: [`Layout::alignment`]), since the hardware
//! swizzles the shared address itself. `k` steps of 32 bytes advance the descriptor's start
//! address by 32 bytes (swizzled) or by two core matrices (`2·leading`, interleaved).
//!
//! The accumulator is the PTX ISA's "wgmma 64N32 D" fragment: register `r` of unit `u` of the
//! warpgroup holds row `16·(u/32) + (u%32)/4 + 8·((r/2)%2)`, column `8·(r/4) + 2·(u%4) + r%2`.
//!
//! One call issues `steps` instructions and waits for them (`wgmma.fence`, the instructions,
//! `wgmma.commit_group`, `wgmma.wait_group 0`, all in one asm statement). Fence, commit and wait
//! are not intrinsics of their own: between two asm statements CubeCL 0.11 hands registers to
//! the C++ compiler, which may read or move an accumulator the tensor cores are still writing.
//! Writes to a tile by ordinary stores (or `cp.async`) must be made visible to the tensor cores'
//! proxy with [`fence_shared`] by the writing unit, before the cube barrier that precedes the
//! call.
//!
//! Emulation: each unit computes its fragment's outputs from the two tiles in shared memory,
//! decoding the layout as the table says, word by word with [`crate::dp4a`]'s emulation.
//! Integer products and wrapping sums are exact in any order, so it is bit-exact whatever order
//! the tensor cores add in. What it cannot catch: a missing [`fence_shared`] or barrier (the CPU
//! runs each store before the next statement), or a tile slice the hardware sees at another
//! swizzle phase than its offset. The conformance checks (native against emulation, on tiles
//! written by ordinary stores with a fence and a barrier, in every swizzle mode) and the GEMM's
//! whole-output comparison with its plain-Rust reference cover those on the device.

use cubecl::prelude::*;
use half::{bf16, f16};
use island_portable as portable;
use island_runtime::intrinsic;
use island_runtime::prelude::*;

/// The units of the warpgroup `wgmma` runs on.
pub const WARPGROUP: u32 = 128;

/// How a descriptor's tile is swizzled: the width of its rows in bytes, or none.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Swizzle {
    /// Interleaved core matrices of 8 rows × 16 bytes, `leading` and `stride` apart.
    None,
    B32,
    B64,
    B128,
}

/// A K-major tile's layout in shared memory: what a matrix descriptor encodes besides the
/// address (see the module's table).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Layout {
    pub swizzle: Swizzle,
    /// Bytes between core matrices adjacent in `k` (interleaved only; a multiple of 16).
    pub leading: u32,
    /// Bytes between groups of 8 rows (a multiple of 16).
    pub stride: u32,
}

impl Layout {
    /// Row width in bytes of a swizzled layout (0 interleaved).
    pub const fn width(&self) -> u32 {
        match self.swizzle {
            Swizzle::None => 0,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }

    /// The alignment a tile's shared slice needs: the swizzle pattern's repeat.
    pub const fn alignment(&self) -> u32 {
        match self.swizzle {
            Swizzle::None => 16,
            _ => 8 * self.width(),
        }
    }

    /// How far one 32-byte `k` step moves the start address.
    pub const fn k_step(&self) -> u32 {
        match self.swizzle {
            Swizzle::None => 2 * self.leading,
            _ => 32,
        }
    }

    /// The descriptor's bits other than the start address (PTX ISA, "Matrix Descriptor
    /// Format"): leading and stride offsets in 16-byte units at bits 16 and 32, the swizzle
    /// mode at bit 62 (1: 128 bytes, 2: 64, 3: 32).
    pub const fn descriptor_bits(&self) -> u64 {
        let mode: u64 = match self.swizzle {
            Swizzle::None => 0,
            Swizzle::B128 => 1,
            Swizzle::B64 => 2,
            Swizzle::B32 => 3,
        };
        (((self.leading >> 4) as u64 & 0x3fff) << 16) | (((self.stride >> 4) as u64 & 0x3fff) << 32) | (mode << 62)
    }
}

/// The shared-memory byte offset of byte `k` of row `r` of a tile starting at `start` (the
/// module's table; `k` a multiple of 4 names a whole word).
#[cube]
pub fn offset(start: u32, r: u32, k: u32, #[comptime] layout: Layout) -> u32 {
    let width = comptime!(layout.width());
    let mut at = start + (r / 8) * comptime!(layout.stride);
    if comptime!(width == 0) {
        at += (k / 16) * comptime!(layout.leading) + (r % 8) * 16 + k % 16;
    } else {
        at += (r % 8) * width + k;
        at ^= ((at >> 7) & comptime!(width / 16 - 1)) << 4;
    }
    at
}

/// The operand types of a `wgmma`: what one 32-byte `k` step of a row holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// 32 s8 values into s32 (`k32`).
    S8,
    /// 16 f16 values into f32 (`k16`).
    F16,
    /// 16 bf16 values into f32 (`k16`).
    BF16,
}

/// The inline PTX of one call (see `m64nNk32_s8::cuda`): operands `%0…` the results, then the
/// accumulator's inputs, then the generic addresses of `a`'s and `b`'s starts.
pub(crate) fn mma_ptx(kind: Kind, n: u32, steps: u32, a: Layout, b: Layout) -> String {
    let (k, types, tail) = match kind {
        Kind::S8 => (32, "s32.s8.s8", ""),
        // Scale-a and scale-b 1 (no negation), both operands K-major (no transpose).
        Kind::F16 => (16, "f32.f16.f16", ", 1, 1, 0, 0"),
        Kind::BF16 => (16, "f32.bf16.bf16", ", 1, 1, 0, 0"),
    };
    let v = n / 2;
    let regs = (0..v).map(|i| format!("t{i}")).collect::<Vec<_>>().join(", ");
    let mut ptx = String::from("{\n");
    ptx += &format!(".reg .b32 t<{v}>;\n.reg .u64 ga, gb, da, db;\n.reg .b32 one;\n.reg .pred p;\n");
    for i in 0..v {
        ptx += &format!("mov.b32 t{i}, %{};\n", v + i);
    }
    for (name, layout, operand) in [("a", a, 2 * v), ("b", b, 2 * v + 1)] {
        ptx += &format!(
            "cvta.to.shared.u64 g{name}, %{operand};\nand.b64 g{name}, g{name}, 262143;\nshr.u64 g{name}, g{name}, 4;\nor.b64 d{name}, g{name}, {};\n",
            layout.descriptor_bits()
        );
    }
    ptx += "mov.b32 one, 1;\nsetp.ne.b32 p, one, 0;\nwgmma.fence.sync.aligned;\n";
    for s in 0..steps {
        if s > 0 {
            ptx += &format!("add.s64 da, da, {};\nadd.s64 db, db, {};\n", a.k_step() >> 4, b.k_step() >> 4);
        }
        ptx += &format!("wgmma.mma_async.sync.aligned.m64n{n}k{k}.{types} {{{regs}}}, da, db, p{tail};\n");
    }
    ptx += "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n";
    for i in 0..v {
        ptx += &format!("mov.b32 %{i}, t{i};\n");
    }
    ptx += "}\n";
    ptx
}

/// `a · b + c` on one 64×N tile over `32·steps` bytes of `k`, `a` and `b` K-major tiles in shared
/// memory (`Word` slices, `*_start` in bytes), `c` and the result this unit's fragment of
/// `N / 2` registers (layout above). `N` is 8…256, a multiple of 8.
#[intrinsic(
    name = "wgmma::m64nNk32<s8>",
    semantics = synchronizing("the fence before, and the commit and wait after, an asynchronous tensor-core product"),
    summary = "64×N s32 tile += 64×32k s8 · 32k×N s8, both from shared memory through matrix descriptors (interleaved or 32/64/128-byte swizzle), one warpgroup (sm_90a)",
    check = [crate::wgmma::wgmma_interleaved, crate::wgmma::wgmma_swizzle128, crate::wgmma::wgmma_swizzle64_32],
    lowerings(cuda if sm == 90 => "wgmma.mma_async.sync.aligned.m64n" sass "IGMMA"),
)]
pub mod m64n_k32_s8 {
    use crate::wgmma::{Kind, Layout, WARPGROUP, mma_ptx, offset};
    use cubecl::prelude::*;

    /// The CUDA lowering: the descriptors built from the tiles' shared addresses, `steps`
    /// instructions, then a wait for them, in one asm statement ([`mma_ptx`]). The accumulator
    /// is copied into registers of the statement's own, which `wgmma` reads and writes in place
    /// (CubeCL's asm has no read-write operands).
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn cuda<N: Size>(
        a: &[Vector<i32, Const<4>>],
        a_start: u32,
        b: &[Vector<i32, Const<4>>],
        b_start: u32,
        c: Vector<i32, N>,
        #[comptime] steps: u32,
        #[comptime] a_layout: Layout,
        #[comptime] b_layout: Layout,
    ) -> Vector<i32, N> {
        let pa = a.slice((a_start / 16) as usize, (a_start / 16) as usize + 1).as_ptr();
        let pb = b.slice((b_start / 16) as usize, (b_start / 16) as usize + 1).as_ptr();
        // A vector the caller keeps in a mutable local reaches inline asm as that local's
        // address; the sum with zero is a value (the C++ compiler folds the addition away).
        let c = c + Vector::<i32, N>::new(0i32);
        let d: Vector<i32, N>;
        gpu_asm!(
            "{}// {} {} {} {}",
            const mma_ptx(Kind::S8, 2 * N::value() as u32, steps, a_layout, b_layout), out(_) d, in(_) c, in(_) pa, in(_) pb,
            options(readonly)
        );
        d
    }

    /// Each unit's outputs from the tiles, `k` in order, word by word with dp4a's emulation.
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn emulate<N: Size>(
        a: &[Vector<i32, Const<4>>],
        a_start: u32,
        b: &[Vector<i32, Const<4>>],
        b_start: u32,
        c: Vector<i32, N>,
        #[comptime] steps: u32,
        #[comptime] a_layout: Layout,
        #[comptime] b_layout: Layout,
    ) -> Vector<i32, N> {
        let unit = UNIT_POS % WARPGROUP;
        let (warp, g, t) = (unit / 32, (unit % 32) / 4, unit % 4);
        let mut d = c;
        #[unroll]
        for r in 0..comptime!(N::value()) {
            let row = 16 * warp + g + 8 * ((r as u32 / 2) % 2);
            let col = 8 * (r as u32 / 4) + 2 * t + r as u32 % 2;
            let mut sum = c.extract(r);
            for s in 0..steps {
                for w in 0..8u32 {
                    let at_a = offset(a_start + s * comptime!(a_layout.k_step()), row, 4 * w, a_layout);
                    let at_b = offset(b_start + s * comptime!(b_layout.k_step()), col, 4 * w, b_layout);
                    let a_word = a[(at_a / 16) as usize].extract_dynamic(((at_a % 16) / 4) as usize);
                    let b_word = b[(at_b / 16) as usize].extract_dynamic(((at_b % 16) / 4) as usize);
                    sum = crate::dp4a::emulate(a_word, b_word, sum);
                }
            }
            d.insert(r, sum);
        }
        d
    }
}

/// `a · b + c` on one 64×N tile over `16·steps` f16 values of `k` into f32, `a` and `b` K-major
/// f16 tiles in shared memory (`*_start` in bytes, the layouts as for [`m64n_k32_s8`]: a 32-byte
/// `k` step holds 16 values), `c` and the result this unit's fragment of `N / 2` registers (the
/// same fragment layout).
///
/// Emulation: for each output and `k` step of 16, the measured model of the profile's tensor
/// cores ([`crate::mma::f16_model`]: sm_90's `HMMA.16816.F32` model, one fused step of 16
/// products) where there is one; elsewhere the products added in `k` order, where the contract is
/// a tolerance. Whether `wgmma` adds as `HMMA` does is what the device check shows.
#[intrinsic(
    name = "wgmma::m64nNk16<f16>",
    semantics = device_defined("the order and internal precision of tensor-core float accumulation"),
    summary = "64×N f32 tile += 64×16k f16 · 16k×N f16, both from shared memory through matrix descriptors, one warpgroup (sm_90a; bit-exact on sm_90's measured model, a tolerance elsewhere)",
    check = crate::wgmma::wgmma_f16_swizzle128,
    lowerings(cuda if sm == 90 => "wgmma.mma_async.sync.aligned.m64n" sass "HGMMA"),
)]
pub mod m64n_k16_f16 {
    use crate::wgmma::{Kind, Layout, WARPGROUP, mma_ptx, offset};
    use cubecl::prelude::*;
    use half::f16;
    use island_runtime::Target;

    /// The CUDA lowering: as [`super::m64n_k32_s8::cuda`], with f16 inputs and f32 registers.
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn cuda<N: Size>(
        a: &[f16],
        a_start: u32,
        b: &[f16],
        b_start: u32,
        c: Vector<f32, N>,
        #[comptime] steps: u32,
        #[comptime] a_layout: Layout,
        #[comptime] b_layout: Layout,
    ) -> Vector<f32, N> {
        let pa = a.slice((a_start / 2) as usize, (a_start / 2) as usize + 1).as_ptr();
        let pb = b.slice((b_start / 2) as usize, (b_start / 2) as usize + 1).as_ptr();
        // A value, not the caller's local (see the s8 lowering); `· 1` keeps a −0 accumulator −0,
        // where `+ 0` would not.
        let c = c * Vector::<f32, N>::new(1.0f32);
        let d: Vector<f32, N>;
        gpu_asm!(
            "{}// {} {} {} {}",
            const mma_ptx(Kind::F16, 2 * N::value() as u32, steps, a_layout, b_layout), out(_) d, in(_) c, in(_) pa, in(_) pb,
            options(readonly)
        );
        d
    }

    /// Each unit's outputs from the tiles: per `k` step, the 16 values of the row of `a` and of
    /// the column of `b` gathered through the layouts, then one step of the model.
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn emulate<N: Size>(
        a: &[f16],
        a_start: u32,
        b: &[f16],
        b_start: u32,
        c: Vector<f32, N>,
        #[comptime] steps: u32,
        #[comptime] a_layout: Layout,
        #[comptime] b_layout: Layout,
        #[comptime] target: Target,
    ) -> Vector<f32, N> {
        let model = comptime!(target.arms().and_then(crate::mma::f16_model));
        let unit = UNIT_POS % WARPGROUP;
        let (warp, g, t) = (unit / 32, (unit % 32) / 4, unit % 4);
        let mut d = c;
        #[unroll]
        for r in 0..comptime!(N::value()) {
            let row = 16 * warp + g + 8 * ((r as u32 / 2) % 2);
            let col = 8 * (r as u32 / 4) + 2 * t + r as u32 % 2;
            let mut sum = c.extract(r);
            for s in 0..steps {
                let mut xa = Array::<f16>::new(16usize);
                let mut xb = Array::<f16>::new(16usize);
                for i in 0..16u32 {
                    let at_a = offset(a_start + s * comptime!(a_layout.k_step()), row, 2 * i, a_layout);
                    let at_b = offset(b_start + s * comptime!(b_layout.k_step()), col, 2 * i, b_layout);
                    xa[i as usize] = a[(at_a / 2) as usize];
                    xb[i as usize] = b[(at_b / 2) as usize];
                }
                if comptime!(model.is_some()) {
                    sum = crate::tensor_core::emulation::fused_dot(
                        xa.as_slice(),
                        0u32,
                        xb.as_slice(),
                        0u32,
                        1u32,
                        sum,
                        comptime!(model.unwrap()),
                    );
                } else {
                    for i in 0..16usize {
                        sum += f32::cast_from(xa[i]) * f32::cast_from(xb[i]);
                    }
                }
            }
            d.insert(r, sum);
        }
        d
    }
}

/// [`m64n_k16_f16`] for bf16 inputs: the same tiles, layouts and fragment, the same measured
/// sm_90 model (which covers bf16: [`crate::tensor_core`]), emulated with integer exponents
/// (a bf16 product's reaches ±252, past f32's range).
#[intrinsic(
    name = "wgmma::m64nNk16<bf16>",
    semantics = device_defined("the order and internal precision of tensor-core float accumulation"),
    summary = "64×N f32 tile += 64×16k bf16 · 16k×N bf16, both from shared memory through matrix descriptors, one warpgroup (sm_90a; bit-exact on sm_90's measured model, a tolerance elsewhere)",
    check = crate::wgmma::wgmma_bf16_swizzle128,
    lowerings(cuda if sm == 90 => "wgmma.mma_async.sync.aligned.m64n" sass "HGMMA"),
)]
pub mod m64n_k16_bf16 {
    use crate::tensor_core::Format;
    use crate::wgmma::{Kind, Layout, WARPGROUP, mma_ptx, offset};
    use cubecl::prelude::*;
    use half::bf16;
    use island_runtime::Target;

    /// The CUDA lowering: as [`super::m64n_k16_f16::cuda`], with bf16 inputs.
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn cuda<N: Size>(
        a: &[bf16],
        a_start: u32,
        b: &[bf16],
        b_start: u32,
        c: Vector<f32, N>,
        #[comptime] steps: u32,
        #[comptime] a_layout: Layout,
        #[comptime] b_layout: Layout,
    ) -> Vector<f32, N> {
        let pa = a.slice((a_start / 2) as usize, (a_start / 2) as usize + 1).as_ptr();
        let pb = b.slice((b_start / 2) as usize, (b_start / 2) as usize + 1).as_ptr();
        let c = c * Vector::<f32, N>::new(1.0f32);
        let d: Vector<f32, N>;
        gpu_asm!(
            "{}// {} {} {} {}",
            const mma_ptx(Kind::BF16, 2 * N::value() as u32, steps, a_layout, b_layout), out(_) d, in(_) c, in(_) pa, in(_) pb,
            options(readonly)
        );
        d
    }

    /// As [`super::m64n_k16_f16::emulate`], each `k` step one bf16 step of the model.
    #[cube]
    #[allow(clippy::too_many_arguments)]
    pub fn emulate<N: Size>(
        a: &[bf16],
        a_start: u32,
        b: &[bf16],
        b_start: u32,
        c: Vector<f32, N>,
        #[comptime] steps: u32,
        #[comptime] a_layout: Layout,
        #[comptime] b_layout: Layout,
        #[comptime] target: Target,
    ) -> Vector<f32, N> {
        let model = comptime!(target.arms().and_then(crate::mma::f16_model));
        let unit = UNIT_POS % WARPGROUP;
        let (warp, g, t) = (unit / 32, (unit % 32) / 4, unit % 4);
        let mut d = c;
        #[unroll]
        for r in 0..comptime!(N::value()) {
            let row = 16 * warp + g + 8 * ((r as u32 / 2) % 2);
            let col = 8 * (r as u32 / 4) + 2 * t + r as u32 % 2;
            let mut sum = c.extract(r);
            for s in 0..steps {
                let mut xa = Array::<bf16>::new(16usize);
                let mut xb = Array::<bf16>::new(16usize);
                for i in 0..16u32 {
                    let at_a = offset(a_start + s * comptime!(a_layout.k_step()), row, 2 * i, a_layout);
                    let at_b = offset(b_start + s * comptime!(b_layout.k_step()), col, 2 * i, b_layout);
                    xa[i as usize] = a[(at_a / 2) as usize];
                    xb[i as usize] = b[(at_b / 2) as usize];
                }
                if comptime!(model.is_some()) {
                    sum = crate::tensor_core::emulation::fused_dot_of::<bf16>(
                        xa.as_slice(),
                        0u32,
                        xb.as_slice(),
                        0u32,
                        1u32,
                        sum,
                        Format::BF16,
                        comptime!(model.unwrap()),
                    );
                } else {
                    for i in 0..16usize {
                        sum += f32::cast_from(xa[i]) * f32::cast_from(xb[i]);
                    }
                }
            }
            d.insert(r, sum);
        }
        d
    }
}

/// Makes this unit's earlier stores to shared memory visible to the tensor cores' reads of
/// [`m64n_k32_s8`] (the async proxy), ahead of the cube barrier before the call.
#[intrinsic(
    name = "wgmma::fence_shared",
    semantics = synchronizing("the fence before, and the commit and wait after, an asynchronous tensor-core product"),
    summary = "orders this unit's shared-memory stores before later wgmma reads of them (async-proxy fence, sm_90)",
    check = [crate::wgmma::wgmma_interleaved, crate::wgmma::wgmma_swizzle128, crate::wgmma::wgmma_swizzle64_32],
    lowerings(cuda if sm >= 90 => "fence.proxy.async.shared::cta" sass "FENCE.VIEW.ASYNC.S"),
)]
pub mod fence_shared {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda() {
        gpu_asm!("fence.proxy.async.shared::cta;");
    }

    /// Nothing: the emulation reads shared memory with ordinary loads.
    #[cube]
    pub fn emulate() {}
}

// The checks: islands whose accelerated arm calls this file's intrinsics and whose `default`
// computes the same function another way (proven on the CPU, compared natively on devices).

type Word = Vector<i32, Const<4>>;

/// The rows of a `wgmma` tile's `a` and of its output: one warpgroup's 64.
const TILE_M: u32 = 64;

/// 16-byte words of a K-major int8 tile of `rows` rows and `k` values a row.
const fn tile_words(rows: u32, k: u32) -> usize {
    (rows * k / 16) as usize
}

/// Stores `rows` rows of `k` bytes (row-major words of `src` from `first`) into a shared tile at
/// its layout; each unit of the warpgroup a share of the 16-byte chunks.
#[cube]
fn store_tile(
    src: &[Word],
    first: u32,
    tile: &mut [Word],
    #[comptime] rows: u32,
    #[comptime] k: u32,
    #[comptime] layout: Layout,
) {
    let chunks = comptime!(k / 16);
    let total = comptime!(rows * chunks);
    for i in 0..comptime!(total.div_ceil(WARPGROUP)) {
        let idx = UNIT_POS + i * WARPGROUP;
        if idx < total {
            let (r, chunk) = (idx / chunks, idx % chunks);
            tile[(offset(0u32, r, 16 * chunk, layout) / 16) as usize] = src[(first + idx) as usize];
        }
    }
}

/// `default` of the checks: unit `u` its `n / 2` consecutive outputs of the row-major 64×n `c`,
/// `c + Σ a·b` over packed words of the row-major `a` (64 rows) and `bᵀ` (n rows), `k` bytes
/// each.
#[cube]
fn tile_scalar(a: &[Word], bt: &[Word], c: &mut [i32], #[comptime] n: u32, #[comptime] k: u32) {
    let per = comptime!(n / 2);
    let words = comptime!(k / 4);
    for j in 0..per {
        let e = UNIT_POS * per + j;
        let (row, col) = (e / n, e % n);
        let mut sum = c[e as usize];
        for w in 0..words {
            let x = a[(row * words / 4 + w / 4) as usize].extract_dynamic((w % 4) as usize);
            let y = bt[(col * words / 4 + w / 4) as usize].extract_dynamic((w % 4) as usize);
            sum = portable::dot4_i8(x, y, sum);
        }
        c[e as usize] = sum;
    }
}

/// The accelerated arm of the checks: `a` and `bᵀ` stored into shared tiles at their layouts,
/// fenced, one call of `steps` instructions, the fragment written back row-major.
#[cube]
#[allow(clippy::too_many_arguments)]
fn tile_wgmma<N: Size>(
    a: &[Word],
    bt: &[Word],
    c: &mut [i32],
    #[comptime] steps: u32,
    #[comptime] a_layout: Layout,
    #[comptime] b_layout: Layout,
    #[comptime] a_words: u32,
    #[comptime] b_words: u32,
    #[comptime] target: Target,
) {
    let n = comptime!(2 * N::value() as u32);
    let k = comptime!(32 * steps);
    let mut sa =
        Shared::<[Word]>::new_aligned_slice(comptime!(a_words as usize), comptime!(a_layout.alignment() as usize));
    let mut sb =
        Shared::<[Word]>::new_aligned_slice(comptime!(b_words as usize), comptime!(b_layout.alignment() as usize));
    // Unused slots (a layout with gaps) hold a value no output may read.
    for i in 0..comptime!(a_words.div_ceil(WARPGROUP)) {
        if UNIT_POS + i * WARPGROUP < a_words {
            sa[(UNIT_POS + i * WARPGROUP) as usize] = Word::new(0x7f7f7f7f);
        }
    }
    for i in 0..comptime!(b_words.div_ceil(WARPGROUP)) {
        if UNIT_POS + i * WARPGROUP < b_words {
            sb[(UNIT_POS + i * WARPGROUP) as usize] = Word::new(0x7f7f7f7f);
        }
    }
    sync_cube();
    store_tile(a, 0u32, &mut sa, 64u32, k, a_layout);
    store_tile(bt, 0u32, &mut sb, n, k, b_layout);
    fence_shared::call(target);
    sync_cube();
    let (warp, g, t) = (UNIT_POS / 32, (UNIT_POS % 32) / 4, UNIT_POS % 4);
    let mut fc = Vector::<i32, N>::empty();
    #[unroll]
    for r in 0..comptime!(N::value()) {
        let (row, col) = (16 * warp + g + 8 * ((r as u32 / 2) % 2), 8 * (r as u32 / 4) + 2 * t + r as u32 % 2);
        fc.insert(r, c[(row * n + col) as usize]);
    }
    let d = m64n_k32_s8::call::<N>(&sa, 0u32, &sb, 0u32, fc, steps, a_layout, b_layout, target);
    #[unroll]
    for r in 0..comptime!(N::value()) {
        let (row, col) = (16 * warp + g + 8 * ((r as u32 / 2) % 2), 8 * (r as u32 / 4) + 2 * t + r as u32 % 2);
        c[(row * n + col) as usize] = d.extract(r);
    }
}

/// Interleaved tiles (no swizzle), `N = 128`, two `k` steps; `a`'s core matrices `k`-adjacent
/// at 128 bytes with 8-row groups 512 apart, `b`'s the other way round (8-row groups at 128,
/// `k` neighbours 2 KiB apart), so both offsets are exercised in both roles.
#[islands]
#[cube]
pub fn wgmma_interleaved(a: &[Word], bt: &[Word], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[Word; tile_words(TILE_M, 64)], bt: &[Word; tile_words(128, 64)],
              c: &mut [i32; (TILE_M * 128) as usize]), cube_dim = WARPGROUP;
        cuda if sm == 90 => tile_wgmma::<Const<64>>(
            a, bt, c, 2u32,
            comptime!(Layout { swizzle: Swizzle::None, leading: 128, stride: 512 }),
            comptime!(Layout { swizzle: Swizzle::None, leading: 2048, stride: 128 }),
            256u32, 512u32, target,
        ),
        default => tile_scalar(a, bt, c, 128u32, 64u32),
    }
}

/// 128-byte swizzle on both tiles, `N = 64`, four `k` steps (the whole 128-byte row).
#[islands]
#[cube]
pub fn wgmma_swizzle128(a: &[Word], bt: &[Word], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[Word; tile_words(TILE_M, 128)], bt: &[Word; tile_words(64, 128)],
              c: &mut [i32; (TILE_M * 64) as usize]), cube_dim = WARPGROUP;
        cuda if sm == 90 => tile_wgmma::<Const<32>>(
            a, bt, c, 4u32,
            comptime!(Layout { swizzle: Swizzle::B128, leading: 16, stride: 1024 }),
            comptime!(Layout { swizzle: Swizzle::B128, leading: 16, stride: 1024 }),
            512u32, 512u32, target,
        ),
        default => tile_scalar(a, bt, c, 64u32, 128u32),
    }
}

/// 64-byte swizzle on `a`, 32-byte on `b`, `N = 32`, one `k` step; `a`'s 8-row groups 1 KiB
/// apart (a gap after each swizzle repeat).
#[islands]
#[cube]
pub fn wgmma_swizzle64_32(a: &[Word], bt: &[Word], c: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(a: &[Word; tile_words(TILE_M, 32)], bt: &[Word; tile_words(32, 32)],
              c: &mut [i32; (TILE_M * 32) as usize]), cube_dim = WARPGROUP;
        cuda if sm == 90 => tile_wgmma::<Const<16>>(
            a, bt, c, 1u32,
            comptime!(Layout { swizzle: Swizzle::B64, leading: 16, stride: 1024 }),
            comptime!(Layout { swizzle: Swizzle::B32, leading: 16, stride: 256 }),
            512u32, 128u32, target,
        ),
        default => tile_scalar(a, bt, c, 32u32, 32u32),
    }
}

/// Stores the row-major f16 `src` (`rows` rows of `k` values) into a shared tile at its layout,
/// value by value.
#[cube]
fn store_tile_f16(
    src: &[f16],
    tile: &mut [f16],
    #[comptime] rows: u32,
    #[comptime] k: u32,
    #[comptime] layout: Layout,
) {
    for i in 0..comptime!((rows * k).div_ceil(WARPGROUP)) {
        let idx = UNIT_POS + i * WARPGROUP;
        if idx < rows * k {
            let (r, kk) = (idx / k, idx % k);
            tile[(offset(0u32, r, 2 * kk, layout) / 2) as usize] = src[idx as usize];
        }
    }
}

/// `default` of the f16 check: unit `u` its `n / 2` consecutive outputs of the row-major 64×n
/// `c`, each one fused step of the model per 16 values of `k` ([`portable::fused_step`]), `b`
/// given as `bᵀ` (n rows of `k`).
#[cube]
fn tile_f16_scalar(a: &[f16], bt: &[f16], c: &mut [f32], #[comptime] n: u32, #[comptime] k: u32) {
    let per = comptime!(n / 2);
    for j in 0..per {
        let e = UNIT_POS * per + j;
        let (row, col) = (e / n, e % n);
        let mut sum = c[e as usize];
        for s in 0..comptime!(k / 16) {
            sum = portable::fused_step(a, row * k + 16 * s, bt, col * k + 16 * s, 1u32, sum);
        }
        c[e as usize] = sum;
    }
}

/// f16 `wgmma` on 128-byte-swizzled tiles, `N = 64`, four `k` steps (the whole 128-byte row of
/// 64 values); `c` is added to, so its edge values reach the output.
#[islands]
#[cube]
pub fn wgmma_f16_swizzle128(a: &[f16], bt: &[f16], c: &mut [f32], #[comptime] target: Target) {
    island! {
        proof(a: &[f16; (TILE_M * 64) as usize], bt: &[f16; (64 * 64) as usize], c: &mut [f32; (TILE_M * 64) as usize]),
            cube_dim = WARPGROUP,
            contract = accumulation(64, "tensor cores add f16 products in an order and internal precision NVIDIA does not specify",
                                    exact_where = crate::mma::f16_modelled);
        cuda if sm == 90 => {
            let layout = comptime!(Layout { swizzle: Swizzle::B128, leading: 16, stride: 1024 });
            let mut sa = Shared::<[f16]>::new_aligned_slice(4096usize, 1024usize);
            let mut sb = Shared::<[f16]>::new_aligned_slice(4096usize, 1024usize);
            store_tile_f16(a, &mut sa, 64u32, 64u32, layout);
            store_tile_f16(bt, &mut sb, 64u32, 64u32, layout);
            fence_shared::call(target);
            sync_cube();
            let (warp, g, t) = (UNIT_POS / 32, (UNIT_POS % 32) / 4, UNIT_POS % 4);
            let mut fc = Vector::<f32, Const<32>>::empty();
            #[unroll]
            for r in 0..32usize {
                let (row, col) = (16 * warp + g + 8 * ((r as u32 / 2) % 2), 8 * (r as u32 / 4) + 2 * t + r as u32 % 2);
                fc.insert(r, c[(row * 64 + col) as usize]);
            }
            let d = m64n_k16_f16::call::<Const<32>>(&sa, 0u32, &sb, 0u32, fc, 4u32, layout, layout, target);
            #[unroll]
            for r in 0..32usize {
                let (row, col) = (16 * warp + g + 8 * ((r as u32 / 2) % 2), 8 * (r as u32 / 4) + 2 * t + r as u32 % 2);
                c[(row * 64 + col) as usize] = d.extract(r);
            }
        },
        default => tile_f16_scalar(a, bt, c, 64u32, 64u32),
    }
}

/// Stores a `rows × k` bf16 tile into shared memory at `layout` (as [`store_tile_f16`]), read
/// from `src` holding its columns: `k × rows`, row-major.
#[cube]
fn store_tile_bf16_transposed(
    src: &[bf16],
    tile: &mut [bf16],
    #[comptime] rows: u32,
    #[comptime] k: u32,
    #[comptime] layout: Layout,
) {
    for i in 0..comptime!((rows * k).div_ceil(WARPGROUP)) {
        let idx = UNIT_POS + i * WARPGROUP;
        if idx < rows * k {
            let (r, kk) = (idx / k, idx % k);
            tile[(offset(0u32, r, 2 * kk, layout) / 2) as usize] = src[(kk * rows + r) as usize];
        }
    }
}

/// bf16 `wgmma` on 128-byte-swizzled tiles, `N = 64`, four `k` steps; `c` is added to. Its
/// `default` is [`portable::fused_step_bf16`] per output and 16 of `k`. `a` is given
/// column-major and `b` row-major (both transposed into the K-major tiles): the proof's near-MAX
/// values sit at every fourth position of every input, and a product of two of them, or of one
/// and a value above 2, is past f32's range. Laid out along `k` they would meet in every output,
/// which would compare infinities only; this way they fill every fourth row of `a` and column of
/// `b`, and the other outputs stay finite.
#[islands]
#[cube]
pub fn wgmma_bf16_swizzle128(at: &[bf16], b: &[bf16], c: &mut [f32], #[comptime] target: Target) {
    island! {
        proof(at: &[bf16; (TILE_M * 64) as usize], b: &[bf16; (64 * 64) as usize], c: &mut [f32; (TILE_M * 64) as usize]),
            cube_dim = WARPGROUP,
            contract = accumulation(64, "tensor cores add bf16 products in an order and internal precision NVIDIA does not specify",
                                    exact_where = crate::mma::f16_modelled);
        cuda if sm == 90 => {
            let layout = comptime!(Layout { swizzle: Swizzle::B128, leading: 16, stride: 1024 });
            let mut sa = Shared::<[bf16]>::new_aligned_slice(4096usize, 1024usize);
            let mut sb = Shared::<[bf16]>::new_aligned_slice(4096usize, 1024usize);
            store_tile_bf16_transposed(at, &mut sa, 64u32, 64u32, layout);
            store_tile_bf16_transposed(b, &mut sb, 64u32, 64u32, layout);
            fence_shared::call(target);
            sync_cube();
            let (warp, g, t) = (UNIT_POS / 32, (UNIT_POS % 32) / 4, UNIT_POS % 4);
            let mut fc = Vector::<f32, Const<32>>::empty();
            #[unroll]
            for r in 0..32usize {
                let (row, col) = (16 * warp + g + 8 * ((r as u32 / 2) % 2), 8 * (r as u32 / 4) + 2 * t + r as u32 % 2);
                fc.insert(r, c[(row * 64 + col) as usize]);
            }
            let d = m64n_k16_bf16::call::<Const<32>>(&sa, 0u32, &sb, 0u32, fc, 4u32, layout, layout, target);
            #[unroll]
            for r in 0..32usize {
                let (row, col) = (16 * warp + g + 8 * ((r as u32 / 2) % 2), 8 * (r as u32 / 4) + 2 * t + r as u32 % 2);
                c[(row * 64 + col) as usize] = d.extract(r);
            }
        },
        default => {
            for j in 0..32u32 {
                let e = UNIT_POS * 32 + j;
                let (row, col) = (e / 64, e % 64);
                let mut sum = c[e as usize];
                for s in 0..4u32 {
                    sum = portable::fused_step_bf16(at, 16 * s * 64 + row, 64u32, b, 16 * s * 64 + col, 64u32, sum);
                }
                c[e as usize] = sum;
            }
        },
    }
}
