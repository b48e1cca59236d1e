//! Quantized matrix × matrix (MMQ), the batched path of a quantized linear layer: `y = W·X` for
//! `n` tokens at once, `W` Q8_0 or Q4_1 (`m` rows of `k`), `X` f32 (`n` columns of `k`),
//! `y` f32 stored token-major (`y[j·m + i]`), as llama.cpp's `MUL_MAT` lays out its result.
//!
//! Two kernels, both part of the timed work:
//! - [`quantize`]: the activations to Q8_1 blocks of 32, one unit per block
//!   (`d = amax / 127`, `q = round(x / d)` half away from zero, `s = d · Σq`), each division
//!   the correctly rounded [`island_intrinsics::exact::div`].
//! - [`kernel`]: per 32-value block, the integer dot product of a weight row and an activation
//!   column (tensor cores where the island's arm runs), then the block's scales applied in one
//!   defined order:
//!
//!   ```text
//!   acc = fma♭(mul♭(dw, dx), f32(Σ qw·qx), acc)   Q8_0 and Q4_1
//!   acc = fma♭(mw, sx, acc)                        Q4_1 only (its per-block minimum)
//!   ```
//!
//!   block after block in `k` order from `acc = +0.0`, `mul♭` and `fma♭` the flushing product
//!   and fused multiply-add of [`island_intrinsics::flushed`]: subnormal operands read as zeros
//!   of their signs, one rounding to nearest even, a tiny result (below 2⁻¹²⁶ once rounded to
//!   24 bits with an unbounded exponent) a zero of its sign. A device that flushes subnormals (NVIDIA's Vulkan driver, CUDA's `.ftz`
//!   instructions) computes the definition itself, and every other device computes it with the
//!   flushes written out. `default` computes both in 32-bit integer operations
//!   ([`island_intrinsics::portable::mul_flushed32`], [`island_intrinsics::portable::fma_flushed32`]):
//!   with the binary64 formulation of the `fma` ([`island_intrinsics::portable::fma_rn`])
//!   lavapipe's `default` differed from the CPU's by one ulp in 14 of 327,680 outputs
//!   (2026-12-05, seed 0x151a4d5eed), with the integer one in none. Until 2026-12-07 the
//!   definition flushed a result subnormal once rounded as IEEE rounds; the H100's flushing
//!   instructions take the unbounded exponent's rule (`island_intrinsics::flushed`), so the
//!   definition does too.
//!   The quant type is a comptime parameter of one kernel.
//!
//! Weights are imported from GGUF blocks once ([`MmqWeights::from_gguf`]): the quants stay as
//! they are (Q4_1 keeps its packed nibbles), the scales are converted to f32 and reordered
//! block-major in the order the tensor-core fragments read them ([`row_position`]).

mod kernel;
mod quant;
mod quantize;
mod reference;
mod weights;

pub use kernel::*;
pub use quant::*;
pub use quantize::*;
pub use reference::*;
pub use weights::*;

use crate::error::ShapeError;
use cubecl::prelude::*;
use island_runtime::Target;
use island_runtime::readback::ReadError;

/// Device buffers of one problem, created once (for repeated, kernel-only launches).
pub struct Problem {
    pub quant: Quant,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    wq: cubecl::server::Handle,
    wd: cubecl::server::Handle,
    wm: cubecl::server::Handle,
    x: cubecl::server::Handle,
    xq: cubecl::server::Handle,
    xd: cubecl::server::Handle,
    xs: cubecl::server::Handle,
    y: cubecl::server::Handle,
}

impl Problem {
    /// Uploads the weights and `x` (`n` columns of `k` values, column after column).
    pub fn new(client: &Client, w: &MmqWeights, x: &[f32], n: usize) -> Result<Problem, ShapeError> {
        let (m, k) = (w.rows, w.cols);
        check(m, k, n)?;
        if x.len() != n * k {
            return Err(ShapeError(format!(
                "{n} activation columns of {k} values are {} values, got {}",
                n * k,
                x.len()
            )));
        }
        let blocks = n * k / BLOCK;
        Ok(Problem {
            quant: w.quant,
            m,
            k,
            n,
            wq: client.create_from_slice(u8::as_bytes(&w.quants)),
            wd: client.create_from_slice(f32::as_bytes(&w.scales)),
            // Q8_0 has no minimum: the kernel never reads this buffer then.
            wm: client.create_from_slice(f32::as_bytes(if w.mins.is_empty() { &w.scales } else { &w.mins })),
            x: client.create_from_slice(f32::as_bytes(x)),
            xq: client.empty(n * k),
            xd: client.empty(blocks * 4),
            xs: client.empty(blocks * 4),
            y: client.empty(m * n * 4),
        })
    }

    /// The activation quantizer alone.
    pub fn quantize(&self, client: &Client, target: Target) {
        let units = QUANTIZE_UNITS;
        let blocks = (self.n * self.k / BLOCK) as u32;
        // SAFETY: the buffers hold n·k values, n·k bytes and n·k/32 scales and sums.
        unsafe {
            quantize_q8_1_mmq::launch_with(
                client,
                CubeCount::Static(blocks.div_ceil(units), 1, 1),
                CubeDim::new_1d(units),
                BufferArg::from_raw_parts(self.x.clone(), self.n * self.k / 4),
                BufferArg::from_raw_parts(self.xq.clone(), self.n * self.k / 16),
                BufferArg::from_raw_parts(self.xd.clone(), self.n * self.k / BLOCK),
                BufferArg::from_raw_parts(self.xs.clone(), self.n * self.k / BLOCK),
                self.k as u32,
                self.n as u32,
                target,
            );
        }
    }

    /// The product alone, on the last quantized activations.
    pub fn product(&self, client: &Client, target: Target) {
        let (m, k, n) = (self.m, self.k, self.n);
        let count = CubeCount::Static((n as u32) / CONFIG.block_n(), (m as u32) / CONFIG.block_m(), 1);
        let dim = CubeDim::new_1d(CONFIG.units());
        let (wq, wd, wm) = (self.wq.clone(), self.wd.clone(), self.wm.clone());
        let (xq, xd, xs, y) = (self.xq.clone(), self.xd.clone(), self.xs.clone(), self.y.clone());
        let words = |q: usize| q / 16;
        let blocks_w = m * k / BLOCK;
        let blocks_x = n * k / BLOCK;
        // SAFETY: the buffers hold the shapes `new` checked (scales as 16-byte words).
        unsafe {
            let args = (
                BufferArg::from_raw_parts(wq, words(m * k / BLOCK * self.quant.quant_bytes())),
                BufferArg::from_raw_parts(wd, blocks_w / 4),
                BufferArg::from_raw_parts(wm, blocks_w / 4),
                BufferArg::from_raw_parts(xq, words(n * k)),
                BufferArg::from_raw_parts(xd, blocks_x / 4),
                BufferArg::from_raw_parts(xs, blocks_x / 4),
                BufferArg::from_raw_parts(y, m * n),
            );
            match self.quant {
                Quant::Q8_0 => mmq_q8_0::launch_with(
                    client, count, dim, args.0, args.1, args.2, args.3, args.4, args.5, args.6, m as u32, k as u32,
                    n as u32, target,
                ),
                Quant::Q4_1 => mmq_q4_1::launch_with(
                    client, count, dim, args.0, args.1, args.2, args.3, args.4, args.5, args.6, m as u32, k as u32,
                    n as u32, target,
                ),
            }
        }
    }

    /// Quantizes the activations, then multiplies.
    pub fn launch(&self, client: &Client, target: Target) {
        self.quantize(client, target);
        self.product(client, target);
    }

    /// `y`, token-major (`y[j·m + i]`).
    pub fn output(&self, client: &Client) -> Result<Vec<f32>, ReadError> {
        Ok(f32::from_bytes(&island_runtime::readback::read(client, self.y.clone())?).to_vec())
    }
}
