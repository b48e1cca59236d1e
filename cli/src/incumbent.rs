//! `islands incumbent`: a cell of "verify, then delete" at the kernel level, on the present
//! device: the single-source twin (the island kernel), the same kernel forced to `default`, and
//! hand-written incumbents in the backend's own language, on the same client and buffers. Each
//! is compared bit for bit with the normative result (the plain-Rust reference of `default`,
//! itself checked against the CPU runtime's `default` on the first rows) and timed kernel-only,
//! side by side in alternating rounds. The cell is **flipped** when the twin is bit-exact and at
//! least 0.97× as fast as the fastest incumbent, **declined** when it is slower, **failed** when it
//! is not bit-exact. An incumbent that is not bit-exact is reported with its count of differing
//! values and its largest distance in ulps: that divergence is what the twin removes.

use crate::args;
use crate::error::{CliError, Outcome};
use cubecl::prelude::*;
use island_examples::incumbents;
use island_examples::rmsnorm;
use island_examples::testing::floats;
use island_runtime::inputs::Rng;
use island_runtime::runtimes::RuntimeName;
use island_runtime::{Target, ValueKind};
use std::time::Duration;

/// The cells this command knows.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Cell {
    /// RMSNorm over f32 rows.
    Rmsnorm,
}

#[derive(clap::Args)]
pub struct Args {
    /// The cell to run.
    #[arg(value_enum)]
    cell: Cell,
    /// The device runtime.
    #[arg(long, value_parser = args::runtime, default_value = "cuda")]
    runtime: RuntimeName,
    #[arg(long, default_value_t = 4096)]
    rows: usize,
    #[arg(long, default_value_t = 4096)]
    cols: usize,
    /// Rows the CPU runtime's `default` runs (it is slow).
    #[arg(long, default_value_t = 8)]
    cpu_rows: usize,
    /// Alternating timing rounds.
    #[arg(long, default_value_t = 11)]
    rounds: usize,
    /// Launches per timing sample.
    #[arg(long, default_value_t = 200)]
    iters: usize,
}

pub fn run(args: Args) -> Result<Outcome, CliError> {
    let device = args.runtime.client()?;
    let cpu = RuntimeName::Cpu.client()?;
    match args.cell {
        Cell::Rmsnorm => rms(&device, &cpu, &args),
    }
}

/// How far `got` is from `want`, bit for bit: the count of differing values and the largest
/// distance in ulps.
fn distance(got: &[f32], want: &[f32]) -> (usize, u64) {
    let pairs = got.iter().zip(want).map(|(g, w)| (g.to_bits() as u64, w.to_bits() as u64)).filter(|(g, w)| g != w);
    pairs.fold((0, 0), |(n, max), (g, w)| (n + 1, max.max(ValueKind::F32.ulp_distance(g, w))))
}

fn median(mut s: Vec<Duration>) -> (Duration, Duration, Duration) {
    s.sort();
    (s[0], s[s.len() / 2], s[s.len() - 1])
}

fn rms(device: &Client, cpu: &Client, args: &Args) -> Result<Outcome, CliError> {
    let (rows, cols, eps) = (args.rows, args.cols, 1e-6f32);
    let mut rng = Rng::new(0x5_0_0_5);
    let x = floats(rows * cols, &mut rng);
    let w = floats(cols, &mut rng);
    rmsnorm::check(rows, cols, &x, &w).map_err(|e| e.to_string())?;
    let reference = rmsnorm::reference(rows, cols, &x, &w, eps);

    // The CPU runtime's `default` on the first rows: the reference is the oracle's bytes.
    let cpu_rows = args.cpu_rows.min(rows);
    let cpu_out = {
        let (xh, wh, yh) = (
            cpu.create_from_slice(f32::as_bytes(&x[..cpu_rows * cols])),
            cpu.create_from_slice(f32::as_bytes(&w)),
            cpu.empty(cpu_rows * cols * 4),
        );
        // SAFETY: the handles hold cpu_rows × cols and cols values.
        unsafe { rmsnorm::launch(cpu, &xh, &wh, &yh, (cpu_rows, cols), eps, Target::for_client(cpu)) }
            .map_err(|e| e.to_string())?;
        f32::from_bytes(&island_runtime::readback::read(cpu, yh).map_err(|e| e.to_string())?).to_vec()
    };
    let oracle = distance(&cpu_out, &reference[..cpu_rows * cols]);
    println!(
        "cell rmsnorm f32 {rows}×{cols} on {}: CPU runtime `default` vs plain-Rust reference (first {cpu_rows} rows): {}",
        device.name(),
        if oracle.0 == 0 { "bit-exact".to_string() } else { format!("{} values differ", oracle.0) }
    );
    if oracle.0 != 0 {
        return Ok(Outcome::Fail);
    }

    let xh = device.create_from_slice(f32::as_bytes(&x));
    let wh = device.create_from_slice(f32::as_bytes(&w));
    let shape = device.create_from_slice(u32::as_bytes(&[cols as u32, eps.to_bits(), rows as u32]));
    let outs: Vec<_> = (0..4).map(|_| device.empty(rows * cols * 4)).collect();
    let twin = Target::for_client(device);
    let forced = Target::default_arms(device);
    let launch_twin = |t: Target, y: &cubecl::server::Handle| {
        // SAFETY: the handles hold rows × cols and cols values; the shape passed the check.
        unsafe { rmsnorm::launch(device, &xh, &wh, y, (rows, cols), eps, t) }.map(|_| ())
    };
    let block = incumbents::RMSNORM_BLOCK;
    let warp = incumbents::RMSNORM_WARP;
    let launch_block =
        |y: &cubecl::server::Handle| block.launch(device, CubeCount::Static(rows as u32, 1, 1), &[&xh, &wh, y, &shape]);
    let launch_warp = |y: &cubecl::server::Handle| {
        warp.launch(device, CubeCount::Static((rows as u32).div_ceil(4), 1, 1), &[&xh, &wh, y, &shape])
    };
    launch_twin(twin, &outs[0]).map_err(|e| e.to_string())?;
    launch_twin(forced, &outs[1]).map_err(|e| e.to_string())?;
    launch_block(&outs[2]).map_err(|e| e.to_string())?;
    launch_warp(&outs[3]).map_err(|e| e.to_string())?;
    let read = |h: &cubecl::server::Handle| -> Result<Vec<f32>, CliError> {
        Ok(f32::from_bytes(&island_runtime::readback::read(device, h.clone()).map_err(|e| e.to_string())?).to_vec())
    };
    let names = [
        "twin (island kernel)",
        "twin forced to `default`",
        "incumbent CUDA C++, block per row",
        "incumbent CUDA C++, warp per row",
    ];
    let mut exact = Vec::new();
    for (name, h) in names.iter().zip(&outs) {
        let (differ, ulps) = distance(&read(h)?, &reference);
        exact.push(differ == 0);
        if differ == 0 {
            println!("  {name}: bit-exact on all {} values", rows * cols);
        } else {
            println!("  {name}: NOT bit-exact: {differ} of {} values differ, up to {ulps} ulp", rows * cols);
        }
    }

    let mut t0 = || drop(launch_twin(twin, &outs[0]));
    let mut t1 = || drop(launch_twin(forced, &outs[1]));
    let mut t2 = || drop(launch_block(&outs[2]));
    let mut t3 = || drop(launch_warp(&outs[3]));
    let samples = island_runtime::bench::side_by_side_samples(
        device,
        args.rounds,
        args.iters,
        &mut [(names[0], &mut t0), (names[1], &mut t1), (names[2], &mut t2), (names[3], &mut t3)],
    )?;
    let medians: Vec<(Duration, Duration, Duration)> = samples.into_iter().map(median).collect();
    let bytes = (2 * rows * cols + cols) as f64 * 4.0;
    for (name, (lo, mid, hi)) in names.iter().zip(&medians) {
        println!(
            "  {name}: {:.2} µs median ({:.2}–{:.2} over {} rounds of {}), {:.2} TB/s",
            mid.as_secs_f64() * 1e6,
            lo.as_secs_f64() * 1e6,
            hi.as_secs_f64() * 1e6,
            args.rounds,
            args.iters,
            bytes / mid.as_secs_f64() / 1e12
        );
    }
    let fastest = medians[2].1.min(medians[3].1);
    let ratio = fastest.as_secs_f64() / medians[0].1.as_secs_f64();
    let decision = if !exact[0] {
        "failed: the twin is not bit-exact"
    } else if ratio >= 0.97 {
        "flipped: the twin is bit-exact and at least 0.97× as fast as the fastest incumbent; delete the incumbent"
    } else {
        "declined: the twin is slower; the incumbent stays, the twin is the portable fallback"
    };
    println!("  cell rmsnorm f32 on {}: twin at {ratio:.3}× the fastest incumbent: {decision}", device.name());
    Ok(Outcome::from(exact[0]))
}
