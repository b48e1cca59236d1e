//! Q8_0 matrix × vector, the way llama.cpp runs a quantized linear layer for one token.
//!
//! Weights are GGUF `block_q8_0`: 32 signed bytes and one f16 scale per block, row-major.
//! [`Q8Weights::from_gguf`] splits the blocks into a word array (4 bytes per `u32`, group-major:
//! see [`Q8Weights::words`]) and a scale array, once at load time, so the kernel loads 16-byte
//! vectors. The
//! activations are quantized per block of 32 as llama.cpp does for `mmvq`
//! (`d = amax / 127`, `q = round(x / d)`, half away from zero), which is part of the work.
//!
//! The dot of a weight word with an activation word is an island: `dp4a` where the backend has
//! it, portable byte arithmetic in `default`. Each weight load is an island too (a load that
//! skips L1 on CUDA, the plain load elsewhere). So is the quantizer's block maximum (the
//! block's 8 units exchange their maxima by plane shuffles, or each reads the whole block in
//! `default`). The sum over a row's 32 lanes is an island:
//! a plane sum where planes are 32 wide, a shared-memory tree in `default`, both in butterfly
//! order. Every float operation is an explicit `fma`, a product or a sum in a fixed order, so
//! no backend can contract or reorder it: the CPU's `default` result is the definition, and
//! each backend's output is byte-equal to it.

//!
//! Files: [`kernels`] (the islands and the two kernels), [`layout`] (the weight layout and the
//! GGUF import), [`reference`] (the plain-Rust reference); this file checks shapes, picks the
//! launch shape and holds a problem's device buffers.

mod kernels;
mod layout;
mod reference;

pub use crate::error::{ProblemError, ShapeError};
pub use kernels::*;
pub use layout::*;
pub use reference::*;

use crate::rows::LANES;
use cubecl::prelude::*;
use half::f16;
use island_runtime::Target;
use island_runtime::readback::ReadError;
use island_runtime::settings::{self, SettingError};
use layout::check_shape;

/// How a matvec launch is shaped, chosen per device: on a GPU 16 rows per cube and 2 groups per
/// pipeline stage (the fastest of the shapes measured in `docs/perf.md`;
/// `ISLANDS_MATVEC_PLANES` and `ISLANDS_MATVEC_UNROLL` override them, for tuning, and a value
/// they do not accept is an error); on the CPU runtime, which gives every unit of a cube with
/// barriers its own thread, one row per cube.
pub fn config_for(client: &Client, rows: usize, cols: usize) -> Result<Config, SettingError> {
    let blocks_per_row = cols / BLOCK;
    if client.name() == "cpu" {
        return Ok(Config { rows, blocks_per_row, planes: 1, unroll: 2 });
    }
    Ok(Config {
        rows,
        blocks_per_row,
        planes: settings::matvec_planes()?.unwrap_or(16),
        unroll: settings::matvec_unroll()?.unwrap_or(2) as usize,
    })
}

/// Units per cube of the activation quantizer (one unit per packed word): on a GPU 32, so that
/// its few hundred units spread over as many multiprocessors as possible (measured in
/// `docs/perf.md`); `ISLANDS_QUANT_UNITS` (a multiple of 32 up to 1024, so that a block's 8
/// units are 8 aligned lanes of one plane) overrides it, for tuning. On the CPU runtime 8, one
/// block per cube: an emulated plane shuffle synchronises the cube, and the CPU runtime gives
/// each unit of such a cube its own thread, so fewer units a cube spin less at each barrier.
fn quant_units(client: &Client) -> Result<u32, SettingError> {
    if client.name() == "cpu" {
        return Ok(8);
    }
    Ok(settings::quant_units()?.unwrap_or(32))
}

/// Device buffers of one matvec problem, created once (for repeated, kernel-only launches).
pub struct Problem {
    pub rows: usize,
    pub cols: usize,
    pub config: Config,
    /// Units per cube of the quantizer, read once (see [`quant_units`]).
    quant_units: u32,
    wq: cubecl::server::Handle,
    wd: cubecl::server::Handle,
    x: cubecl::server::Handle,
    xq: cubecl::server::Handle,
    xd: cubecl::server::Handle,
    y: cubecl::server::Handle,
}

impl Problem {
    /// Uploads `weights` and `x`; checks the shapes and the tuning settings first.
    pub fn new(client: &Client, weights: &Q8Weights, x: &[f32]) -> Result<Problem, ProblemError> {
        check_shape(weights.rows, weights.cols)?;
        if x.len() != weights.cols {
            return Err(ShapeError(format!(
                "the activation vector has {} values, the weights {} columns",
                x.len(),
                weights.cols
            ))
            .into());
        }
        let blocks = weights.cols / BLOCK;
        Ok(Problem {
            rows: weights.rows,
            cols: weights.cols,
            config: config_for(client, weights.rows, weights.cols)?,
            quant_units: quant_units(client)?,
            wq: client.create_from_slice(i32::as_bytes(&weights.words)),
            wd: client.create_from_slice(f16::as_bytes(&weights.scales)),
            x: client.create_from_slice(f32::as_bytes(x)),
            xq: client.empty(blocks * 32),
            xd: client.empty(blocks * 4),
            y: client.empty(weights.rows * 4),
        })
    }

    /// Only the activation quantizer, with `target` as the tag (for a bench's breakdown).
    pub fn quantize(&self, client: &Client, target: Target) {
        let (count, dim, x, xq, xd, words) = self.quantize_args();
        quantize_q8_1::launch_with(client, count, dim, x, xq, xd, words, target);
    }

    /// Only [`quantize_q8_1_direct()`], the quantizer written without islands.
    pub fn quantize_direct(&self, client: &Client) {
        let (count, dim, x, xq, xd, words) = self.quantize_args();
        quantize_q8_1_direct::launch(client, count, dim, x, xq, xd, words);
    }

    /// The quantizer's grid (one unit per packed word), buffers (activations, packed words,
    /// block scales) and word count.
    fn quantize_args(&self) -> (CubeCount, CubeDim, BufferArg, BufferArg, BufferArg, usize) {
        let words = self.cols / 4;
        let count = CubeCount::Static((words as u32).div_ceil(self.quant_units), 1, 1);
        // SAFETY: the handles were allocated by `new` with these element counts.
        unsafe {
            (
                count,
                CubeDim::new_1d(self.quant_units),
                BufferArg::from_raw_parts(self.x.clone(), words),
                BufferArg::from_raw_parts(self.xq.clone(), words),
                BufferArg::from_raw_parts(self.xd.clone(), words / 8),
                words,
            )
        }
    }

    fn grid(&self) -> (CubeCount, CubeDim) {
        let planes = self.config.planes;
        (CubeCount::Static((self.rows as u32).div_ceil(planes), 1, 1), CubeDim::new_1d(LANES * planes))
    }

    /// Quantizes the activations and runs the matvec, with `target` as the tag (`None`: the
    /// tag of the client's device).
    pub fn launch(&self, client: &Client, target: Option<Target>) -> Result<(), ShapeError> {
        let target = target.unwrap_or_else(|| Target::for_client(client));
        self.quantize(client, target);
        self.matvec(client, target);
        Ok(())
    }

    /// The matvec's buffers as kernel arguments: weights, scales, quantized activations,
    /// their scales, output.
    fn matvec_args(&self) -> (BufferArg, BufferArg, BufferArg, BufferArg, BufferArg) {
        let blocks = self.cols / BLOCK;
        // SAFETY: every handle was allocated by `new` with the element count given here.
        unsafe {
            (
                BufferArg::from_raw_parts(self.wq.clone(), self.rows * blocks * 2),
                BufferArg::from_raw_parts(self.wd.clone(), self.rows * blocks),
                BufferArg::from_raw_parts(self.xq.clone(), blocks * 2),
                BufferArg::from_raw_parts(self.xd.clone(), blocks),
                BufferArg::from_raw_parts(self.y.clone(), self.rows),
            )
        }
    }

    /// Only the matvec, on the activations the last [`quantize`](Self::quantize) left.
    pub fn matvec(&self, client: &Client, target: Target) {
        let (count, dim) = self.grid();
        let (wq, wd, xq, xd, y) = self.matvec_args();
        matvec_q8_0::launch_with(client, count, dim, wq, wd, xq, xd, y, self.config, target);
    }

    /// The same work with [`matvec_q8_0_direct()`], the version written without islands.
    pub fn launch_direct(&self, client: &Client) {
        self.quantize_direct(client);
        self.matvec_direct(client);
    }

    /// Only [`matvec_q8_0_direct()`], on the activations the last [`quantize`](Self::quantize) left.
    pub fn matvec_direct(&self, client: &Client) {
        let (count, dim) = self.grid();
        let (wq, wd, xq, xd, y) = self.matvec_args();
        matvec_q8_0_direct::launch(client, count, dim, wq, wd, xq, xd, y, self.config);
    }

    /// Reads the quantized activations back: the packed words and the block scales the last
    /// [`quantize`](Self::quantize) left (what [`quantize_activations`] computes).
    pub fn activations(&self, client: &Client) -> Result<(Vec<i32>, Vec<f32>), ReadError> {
        let xq = island_runtime::readback::read(client, self.xq.clone())?;
        let xd = island_runtime::readback::read(client, self.xd.clone())?;
        Ok((i32::from_bytes(&xq).to_vec(), f32::from_bytes(&xd).to_vec()))
    }

    /// Reads `y` back.
    pub fn output(&self, client: &Client) -> Result<Vec<f32>, ReadError> {
        let bytes = island_runtime::readback::read(client, self.y.clone())?;
        Ok(f32::from_bytes(&bytes).to_vec())
    }
}
