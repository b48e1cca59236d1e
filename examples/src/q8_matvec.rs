//! Q8_0 matrix × vector, the way llama.cpp runs a quantized linear layer for one token.
//!
//! Weights are GGUF `block_q8_0`: 32 signed bytes and one f16 scale per block, row-major.
//! [`Q8Weights::from_gguf`] splits the blocks into a word array (4 bytes per `u32`, blocks in
//! row order) and a scale array, once at load time, so the kernel loads 16-byte vectors. The
//! activations are quantized per block of 32 as llama.cpp does for `mmvq`
//! (`d = amax / 127`, `q = round(x / d)`, half away from zero), which is part of the work.
//!
//! The dot of a weight word with an activation word is an island: `dp4a` where the backend has
//! it, portable byte arithmetic in `default`. The sum over a row's 32 lanes is a second island:
//! a plane sum where planes are 32 wide, a shared-memory tree in `default`, both in butterfly
//! order. Every float operation is an explicit `fma`, a product or a sum in a fixed order, so
//! no backend can contract or reorder it: the CPU's `default` result is the definition, and
//! each backend's output is byte-equal to it.

use cubecl::prelude::*;
use half::f16;
use crate::rows::{LANES, pairwise_sum, row_sum};
use island_intrinsics::{dp4a, portable};
use island_runtime::prelude::*;

/// Values per quantization block.
pub const BLOCK: usize = 32;
/// The dot product of one weight word with one activation word, accumulated.
#[islands]
#[cube]
pub fn dot_word(w: i32, x: i32, acc: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(w: i32, x: i32, acc: i32) -> i32;
        cuda | vulkan if dp4a => dp4a::dp4a(w, x, acc, target),
        default => portable::dot4_i8(w, x, acc),
    }
}

/// `round(v)`, half away from zero (C's `roundf`), exactly: `v - floor(|v|)` is exact, so no
/// `+ 0.5` rounding can creep in.
#[cube]
fn round_half_away(v: f32) -> i32 {
    let a = v.abs();
    let t = a.floor();
    let mut r = i32::cast_from(t);
    if a - t >= 0.5 {
        r += 1;
    }
    if v < 0.0 {
        r = -r;
    }
    r
}

/// Quantizes `x` into the cube's shared memory, one unit per block of 32: `xq` gets the block's
/// 32 bytes as two vectors of four packed words, `xd` its scale.
#[cube]
fn quantize_block_into(x: &[f32], xq: &mut [Vector<i32, Const<4>>], xd: &mut [f32], block: usize) {
    let base = block * BLOCK;
    let mut amax = 0.0f32;
    #[unroll]
    for i in 0..BLOCK {
        amax = max(amax, x[base + i].abs());
    }
    let d = amax / 127.0;
    xd[block] = d;
    #[unroll]
    for half in 0..2usize {
        let mut words = Vector::<i32, Const<4>>::empty();
        #[unroll]
        for w in 0..4usize {
            let mut packed = 0i32;
            #[unroll]
            for j in 0..4usize {
                let mut q = 0i32;
                if amax != 0.0 {
                    q = round_half_away(x[base + half * 16 + w * 4 + j] / d);
                }
                packed |= (q & 0xff) << (8 * j as i32);
            }
            words.insert(w, packed);
        }
        xq[block * 2 + half] = words;
    }
}

/// One block's contribution: `Σ_j dot(w_j, x_j)` over its 8 words, in word order.
#[cube]
fn block_dot(
    w0: Vector<i32, Const<4>>,
    w1: Vector<i32, Const<4>>,
    x0: Vector<i32, Const<4>>,
    x1: Vector<i32, Const<4>>,
    #[comptime] tag: Option<Target>,
) -> i32 {
    let mut sumi = 0i32;
    #[unroll]
    for j in 0..8usize {
        let (w, x) = if j < 4 { (w0.extract(j), x0.extract(j)) } else { (w1.extract(j - 4), x1.extract(j - 4)) };
        if comptime!(tag.is_some()) {
            sumi = dot_word(w, x, sumi, comptime!(tag.unwrap()));
        } else {
            sumi = cubecl::prelude::dp4a(w, x, sumi);
        }
    }
    sumi
}

/// The matvec, written once for both kernels: with `tag`, the dot products and the row sum are
/// islands; without, they are CubeCL's `dp4a` and `plane_sum` called directly.
///
/// A persistent grid: each cube first quantizes the activations into its shared memory (one
/// unit per block of 32, llama.cpp's `d = amax / 127`, `q = round(x / d)`), then its planes
/// walk the rows. Lane `l` of a row's plane takes blocks `l, l + 32, …` in order, two per
/// step (four 16-byte weight loads in flight), accumulating `fma(dw·dx, sumi, acc)`; the row
/// sum adds the 32 lane partials in butterfly order.
#[cube]
fn matvec_body(
    wq: &[Vector<i32, Const<4>>],
    wd: &[f16],
    x: &[f32],
    y: &mut [f32],
    #[comptime] blocks_per_row: usize,
    #[comptime] planes: u32,
    #[comptime] tag: Option<Target>,
) {
    let mut xq = Shared::<[Vector<i32, Const<4>>]>::new_slice(blocks_per_row * 2);
    let mut xd = Shared::<[f32]>::new_slice(blocks_per_row);
    let mut block = UNIT_POS as usize;
    while block < blocks_per_row {
        quantize_block_into(x, &mut xq, &mut xd, block);
        block += CUBE_DIM as usize;
    }
    sync_cube();

    let lane = (UNIT_POS % LANES) as usize;
    let plane = (UNIT_POS / LANES) as usize;
    let lanes = LANES as usize;
    let rows = y.len();
    let per_step = CUBE_COUNT * planes as usize;
    // Every unit takes the same number of steps: the row sum may synchronise the cube.
    for step in 0..rows.div_ceil(per_step) {
        let row = (step * CUBE_COUNT + CUBE_POS) * planes as usize + plane;
        let mut acc = 0.0f32;
        if row < rows {
            let first = row * blocks_per_row;
            let mut b = lane;
            while b + lanes < blocks_per_row {
                let (wa, wb) = (first + b, first + b + lanes);
                let (wa0, wa1, wb0, wb1) = (wq[wa * 2], wq[wa * 2 + 1], wq[wb * 2], wq[wb * 2 + 1]);
                let (sa, sb) = (f32::cast_from(wd[wa]) * xd[b], f32::cast_from(wd[wb]) * xd[b + lanes]);
                let da = block_dot(wa0, wa1, xq[b * 2], xq[b * 2 + 1], tag);
                let db = block_dot(wb0, wb1, xq[(b + lanes) * 2], xq[(b + lanes) * 2 + 1], tag);
                acc = fma(sa, f32::cast_from(da), acc);
                acc = fma(sb, f32::cast_from(db), acc);
                b += 2 * lanes;
            }
            if b < blocks_per_row {
                let wa = first + b;
                let sa = f32::cast_from(wd[wa]) * xd[b];
                let da = block_dot(wq[wa * 2], wq[wa * 2 + 1], xq[b * 2], xq[b * 2 + 1], tag);
                acc = fma(sa, f32::cast_from(da), acc);
            }
        }
        let total = if comptime!(tag.is_some()) { row_sum(acc, comptime!(tag.unwrap())) } else { plane_sum(acc) };
        if row < rows && lane == 0 {
            y[row] = total;
        }
    }
}

/// Q8_0 matvec with islands: `dp4a` and a plane sum where the device has them.
#[islands]
#[cube(launch, create_dummy_kernel)]
pub fn matvec_q8_0(
    wq: &[Vector<i32, Const<4>>],
    wd: &[f16],
    x: &[f32],
    y: &mut [f32],
    #[comptime] blocks_per_row: usize,
    #[comptime] planes: u32,
) {
    matvec_body(wq, wd, x, y, blocks_per_row, planes, comptime!(Some(target)));
}

/// The same kernel written for CUDA by hand, with no island and no tag: CubeCL's `dp4a` and
/// `plane_sum` called directly. It exists to show the islands cost nothing: its generated CUDA
/// source and its time match [`matvec_q8_0`]'s with native arms.
#[cube(launch, create_dummy_kernel)]
pub fn matvec_q8_0_direct(
    wq: &[Vector<i32, Const<4>>],
    wd: &[f16],
    x: &[f32],
    y: &mut [f32],
    #[comptime] blocks_per_row: usize,
    #[comptime] planes: u32,
) {
    matvec_body(wq, wd, x, y, blocks_per_row, planes, comptime!(None::<Target>));
}

/// Q8_0 weights in the kernel's layout.
#[derive(Clone, Debug)]
pub struct Q8Weights {
    pub rows: usize,
    pub cols: usize,
    /// 8 words per block, blocks in row order.
    pub words: Vec<i32>,
    /// One scale per block.
    pub scales: Vec<f16>,
}

/// Bytes of one GGUF `block_q8_0`: an f16 scale, then 32 signed bytes.
pub const GGUF_BLOCK_BYTES: usize = 34;

impl Q8Weights {
    /// Splits GGUF `block_q8_0` bytes (rows × cols/32 blocks) into the kernel's layout.
    pub fn from_gguf(rows: usize, cols: usize, blocks: &[u8]) -> Result<Q8Weights, ShapeError> {
        check_shape(rows, cols)?;
        let n = rows * cols / BLOCK;
        if blocks.len() != n * GGUF_BLOCK_BYTES {
            return Err(ShapeError(format!(
                "{rows}×{cols} Q8_0 weights are {} bytes, got {}",
                n * GGUF_BLOCK_BYTES,
                blocks.len()
            )));
        }
        let mut words = Vec::with_capacity(n * 8);
        let mut scales = Vec::with_capacity(n);
        for block in blocks.chunks_exact(GGUF_BLOCK_BYTES) {
            scales.push(f16::from_le_bytes([block[0], block[1]]));
            for w in block[2..].chunks_exact(4) {
                words.push(i32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            }
        }
        Ok(Q8Weights { rows, cols, words, scales })
    }

    /// Quantizes f32 weights to GGUF `block_q8_0` bytes (as llama.cpp's `quantize_row_q8_0`).
    pub fn quantize_gguf(rows: usize, cols: usize, w: &[f32]) -> Result<Vec<u8>, ShapeError> {
        check_shape(rows, cols)?;
        let mut out = Vec::with_capacity(rows * cols / BLOCK * GGUF_BLOCK_BYTES);
        for block in w.chunks_exact(BLOCK) {
            let (d, q) = quantize_block(block);
            out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
            out.extend(q.iter().map(|&v| v as u8));
        }
        Ok(out)
    }
}

/// A shape the kernels cannot handle, reported before anything is launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError(pub String);

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShapeError {}

fn check_shape(rows: usize, cols: usize) -> Result<(), ShapeError> {
    if rows == 0 || cols == 0 || cols % BLOCK != 0 {
        return Err(ShapeError(format!(
            "Q8_0 needs a non-empty matrix whose row length is a multiple of {BLOCK}; got {rows}×{cols}"
        )));
    }
    Ok(())
}

/// llama.cpp's block quantization: `d = amax / 127`, `q = roundf(x / d)` (0 when amax is 0).
pub fn quantize_block(x: &[f32]) -> (f32, [i8; BLOCK]) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let mut q = [0i8; BLOCK];
    if amax != 0.0 {
        for (qi, &xi) in q.iter_mut().zip(x) {
            *qi = (xi / d).round() as i8;
        }
    }
    (d, q)
}

/// The plain-Rust reference: the same operations in the same order as the `default` arms.
pub fn reference(weights: &Q8Weights, x: &[f32]) -> Vec<f32> {
    let blocks_per_row = weights.cols / BLOCK;
    let mut xq = Vec::with_capacity(x.len() / 4);
    let mut xd = Vec::with_capacity(blocks_per_row);
    for block in x.chunks_exact(BLOCK) {
        let (d, q) = quantize_block(block);
        xd.push(d);
        for w in q.chunks_exact(4) {
            xq.push(i32::from_le_bytes([w[0] as u8, w[1] as u8, w[2] as u8, w[3] as u8]));
        }
    }
    (0..weights.rows)
        .map(|row| {
            let lanes: Vec<f32> = (0..LANES as usize)
                .map(|lane| {
                    let mut acc = 0.0f32;
                    for b in (lane..blocks_per_row).step_by(LANES as usize) {
                        let wb = row * blocks_per_row + b;
                        let sumi = (0..8).fold(0i32, |s, j| {
                            island_intrinsics::dp4a::reference(weights.words[wb * 8 + j], xq[b * 8 + j], s)
                        });
                        let scale = weights.scales[wb].to_f32() * xd[b];
                        acc = scale.mul_add(sumi as f32, acc);
                    }
                    acc
                })
                .collect();
            pairwise_sum(&lanes)
        })
        .collect()
}

/// How a matvec launch is shaped: `planes` rows at a time per cube, `cubes` cubes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub planes: u32,
    pub cubes: u32,
}

impl Grid {
    /// On a GPU: a persistent grid of `cubes_per_sm` cubes of `planes` planes per
    /// multiprocessor (defaults 1 and 16; `ISLANDS_MATVEC_PLANES` and
    /// `ISLANDS_MATVEC_CUBES_PER_SM` override them). On the CPU runtime, which gives every unit
    /// of a cube with barriers its own thread: one plane per cube, one cube per row.
    pub fn for_client(client: &Client, rows: usize) -> Grid {
        if client.name() == "cpu" {
            return Grid { planes: 1, cubes: rows as u32 };
        }
        let knob = |name: &str, default: u32| {
            std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|&v: &u32| v > 0).unwrap_or(default)
        };
        let planes = knob("ISLANDS_MATVEC_PLANES", 16);
        let sms = client.properties().hardware.num_streaming_multiprocessors.unwrap_or(64);
        let cubes = (sms * knob("ISLANDS_MATVEC_CUBES_PER_SM", 1)).min((rows as u32).div_ceil(planes));
        Grid { planes, cubes }
    }
}

/// The largest row length the kernel takes: the quantized activations live in one cube's
/// shared memory (1.125 bytes per value), which must fit in the 48 KiB every device grants.
pub const MAX_COLS: usize = 40 * 1024;

/// Device buffers of one matvec problem, created once (for repeated, kernel-only launches).
pub struct Problem {
    pub rows: usize,
    pub cols: usize,
    pub grid: Grid,
    wq: cubecl::server::Handle,
    wd: cubecl::server::Handle,
    x: cubecl::server::Handle,
    y: cubecl::server::Handle,
}

impl Problem {
    /// Uploads `weights` and `x`; checks the shapes first.
    pub fn new(client: &Client, weights: &Q8Weights, x: &[f32]) -> Result<Problem, ShapeError> {
        check_shape(weights.rows, weights.cols)?;
        if x.len() != weights.cols {
            return Err(ShapeError(format!(
                "the activation vector has {} values, the weights {} columns",
                x.len(),
                weights.cols
            )));
        }
        if weights.cols > MAX_COLS {
            return Err(ShapeError(format!(
                "rows of {} values do not fit: the quantized activations must fit in 48 KiB of shared memory (at most {MAX_COLS} values)",
                weights.cols
            )));
        }
        Ok(Problem {
            rows: weights.rows,
            cols: weights.cols,
            grid: Grid::for_client(client, weights.rows),
            wq: client.create_from_slice(i32::as_bytes(&weights.words)),
            wd: client.create_from_slice(f16::as_bytes(&weights.scales)),
            x: client.create_from_slice(f32::as_bytes(x)),
            y: client.empty(weights.rows * 4),
        })
    }

    /// Runs the matvec (activation quantization included), with `target` as the tag (`None`:
    /// the tag of the client's device). Refuses a runtime that cannot run the selected arms.
    pub fn launch(&self, client: &Client, target: Option<Target>) -> Result<(), ShapeError> {
        let target = target.unwrap_or_else(|| Target::for_client(client));
        crate::rows::check_runtime(client, &target)?;
        let blocks = self.cols / BLOCK;
        // SAFETY: every handle was allocated by `new` with the element count given here.
        unsafe {
            matvec_q8_0::launch_with(
                client,
                CubeCount::Static(self.grid.cubes, 1, 1),
                CubeDim::new_1d(LANES * self.grid.planes),
                BufferArg::from_raw_parts(self.wq.clone(), self.rows * blocks * 2),
                BufferArg::from_raw_parts(self.wd.clone(), self.rows * blocks),
                BufferArg::from_raw_parts(self.x.clone(), self.cols),
                BufferArg::from_raw_parts(self.y.clone(), self.rows),
                blocks,
                self.grid.planes,
                target,
            );
        }
        Ok(())
    }

    /// The same work with [`matvec_q8_0_direct`], the version written without islands.
    pub fn launch_direct(&self, client: &Client) {
        let blocks = self.cols / BLOCK;
        // SAFETY: every handle was allocated by `new` with the element count given here.
        unsafe {
            matvec_q8_0_direct::launch(
                client,
                CubeCount::Static(self.grid.cubes, 1, 1),
                CubeDim::new_1d(LANES * self.grid.planes),
                BufferArg::from_raw_parts(self.wq.clone(), self.rows * blocks * 2),
                BufferArg::from_raw_parts(self.wd.clone(), self.rows * blocks),
                BufferArg::from_raw_parts(self.x.clone(), self.cols),
                BufferArg::from_raw_parts(self.y.clone(), self.rows),
                blocks,
                self.grid.planes,
            );
        }
    }

    /// Reads `y` back.
    pub fn output(&self, client: &Client) -> Result<Vec<f32>, String> {
        let bytes = island_runtime::proof::read(client, self.y.clone())?;
        Ok(f32::from_bytes(&bytes).to_vec())
    }
}
