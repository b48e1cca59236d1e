//! RMSNorm over rows: `y = x · (1 / sqrt(mean(x²) + eps)) · w`.
//!
//! One 32-lane plane per row, read 16 bytes at a time (and once, for rows of up to 4096 values). Lane `l` accumulates `fma(x, x, ss)` over
//! the 4-value vectors `l, l + 32, …` of its row, in order; the 32 partial sums meet in [`crate::rows::row_sum()`], whose
//! `default` (a shared-memory tree) defines the butterfly order a plane sum reproduces bit for
//! bit. `sqrt`, `/` and `fma` go through [`island_intrinsics::exact`], correctly rounded on
//! every backend (Vulkan's own are not promised to be), and the only `a·b + c` is that `fma`, so
//! nothing is left for a compiler to contract.

use crate::error::ShapeError;
use crate::rows::{LANES, pairwise_sum, row_sum, rows_per_cube};
use cubecl::prelude::*;
use island_intrinsics::exact;
use island_runtime::prelude::*;

/// `fma(a[j], a[j], ss)` for the four values of `a`, in order, each with one rounding
/// ([`exact::fma`]: a Vulkan driver's own `Fma` may round the product first; lavapipe's does).
#[cube]
fn sum_squares(a: Vector<f32, Const<4>>, ss: f32, #[comptime] target: Target) -> f32 {
    let mut s = ss;
    #[unroll]
    for j in 0..4usize {
        s = exact::fma(a.extract(j), a.extract(j), s, target);
    }
    s
}

#[islands]
#[cube(launch)]
pub fn rmsnorm(
    x: &[Vector<f32, Const<4>>],
    w: &[Vector<f32, Const<4>>],
    y: &mut [Vector<f32, Const<4>>],
    eps: f32,
    #[comptime] cols: usize,
    #[comptime] rows_per_cube: u32,
) {
    let lanes = LANES as usize;
    let lane = (UNIT_POS % LANES) as usize;
    let row = CUBE_POS * rows_per_cube as usize + (UNIT_POS / LANES) as usize;
    let vectors = comptime!(cols / 4);
    let rows = y.len() / vectors;
    let base = row * vectors;
    let mut ss = 0.0f32;
    // Rows of up to 32 vectors a lane stay in registers between the two passes (4096 f32 on a
    // 32-lane plane): one read of x, every load of the row in flight at once. Longer rows are
    // read twice, four loads in flight per step. Either way lane `l` adds the squares of its
    // vectors `l, l + 32, …` in that order, so both compute the same bits.
    let per_lane = comptime!(vectors.div_ceil(LANES as usize));
    if comptime!(per_lane <= 32) {
        let mut cache = Array::<Vector<f32, Const<4>>>::new(per_lane);
        if row < rows {
            #[unroll]
            for i in 0..per_lane {
                let v = lane + i * lanes;
                if v < vectors {
                    cache[i] = x[base + v];
                }
            }
            #[unroll]
            for i in 0..per_lane {
                if lane + i * lanes < vectors {
                    ss = sum_squares(cache[i], ss, target);
                }
            }
        }
        let inv = inverse_rms(row_sum(ss, target), cols, eps, target);
        if row < rows {
            #[unroll]
            for i in 0..per_lane {
                let v = lane + i * lanes;
                if v < vectors {
                    y[base + v] = cache[i] * inv * w[v];
                }
            }
        }
    } else {
        if row < rows {
            // Lane `l` takes the vectors `l, l + 32, …` of its row, four loads in flight per step.
            let mut v = lane;
            while v + 3 * lanes < vectors {
                let (a, b, c, d) = (x[base + v], x[base + v + lanes], x[base + v + 2 * lanes], x[base + v + 3 * lanes]);
                ss = sum_squares(a, ss, target);
                ss = sum_squares(b, ss, target);
                ss = sum_squares(c, ss, target);
                ss = sum_squares(d, ss, target);
                v += 4 * lanes;
            }
            while v < vectors {
                ss = sum_squares(x[base + v], ss, target);
                v += lanes;
            }
        }
        let inv = inverse_rms(row_sum(ss, target), cols, eps, target);
        if row < rows {
            let mut v = lane;
            while v < vectors {
                y[base + v] = x[base + v] * inv * w[v];
                v += lanes;
            }
        }
    }
}

/// `1 / sqrt(total / cols + eps)`, broadcast: division and square root through islands that
/// round correctly on every backend (Vulkan's own are not promised to).
#[cube]
fn inverse_rms(total: f32, #[comptime] cols: usize, eps: f32, #[comptime] target: Target) -> Vector<f32, Const<4>> {
    let mean = exact::div(total, cols as f32, target);
    Vector::<f32, Const<4>>::broadcast(exact::div(1.0f32, exact::sqrt(mean + eps, target), target))
}

/// Checks a shape before launch: a non-empty matrix whose rows are whole 16-byte vectors.
pub fn check(rows: usize, cols: usize, x: &[f32], w: &[f32]) -> Result<(), ShapeError> {
    if rows == 0 || cols == 0 || !cols.is_multiple_of(4) {
        return Err(ShapeError(format!(
            "RMSNorm needs a non-empty matrix whose row length is a multiple of 4, got {rows}×{cols}"
        )));
    }
    if x.len() != rows * cols || w.len() != cols {
        return Err(ShapeError(format!(
            "RMSNorm of {rows}×{cols}: x has {} values (want {}), w has {} (want {cols})",
            x.len(),
            rows * cols,
            w.len()
        )));
    }
    Ok(())
}

/// Launches RMSNorm over `rows` rows of `cols` (a multiple of 4) with the given tag.
///
/// # Safety
/// `x` and `y` must hold `rows * cols` f32 values and `w` `cols`.
pub unsafe fn launch(
    client: &Client,
    x: &cubecl::server::Handle,
    w: &cubecl::server::Handle,
    y: &cubecl::server::Handle,
    (rows, cols): (usize, usize),
    eps: f32,
    target: Target,
) -> Result<(), ShapeError> {
    let rows_per_cube = rows_per_cube(client);
    unsafe {
        rmsnorm::launch_with(
            client,
            CubeCount::Static((rows as u32).div_ceil(rows_per_cube), 1, 1),
            CubeDim::new_1d(LANES * rows_per_cube),
            BufferArg::from_raw_parts(x.clone(), rows * cols / 4),
            BufferArg::from_raw_parts(w.clone(), cols / 4),
            BufferArg::from_raw_parts(y.clone(), rows * cols / 4),
            eps,
            cols,
            rows_per_cube,
            target,
        );
    }
    Ok(())
}

/// `y = x`, 16 bytes per unit: the device copy RMSNorm's bandwidth is compared with.
#[cube(launch)]
pub fn copy(x: &[Vector<f32, Const<4>>], y: &mut [Vector<f32, Const<4>>]) {
    if ABSOLUTE_POS < y.len() {
        y[ABSOLUTE_POS] = x[ABSOLUTE_POS];
    }
}

/// Launches [`copy()`] over `n` f32 values (a multiple of 4).
///
/// # Safety
/// `x` and `y` must hold `n` f32 values.
pub unsafe fn launch_copy(client: &Client, x: &cubecl::server::Handle, y: &cubecl::server::Handle, n: usize) {
    let vectors = n / 4;
    unsafe {
        copy::launch(
            client,
            CubeCount::Static((vectors as u32).div_ceil(256), 1, 1),
            CubeDim::new_1d(256),
            BufferArg::from_raw_parts(x.clone(), vectors),
            BufferArg::from_raw_parts(y.clone(), vectors),
        );
    }
}

/// The plain-Rust reference, in the kernel's order.
pub fn reference(rows: usize, cols: usize, x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let mut y = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let lanes: Vec<f32> = (0..LANES as usize)
            .map(|l| {
                row.chunks_exact(4).skip(l).step_by(LANES as usize).flatten().fold(0.0f32, |ss, &v| v.mul_add(v, ss))
            })
            .collect();
        let total = pairwise_sum(&lanes);
        let inv = 1.0f32 / (total / cols as f32 + eps).sqrt();
        for c in 0..cols {
            y[r * cols + c] = row[c] * inv * w[c];
        }
    }
    y
}
