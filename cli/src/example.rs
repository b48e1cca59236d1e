//! `islands example`: an example kernel on a runtime, compared byte for byte with the CPU.
//!
//! Each example runs three ways on the chosen runtime (the tag of its device, that is the
//! native arms; and `default` forced) and once on the CPU runtime's `default` for the first
//! rows. All rows are also compared with the plain-Rust reference, which mirrors `default`
//! operation for operation and is itself checked against the CPU runtime by the test suite.

use crate::error::Outcome;
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_examples::error::{ProblemError, ShapeError};
use island_examples::testing::floats;
use island_examples::{gemm_f16, gemm_i8, gemm_i8_mma, gemm_i8_wgmma, q8_matvec, rmsnorm};
use island_runtime::Target;
use island_runtime::inputs::Rng;
use island_runtime::readback::ReadError;
use island_runtime::runtimes::{ClientError, RuntimeName};
use std::fmt;
use std::time::Instant;

/// An example kernel `islands example` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Example {
    #[value(name = "q8-matvec")]
    Q8Matvec,
    #[value(name = "rmsnorm")]
    Rmsnorm,
    #[value(name = "gemm-i8")]
    GemmI8,
    #[value(name = "gemm-i8-mma")]
    GemmI8Mma,
    #[value(name = "gemm-i8-wgmma")]
    GemmI8Wgmma,
    #[value(name = "gemm-f16")]
    GemmF16,
}

impl fmt::Display for Example {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Example::Q8Matvec => "q8-matvec",
            Example::Rmsnorm => "rmsnorm",
            Example::GemmI8 => "gemm-i8",
            Example::GemmI8Mma => "gemm-i8-mma",
            Example::GemmI8Wgmma => "gemm-i8-wgmma",
            Example::GemmF16 => "gemm-f16",
        })
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// q8-matvec, rmsnorm, gemm-i8, gemm-i8-mma, gemm-i8-wgmma or gemm-f16.
    #[arg(value_enum, hide_possible_values = true)]
    name: Example,
    #[arg(long, default_value = "cpu", value_parser = crate::args::runtime)]
    runtime: RuntimeName,
    /// Problem size: rows (m).
    #[arg(long, default_value_t = 256)]
    rows: usize,
    /// Problem size: columns (k), or k×n for the GEMM.
    #[arg(long, default_value_t = 4096)]
    cols: usize,
    /// Rows also run on the CPU runtime's `default` arm (the rest against the plain-Rust
    /// reference, which mirrors it and is itself checked against it).
    #[arg(long, default_value_t = 16)]
    cpu_rows: usize,
}

/// Why an example could not run to its comparisons.
#[derive(Debug, thiserror::Error)]
pub enum ExampleError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error(transparent)]
    Problem(#[from] ProblemError),
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The runtime cannot run the example at all (its language lacks a type the kernel reads).
    #[error("not run: {0}")]
    Unsupported(ShapeError),
}

pub fn run(args: Args) -> Result<Outcome, ExampleError> {
    let client = args.runtime.client()?;
    Ok(run_on(args.name, &client, args.rows, args.cols, args.cpu_rows)?.into())
}

/// Runs example `name` on `client`; `Ok(false)` when some comparison failed.
pub fn run_on(name: Example, client: &Client, rows: usize, cols: usize, cpu_rows: usize) -> Result<bool, ExampleError> {
    let cpu = RuntimeName::Cpu.client()?;
    println!(
        "example {name} on `{}` ({}), {rows}×{cols}",
        island_runtime::device::runtime_name(client),
        Target::for_client(client)
    );
    if Target::for_client(client).arms().is_none() {
        println!(
            "  note: `{}` takes `default` in every island, so \"native arms\" below are `default` too: \
             this run checks `default` against the CPU runtime and the reference, no accelerated arm",
            island_runtime::device::runtime_name(client)
        );
    }
    match name {
        Example::Q8Matvec => q8(client, &cpu, rows, cols, cpu_rows.min(rows)),
        Example::Rmsnorm => rms(client, &cpu, rows, cols, cpu_rows.min(rows)),
        Example::GemmI8 => gemm(client, &cpu, rows, cols, cpu_rows.min(rows)),
        Example::GemmI8Mma => gemm_bt(client, &cpu, rows, cols, &MMA_SYNC),
        Example::GemmI8Wgmma => gemm_bt(client, &cpu, rows, cols, &WGMMA),
        Example::GemmF16 => gemm_half(client, &cpu, rows, cols, cpu_rows.min(rows)),
    }
}

/// Prints one comparison; returns whether the bits agree.
fn same<T: Copy>(what: &str, got: &[T], want: &[T], bits: impl Fn(T) -> u64) -> bool {
    let n = want.len().min(got.len());
    let first = (0..n).find(|&i| bits(got[i]) != bits(want[i]));
    match first {
        None if got.len() >= want.len() => {
            println!("  {what}: byte-equal ({n} values)");
            true
        }
        None => {
            println!("  {what}: {} values, expected {}", got.len(), want.len());
            false
        }
        Some(i) => {
            let count = (0..n).filter(|&i| bits(got[i]) != bits(want[i])).count();
            println!("  {what}: DIFFERENT at index {i} ({count} of {n}): {:#x} vs {:#x}", bits(got[i]), bits(want[i]));
            false
        }
    }
}

fn f32_bits(v: f32) -> u64 {
    v.to_bits() as u64
}

fn q8(client: &Client, cpu: &Client, rows: usize, cols: usize, cpu_rows: usize) -> Result<bool, ExampleError> {
    let mut rng = Rng::new(0x9_8_0_0);
    let w = floats(rows * cols, &mut rng);
    let x = floats(cols, &mut rng);
    let gguf = q8_matvec::Q8Weights::quantize_gguf(rows, cols, &w)?;
    let weights = q8_matvec::Q8Weights::from_gguf(rows, cols, &gguf)?;
    let problem = q8_matvec::Problem::new(client, &weights, &x)?;

    let t = Instant::now();
    problem.launch(client, None)?;
    let native = problem.output(client)?;
    println!("  native arms: {:.1} ms (with compilation)", t.elapsed().as_secs_f64() * 1e3);
    let device_default = match problem.launch(client, Some(Target::default_for_client(client))) {
        Ok(()) => Some(problem.output(client)?),
        Err(e) => {
            println!("  device `default`: could not run: {e}");
            None
        }
    };
    let mut ok = device_default.is_some();

    let reference = q8_matvec::reference(&weights, &x);
    // The first rows alone, laid out for a matrix of that many rows.
    let sub =
        q8_matvec::Q8Weights::from_gguf(cpu_rows, cols, &gguf[..cpu_rows * cols / 32 * q8_matvec::GGUF_BLOCK_BYTES])?;
    let cpu_problem = q8_matvec::Problem::new(cpu, &sub, &x)?;
    cpu_problem.launch(cpu, None)?;
    let cpu_default = cpu_problem.output(cpu)?;

    ok &= same("native arms vs CPU runtime `default` (first rows)", &native[..cpu_rows], &cpu_default, f32_bits);
    ok &= same("native arms vs plain-Rust reference (all rows)", &native, &reference, f32_bits);
    if let Some(d) = device_default {
        ok &= same("device `default` vs native arms", &d, &native, f32_bits);
        ok &= same("device `default` vs plain-Rust reference (all rows)", &d, &reference, f32_bits);
    }
    ok &= same("CPU runtime `default` vs plain-Rust reference", &cpu_default, &reference[..cpu_rows], f32_bits);
    Ok(ok)
}

fn rms(client: &Client, cpu: &Client, rows: usize, cols: usize, cpu_rows: usize) -> Result<bool, ExampleError> {
    let eps = 1e-6f32;
    let mut rng = Rng::new(0x5_0_0_5);
    let x = floats(rows * cols, &mut rng);
    let w = floats(cols, &mut rng);
    rmsnorm::check(rows, cols, &x, &w)?;
    let run = |c: &Client, rows: usize, target: Target| -> Result<Vec<f32>, ExampleError> {
        let xh = c.create_from_slice(f32::as_bytes(&x[..rows * cols]));
        let wh = c.create_from_slice(f32::as_bytes(&w));
        let yh = c.empty(rows * cols * 4);
        // SAFETY: the handles hold rows × cols and cols values.
        unsafe { rmsnorm::launch(c, &xh, &wh, &yh, (rows, cols), eps, target) }?;
        Ok(f32::from_bytes(&island_runtime::readback::read(c, yh)?).to_vec())
    };
    let native = run(client, rows, Target::for_client(client))?;
    let device_default = run(client, rows, Target::default_for_client(client));
    let cpu_default = run(cpu, cpu_rows, Target::for_client(cpu))?;
    let reference = rmsnorm::reference(rows, cols, &x, &w, eps);
    let n = cpu_rows * cols;
    let mut ok = same("native arms vs CPU runtime `default` (first rows)", &native[..n], &cpu_default, f32_bits);
    ok &= same("native arms vs plain-Rust reference (all rows)", &native, &reference, f32_bits);
    match device_default {
        Ok(d) => {
            ok &= same("device `default` vs native arms", &d, &native, f32_bits);
            ok &= same("device `default` vs plain-Rust reference (all rows)", &d, &reference, f32_bits);
        }
        Err(e) => {
            println!("  device `default`: could not run: {e}");
            ok = false;
        }
    }
    Ok(ok)
}

fn gemm(client: &Client, cpu: &Client, m: usize, k: usize, cpu_rows: usize) -> Result<bool, ExampleError> {
    let n = m.min(256);
    let cpu_m = cpu_rows.next_multiple_of(16).min(m);
    gemm_i8::check(m, k, n)?;
    gemm_i8::check_runtime(client).map_err(ExampleError::Unsupported)?;
    let mut rng = Rng::new(0x6_e_0_0);
    let a: Vec<i8> = (0..m * k).map(|_| rng.next_u64() as i8).collect();
    let b: Vec<i8> = (0..k * n).map(|_| rng.next_u64() as i8).collect();
    let c0: Vec<i32> = (0..m * n).map(|_| rng.next_u64() as i32 >> 8).collect();
    let run = |c: &Client, m: usize, target: Target| -> Result<Vec<i32>, ExampleError> {
        let ah = c.create_from_slice(i8::as_bytes(&a[..m * k]));
        let bh = c.create_from_slice(i8::as_bytes(&b));
        let ch = c.create_from_slice(i32::as_bytes(&c0[..m * n]));
        // SAFETY: the handles hold m×k, k×n and m×n values.
        unsafe { gemm_i8::launch(c, (&ah, &bh, &ch), (m, k, n), target) };
        Ok(i32::from_bytes(&island_runtime::readback::read(c, ch)?).to_vec())
    };
    println!("  (n = {n})");
    let native = run(client, m, Target::for_client(client))?;
    let device_default = run(client, m, Target::default_for_client(client))?;
    let cpu_default = run(cpu, cpu_m, Target::for_client(cpu))?;
    let reference = gemm_i8::reference(m, k, n, &a, &b, &c0);
    let bits = |v: i32| v as u32 as u64;
    let mut ok = same("native arms vs CPU runtime `default` (first rows)", &native[..cpu_m * n], &cpu_default, bits);
    ok &= same("native arms vs plain-Rust reference (all rows)", &native, &reference, bits);
    ok &= same("device `default` vs native arms", &device_default, &native, bits);
    Ok(ok)
}

/// A GEMM launch: the handles of `a`, `bᵀ` and `c`, the shape `(m, k, n)`, the tag.
type Launch = unsafe fn(&Client, (&Handle, &Handle, &Handle), (usize, usize, usize), Target);

/// An int8 GEMM that takes `b` column-major: its shape check, its launch and its block.
struct BtGemm {
    check: fn(usize, usize, usize) -> Result<(), island_examples::error::ShapeError>,
    /// # Safety
    /// As the kernel's `launch`.
    launch: Launch,
    /// Rows and columns of one cube's block, and that block of an output `n` columns wide.
    block: (usize, usize),
    top_left: fn(&[i32], usize) -> Vec<i32>,
}

const MMA_SYNC: BtGemm = BtGemm {
    check: gemm_i8_mma::check,
    launch: gemm_i8_mma::launch,
    block: (gemm_i8_mma::CONFIG.block_m() as usize, gemm_i8_mma::CONFIG.block_n() as usize),
    top_left: gemm_i8_mma::top_left,
};

const WGMMA: BtGemm = BtGemm {
    check: gemm_i8_wgmma::check,
    launch: gemm_i8_wgmma::launch,
    block: (gemm_i8_wgmma::CONFIG.block_m() as usize, gemm_i8_wgmma::CONFIG.block_n as usize),
    top_left: gemm_i8_wgmma::top_left,
};

/// A GEMM of [`BtGemm`], `m×k` by `k×m` (B column-major): native arms, the device's `default`
/// and the CPU runtime's `default` (on the top-left block) against the plain-Rust reference.
fn gemm_bt(client: &Client, cpu: &Client, m: usize, k: usize, kernel: &BtGemm) -> Result<bool, ExampleError> {
    let n = m;
    (kernel.check)(m, k, n)?;
    let mut rng = Rng::new(0x6_e_0_1);
    let a: Vec<i8> = (0..m * k).map(|_| rng.next_u64() as i8).collect();
    let bt: Vec<i8> = (0..n * k).map(|_| rng.next_u64() as i8).collect();
    let run = |c: &Client, m: usize, n: usize, target: Target| -> Result<Vec<i32>, ExampleError> {
        let ah = c.create_from_slice(i8::as_bytes(&a[..m * k]));
        let bh = c.create_from_slice(i8::as_bytes(&bt[..n * k]));
        let ch = c.create_from_slice(i32::as_bytes(&vec![0i32; m * n]));
        // SAFETY: the handles hold m×k, k×n and m×n values; the shape passed the check.
        unsafe { (kernel.launch)(c, (&ah, &bh, &ch), (m, k, n), target) };
        Ok(i32::from_bytes(&island_runtime::readback::read(c, ch)?).to_vec())
    };
    let (rows, cols) = kernel.block;
    let native = run(client, m, n, Target::for_client(client))?;
    let device_default = run(client, m, n, Target::default_for_client(client))?;
    let cpu_default = run(cpu, rows, cols, Target::for_client(cpu))?;
    let reference = gemm_i8_mma::reference(m, k, n, &a, &bt);
    let bits = |v: i32| v as u32 as u64;
    let mut ok = same(
        "native arms vs CPU runtime `default` (top-left block)",
        &(kernel.top_left)(&native, n),
        &cpu_default,
        bits,
    );
    ok &= same("native arms vs plain-Rust reference (whole output)", &native, &reference, bits);
    ok &= same("device `default` vs native arms", &device_default, &native, bits);
    Ok(ok)
}

fn gemm_half(client: &Client, cpu: &Client, m: usize, k: usize, cpu_rows: usize) -> Result<bool, ExampleError> {
    use half::f16;
    let n = m.min(256);
    let cpu_m = cpu_rows.next_multiple_of(16).min(m);
    gemm_f16::check(m, k, n)?;
    let mut rng = Rng::new(0x0006_ef16);
    let a: Vec<f16> = floats(m * k, &mut rng).into_iter().map(f16::from_f32).collect();
    let b: Vec<f16> = floats(k * n, &mut rng).into_iter().map(f16::from_f32).collect();
    let c0 = floats(m * n, &mut rng);
    let run = |c: &Client, m: usize, target: Target| -> Result<Vec<f32>, ExampleError> {
        let ah = c.create_from_slice(f16::as_bytes(&a[..m * k]));
        let bh = c.create_from_slice(f16::as_bytes(&b));
        let ch = c.create_from_slice(f32::as_bytes(&c0[..m * n]));
        // SAFETY: the handles hold m×k, k×n and m×n values.
        unsafe { gemm_f16::launch(c, (&ah, &bh, &ch), (m, k, n), target) };
        Ok(f32::from_bytes(&island_runtime::readback::read(c, ch)?).to_vec())
    };
    println!("  (n = {n})");
    let native = run(client, m, Target::for_client(client))?;
    let device_default = run(client, m, Target::default_for_client(client))?;
    let cpu_default = run(cpu, cpu_m, Target::for_client(cpu))?;
    let reference = gemm_f16::reference(m, k, n, &a, &b, &c0);
    let mut ok =
        same("native arms vs CPU runtime `default` (first rows)", &native[..cpu_m * n], &cpu_default, f32_bits);
    ok &= same("native arms vs plain-Rust reference (all rows)", &native, &reference, f32_bits);
    ok &= same("device `default` vs native arms", &device_default, &native, f32_bits);
    Ok(ok)
}
