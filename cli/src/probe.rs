//! `islands probe`: which float semantics a device really has, measured against the CPU.
//!
//! Each probe runs one operation on the device and on the CPU runtime (or on the host, for the
//! plane reductions the CPU runtime cannot run) over the same seeded inputs and counts the values
//! whose bits differ:
//! - `div`, `sqrt`, `1/sqrt`: correctly rounded, or within the API's ULP allowance (Vulkan allows
//!   2.5 ULP for division and inherits `sqrt` from `inversesqrt`);
//! - `a*b + c` written as two operations, and `a / 4096 + c` (a division by a power of two is a
//!   multiplication, which a compiler may then fuse): whether the device contracts them into FMA;
//! - `a + b` and `a * b` where the results are subnormal or near it: whether the device keeps
//!   subnormal results or flushes them to zero (Vulkan lets a driver flush unless the shader
//!   declares `DenormPreserve`);
//! - `plane_sum`: which addition order the device's plane reduction has (xor butterfly 1, 2, 4, …;
//!   the reverse butterfly; a left-to-right fold), plane by plane.
//!
//! A divergence between a device and the CPU shows up here reduced to one operation, with an
//! example, rather than as a few differing bits at the end of a kernel.

use crate::error::Outcome;
use cubecl::prelude::*;
use island_runtime::inputs::Rng;
use island_runtime::runtimes::RuntimeName;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_parser = crate::args::runtime)]
    runtime: RuntimeName,
    /// Values per probe.
    #[arg(long, default_value_t = 1 << 20)]
    samples: usize,
    /// Seed of the inputs (decimal or 0x-hex).
    #[arg(long, default_value = "0x9e0be", value_parser = crate::args::seed)]
    seed: u64,
}

/// Why a probe could not run to its comparison.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Client(#[from] island_runtime::runtimes::ClientError),
    #[error(transparent)]
    Read(#[from] island_runtime::readback::ReadError),
}

pub fn run(args: Args) -> Result<Outcome, ProbeError> {
    let device = args.runtime.client()?;
    Ok(run_on(&device, args.samples, args.seed)?.into())
}

/// A scalar operation under probe.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Op {
    Div,
    Sqrt,
    InvSqrt,
    MulAdd,
    DivPow2Add,
    /// `a + b` of two values near the subnormal range.
    AddTiny,
    /// `a * b` of a value near the subnormal range and a realistic one.
    MulTiny,
}

impl Op {
    const ALL: [Op; 7] = [Op::Div, Op::Sqrt, Op::InvSqrt, Op::MulAdd, Op::DivPow2Add, Op::AddTiny, Op::MulTiny];

    fn name(self) -> &'static str {
        match self {
            Op::Div => "a / b",
            Op::Sqrt => "sqrt(|a|)",
            Op::InvSqrt => "1 / sqrt(|a|)",
            Op::MulAdd => "a * b + c (two operations)",
            Op::DivPow2Add => "a / 4096 + c",
            Op::AddTiny => "a + b, both tiny",
            Op::MulTiny => "a * b, a tiny",
        }
    }

    /// How many operands are tiny (subnormal, or normal within 8 binades of the subnormals).
    fn tiny_operands(self) -> usize {
        match self {
            Op::AddTiny => 2,
            Op::MulTiny => 1,
            _ => 0,
        }
    }

    /// The operation in IEEE 754 binary32 with round-to-nearest, each step rounded (Rust neither
    /// contracts nor approximates).
    fn host(self, a: f32, b: f32, c: f32) -> f32 {
        match self {
            Op::Div => a / b,
            Op::Sqrt => a.abs().sqrt(),
            Op::InvSqrt => 1.0 / a.abs().sqrt(),
            Op::MulAdd => a * b + c,
            Op::DivPow2Add => a / 4096.0 + c,
            Op::AddTiny => a + b,
            Op::MulTiny => a * b,
        }
    }
}

#[cube(launch)]
fn scalar_op(a: &[f32], b: &[f32], c: &[f32], out: &mut [f32], #[comptime] op: Op) {
    let i = ABSOLUTE_POS;
    if i < out.len() {
        let (x, y, z) = (a[i], b[i], c[i]);
        out[i] = match op {
            Op::Div => x / y,
            Op::Sqrt => x.abs().sqrt(),
            Op::InvSqrt => 1.0f32 / x.abs().sqrt(),
            Op::MulAdd => x * y + z,
            Op::DivPow2Add => x / 4096.0f32 + z,
            Op::AddTiny => x + y,
            Op::MulTiny => x * y,
        };
    }
}

#[cube(launch)]
fn plane_sum_probe(x: &[f32], out: &mut [f32]) {
    out[ABSOLUTE_POS] = plane_sum(x[ABSOLUTE_POS]);
}

/// Floats of random sign and full mantissa over a few binades: realistic activations, whose
/// rounding depends on the order and precision of every step.
fn realistic(n: usize, rng: &mut Rng) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
            let mantissa = 1.0 + (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
            sign * mantissa * 2f32.powi(rng.below(6) as i32 - 3)
        })
        .collect()
}

/// Floats of random sign and mantissa, half of them subnormal and half normal in the lowest 8
/// binades: sums and products of them land in the subnormal range.
fn tiny(n: usize, rng: &mut Rng) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let sign = (rng.below(2) as u32) << 31;
            let exponent = if rng.below(2) == 0 { 0 } else { 1 + rng.below(8) as u32 };
            f32::from_bits(sign | exponent << 23 | (rng.next_u64() as u32 & 0x7f_ffff))
        })
        .collect()
}

fn run_op(client: &Client, op: Op, a: &[f32], b: &[f32], c: &[f32]) -> Result<Vec<f32>, ProbeError> {
    let n = a.len();
    let handles = [a, b, c].map(|v| client.create_from_slice(f32::as_bytes(v)));
    let out = client.empty(n * 4);
    // SAFETY: every buffer holds `n` f32 values.
    unsafe {
        scalar_op::launch(
            client,
            CubeCount::Static((n as u32).div_ceil(256), 1, 1),
            CubeDim::new_1d(256),
            BufferArg::from_raw_parts(handles[0].clone(), n),
            BufferArg::from_raw_parts(handles[1].clone(), n),
            BufferArg::from_raw_parts(handles[2].clone(), n),
            BufferArg::from_raw_parts(out.clone(), n),
            op,
        )
    };
    Ok(f32::from_bytes(&island_runtime::readback::read(client, out)?).to_vec())
}

/// The sum of a plane's values in the xor-butterfly order (offsets 1, 2, 4, …: neighbours first).
fn butterfly(v: &[f32]) -> f32 {
    let mut v = v.to_vec();
    let mut offset = 1;
    while offset < v.len() {
        let prev = v.clone();
        for (i, x) in v.iter_mut().enumerate() {
            *x = prev[i] + prev[i ^ offset];
        }
        offset *= 2;
    }
    v[0]
}

/// The reverse butterfly (offsets width/2, …, 2, 1: halves first).
fn reverse_butterfly(v: &[f32]) -> f32 {
    let mut v = v.to_vec();
    let mut offset = v.len() / 2;
    while offset > 0 {
        let prev = v.clone();
        for (i, x) in v.iter_mut().enumerate() {
            *x = prev[i] + prev[i ^ offset];
        }
        offset /= 2;
    }
    v[0]
}

/// Runs every probe on `device`; prints one line per probe; `Ok(true)` when the device computed
/// every value with the CPU's bits.
pub fn run_on(device: &Client, samples: usize, seed: u64) -> Result<bool, ProbeError> {
    let cpu = RuntimeName::Cpu.client()?;
    let props = device.properties();
    println!(
        "probe on `{}`: {} ({}), plane {}..{}, {samples} samples per probe, seed {seed:#x}",
        island_runtime::device::runtime_name(device),
        props.identity.name,
        props.identity.fingerprint,
        props.hardware.plane_size_min,
        props.hardware.plane_size_max
    );
    let mut rng = Rng::new(seed);
    let a = realistic(samples, &mut rng);
    let b = realistic(samples, &mut rng);
    let c = realistic(samples, &mut rng);
    let (ta, tb) = (tiny(samples, &mut rng), tiny(samples, &mut rng));
    let mut all_equal = true;
    for op in Op::ALL {
        let (a, b) = match op.tiny_operands() {
            2 => (&ta, &tb),
            1 => (&ta, &b),
            _ => (&a, &b),
        };
        let got = run_op(device, op, a, b, &c)?;
        let cpu_got = run_op(&cpu, op, a, b, &c)?;
        let host: Vec<f32> = (0..samples).map(|i| op.host(a[i], b[i], c[i])).collect();
        let cpu_vs_host = (0..samples).filter(|&i| cpu_got[i].to_bits() != host[i].to_bits()).count();
        let differing: Vec<usize> = (0..samples).filter(|&i| got[i].to_bits() != host[i].to_bits()).collect();
        let fused = (0..samples)
            .filter(|_| matches!(op, Op::MulAdd | Op::DivPow2Add))
            .filter(|&i| {
                let fma = match op {
                    Op::MulAdd => a[i].mul_add(b[i], c[i]),
                    _ => a[i].mul_add(1.0 / 4096.0, c[i]),
                };
                got[i].to_bits() == fma.to_bits() && fma.to_bits() != host[i].to_bits()
            })
            .count();
        let max_ulp = differing
            .iter()
            .map(|&i| (got[i].to_bits() as i64 - host[i].to_bits() as i64).unsigned_abs())
            .max()
            .unwrap_or(0);
        all_equal &= differing.is_empty();
        print!(
            "  {:<28} device ≠ IEEE in {:>7} of {samples} (max {max_ulp} ulp); CPU runtime ≠ IEEE in {cpu_vs_host}",
            op.name(),
            differing.len()
        );
        if matches!(op, Op::MulAdd | Op::DivPow2Add) {
            print!("; device = fused in {fused}");
        }
        println!();
        if let Some(&i) = differing.first() {
            println!(
                "    e.g. a = {:#010x}, b = {:#010x}, c = {:#010x}: device {:#010x}, IEEE {:#010x}",
                a[i].to_bits(),
                b[i].to_bits(),
                c[i].to_bits(),
                got[i].to_bits(),
                host[i].to_bits()
            );
        }
    }

    if props.hardware.plane_size_max > 1 {
        let width = props.hardware.plane_size_max as usize;
        let cube = 256usize.max(width);
        let n = samples.next_multiple_of(cube);
        let x = realistic(n, &mut rng);
        let xh = device.create_from_slice(f32::as_bytes(&x));
        let out = device.empty(n * 4);
        // SAFETY: both buffers hold `n` f32 values; the cube is a whole number of planes.
        unsafe {
            plane_sum_probe::launch(
                device,
                CubeCount::Static((n / cube) as u32, 1, 1),
                CubeDim::new_1d(cube as u32),
                BufferArg::from_raw_parts(xh, n),
                BufferArg::from_raw_parts(out.clone(), n),
            )
        };
        let got = f32::from_bytes(&island_runtime::readback::read(device, out)?).to_vec();
        let planes = n / width;
        let (mut uniform, mut fly, mut rev, mut fold) = (0, 0, 0, 0);
        for p in 0..planes {
            let lanes = &x[p * width..(p + 1) * width];
            let outs = &got[p * width..(p + 1) * width];
            let g = outs[0].to_bits();
            uniform += outs.iter().all(|o| o.to_bits() == g) as usize;
            fly += (butterfly(lanes).to_bits() == g) as usize;
            rev += (reverse_butterfly(lanes).to_bits() == g) as usize;
            fold += (lanes.iter().fold(0.0f32, |s, v| s + v).to_bits() == g) as usize;
        }
        println!(
            "  plane_sum<f32> over {width} lanes, {planes} planes: every lane the same bits in {uniform}; \
             equal to the xor butterfly 1,2,4,… in {fly}, to the reverse butterfly in {rev}, to a left fold in {fold}"
        );
        all_equal &= fly == planes && uniform == planes;
    }
    Ok(all_equal)
}
