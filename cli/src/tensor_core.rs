//! `islands tensor-core`: the device's f16 and bf16 tensor-core MMA against the plain-Rust model
//! of its arithmetic ([`FusedDot`]), over the adversarial tile set ([`cases`]), class by class.
//!
//! For every tile the device's native `cmma` result is compared with the measured model (it must
//! agree on every output) and with a fixture model that has one detail wrong (rounding instead
//! of truncating at alignment: it must disagree). The CubeCL emulation the CPU proofs use runs
//! the first tiles on the CPU runtime, checked against the device and the plain model, and the
//! fixture's emulation against the device. `--sample DIR` writes the device's outputs of the
//! first tiles, which the test suite keeps to check the model without a device.

use crate::error::{FileError, NotADevice, Outcome};
use cubecl::prelude::*;
use island_intrinsics::tensor_core::{Format, FusedDot, cases, tiles};
use island_runtime::runtimes::RuntimeName;
use island_runtime::{Profile, Target};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value = "cuda", value_parser = crate::args::runtime)]
    runtime: RuntimeName,
    /// Tiles per format (rounded up to a multiple of 256).
    #[arg(long, default_value_t = 1 << 20)]
    tiles: usize,
    /// Index of the first tile: another start draws tiles no earlier run saw (the sample
    /// and the CPU emulation's comparison are of the tiles from 0, and skipped otherwise).
    #[arg(long, default_value_t = 0)]
    first: usize,
    /// Of those, tiles the CubeCL emulation also runs on the CPU runtime.
    #[arg(long, default_value_t = 2048)]
    emulated: usize,
    /// Write the device's outputs of the first `--sample-tiles` tiles to this folder.
    #[arg(long)]
    sample: Option<PathBuf>,
    #[arg(long, default_value_t = 320)]
    sample_tiles: usize,
}

/// Why the experiment could not run to its verdict.
#[derive(Debug, thiserror::Error)]
pub enum TensorCoreError {
    #[error(transparent)]
    Client(#[from] island_runtime::runtimes::ClientError),
    #[error(transparent)]
    NotADevice(#[from] NotADevice),
    #[error("`{0}` does not run the tile natively")]
    NotNative(String),
    #[error("{0} tiles do not fill whole rows of 256 cubes")]
    Tiles(usize),
    #[error(transparent)]
    Read(#[from] island_runtime::readback::ReadError),
    #[error(transparent)]
    File(#[from] FileError),
}

pub fn run(args: Args) -> Result<Outcome, TensorCoreError> {
    let Args { runtime, tiles, first, emulated, sample, sample_tiles } = args;
    let device = runtime.client()?;
    let cpu = RuntimeName::Cpu.client()?;
    Ok(run_on(&device, &cpu, &Options { tiles, first, emulated, sample, sample_tiles })?.into())
}

/// Settings of a run.
pub struct Options {
    /// Tiles per format on the device.
    pub tiles: usize,
    /// The index of the first tile: a run from another index draws tiles no earlier run saw
    /// (the model was fitted on the tiles from 0).
    pub first: usize,
    /// Of those, tiles the CubeCL emulation also runs on the CPU runtime (f16).
    pub emulated: usize,
    /// Write the device's outputs of the first `sample_tiles` tiles here.
    pub sample: Option<PathBuf>,
    pub sample_tiles: usize,
}

/// Tiles per device dispatch.
const BATCH: usize = 1 << 16;

/// The inputs of tiles `first..first + n` of `format` as bytes (a, b: u16; c: u32).
fn inputs(format: Format, first: usize, n: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let per = n.div_ceil(threads).max(1);
    let parts: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(per)
            .map(|start| {
                s.spawn(move || {
                    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
                    for t in first + start..first + (start + per).min(n) {
                        let tile = cases::tile(format, (t / cases::CLASSES.len()) as u64, t % cases::CLASSES.len());
                        a.extend(tile.a.iter().flat_map(|v| v.to_le_bytes()));
                        b.extend(tile.b.iter().flat_map(|v| v.to_le_bytes()));
                        c.extend(tile.c.iter().flat_map(|v| v.to_le_bytes()));
                    }
                    (a, b, c)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("generator thread")).collect()
    });
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for (a, b, c) in parts {
        out.0.extend(a);
        out.1.extend(b);
        out.2.extend(c);
    }
    out
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes"))).collect()
}

fn halves(bytes: &[u8]) -> Vec<u16> {
    bytes.chunks_exact(2).map(|w| u16::from_le_bytes(w.try_into().expect("2 bytes"))).collect()
}

/// Runs `n` tiles through the tile kernel on `client` with `target` (and `model` for f16).
#[allow(clippy::too_many_arguments)] // one launch's buffers and settings, each used once
fn run_tiles(
    client: &Client,
    format: Format,
    a: &[u8],
    b: &[u8],
    c: &[u8],
    n: usize,
    model: Option<FusedDot>,
    target: Target,
) -> Result<Vec<u32>, TensorCoreError> {
    let (ah, bh, ch) = (client.create_from_slice(a), client.create_from_slice(b), client.create_from_slice(c));
    let x = n.min(256) as u32;
    let y = n.div_ceil(256) as u32;
    if x as usize * y as usize != n {
        return Err(TensorCoreError::Tiles(n));
    }
    let elems = n * 256;
    // SAFETY: the handles hold `elems` values of the types the kernels declare.
    let (aa, ba, ca) = unsafe {
        (
            BufferArg::from_raw_parts(ah, elems),
            BufferArg::from_raw_parts(bh, elems),
            BufferArg::from_raw_parts(ch.clone(), elems),
        )
    };
    let count = CubeCount::Static(x, y, 1);
    let dim = CubeDim::new_1d(32);
    match format {
        Format::F16 => tiles::tiles_f16::launch(client, count, dim, aa, ba, ca, model, target),
        Format::BF16 => tiles::tiles_bf16::launch(client, count, dim, aa, ba, ca, target),
    }
    Ok(words(&island_runtime::readback::read(client, ch)?))
}

/// Per class: outputs compared, and mismatches against each model.
#[derive(Clone, Copy, Default)]
struct Tally {
    outputs: usize,
    model: usize,
    fixture: usize,
}

/// Compares device outputs of tiles `first..` with both plain models, class by class.
fn tally(
    format: Format,
    first: usize,
    a: &[u8],
    b: &[u8],
    c: &[u8],
    got: &[u32],
    tallies: &mut [Tally],
) -> Option<String> {
    let (a, b, c) = (halves(a), halves(b), words(c));
    let n = got.len() / 256;
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let per = n.div_ceil(threads).max(1);
    let results: Vec<(Vec<Tally>, Option<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(per)
            .map(|start| {
                let (a, b, c) = (&a, &b, &c);
                s.spawn(move || {
                    let mut local = vec![Tally::default(); cases::CLASSES.len()];
                    let mut first_miss = None;
                    for t in start..(start + per).min(n) {
                        let class = (first + t) % cases::CLASSES.len();
                        let range = t * 256..(t + 1) * 256;
                        let mut want = c[range.clone()].to_vec();
                        FusedDot::SM90.tile(format, &a[range.clone()], &b[range.clone()], 16, &mut want);
                        let mut wrong = c[range.clone()].to_vec();
                        FusedDot::SM90_ROUNDING_AT_ALIGNMENT.tile(
                            format,
                            &a[range.clone()],
                            &b[range.clone()],
                            16,
                            &mut wrong,
                        );
                        for e in 0..256 {
                            let g = got[t * 256 + e];
                            local[class].outputs += 1;
                            if g != want[e] {
                                local[class].model += 1;
                                first_miss.get_or_insert_with(|| {
                                    format!(
                                        "tile {} ({}), element {e}: device {g:#010x}, model {:#010x}",
                                        first + t,
                                        cases::CLASSES[class],
                                        want[e]
                                    )
                                });
                            }
                            local[class].fixture += (g != wrong[e]) as usize;
                        }
                    }
                    (local, first_miss)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("model thread")).collect()
    });
    let mut miss = None;
    for (local, m) in results {
        for (t, l) in tallies.iter_mut().zip(local) {
            t.outputs += l.outputs;
            t.model += l.model;
            t.fixture += l.fixture;
        }
        if miss.is_none() {
            miss = m;
        }
    }
    miss
}

/// Runs the experiment; `Ok(false)` when the model missed an output or the fixture was not caught.
pub fn run_on(device: &Client, cpu: &Client, options: &Options) -> Result<bool, TensorCoreError> {
    let Some(profile) = island_runtime::device::profile(device) else {
        return Err(NotADevice(island_runtime::device::runtime_name(device).to_string()).into());
    };
    let native = Target::forced(profile, device);
    if !native.is_native() {
        return Err(TensorCoreError::NotNative(island_runtime::device::runtime_name(device).to_string()));
    }
    println!(
        "tensor-core model on {profile}: {} tiles per format from tile {}, classes {}",
        options.tiles,
        options.first,
        cases::CLASSES.join(", ")
    );
    println!("model: {:?}; fixture: {:?}", FusedDot::SM90, FusedDot::SM90_ROUNDING_AT_ALIGNMENT);
    let tiles = options.tiles.div_ceil(256) * 256;
    let mut ok = true;
    for format in [Format::F16, Format::BF16] {
        let start = Instant::now();
        let mut tallies = vec![Tally::default(); cases::CLASSES.len()];
        let mut first_miss = None;
        let mut sample = Vec::new();
        // The first batch's inputs and device outputs, for the emulation's comparison.
        let mut head = None;
        let mut first = options.first;
        while first < options.first + tiles {
            let n = BATCH.min(options.first + tiles - first);
            let (a, b, c) = inputs(format, first, n);
            let got = run_tiles(device, format, &a, &b, &c, n, None, native)?;
            if first == options.first {
                sample = got[..options.sample_tiles.min(n) * 256].to_vec();
                let e = (options.emulated.div_ceil(256) * 256).min(n);
                head = Some(Head {
                    a: a[..e * 512].to_vec(),
                    b: b[..e * 512].to_vec(),
                    c: c[..e * 1024].to_vec(),
                    native: got[..e * 256].to_vec(),
                });
            }
            if let Some(m) = tally(format, first, &a, &b, &c, &got, &mut tallies) {
                first_miss.get_or_insert(m);
            }
            first += n;
        }
        println!("\n{format:?} × {format:?} + f32, {tiles} tiles ({:.1} s)", start.elapsed().as_secs_f64());
        println!("  {:<13} {:>10} {:>16} {:>18}", "class", "outputs", "model differs", "fixture differs");
        for (class, t) in cases::CLASSES.iter().zip(&tallies) {
            println!("  {class:<13} {:>10} {:>16} {:>18}", t.outputs, t.model, t.fixture);
        }
        let total = tallies.iter().fold(Tally::default(), |s, t| Tally {
            outputs: s.outputs + t.outputs,
            model: s.model + t.model,
            fixture: s.fixture + t.fixture,
        });
        println!("  {:<13} {:>10} {:>16} {:>18}", "all", total.outputs, total.model, total.fixture);
        match &first_miss {
            None => println!("  the model reproduces every output bit for bit"),
            Some(m) => {
                println!("  MODEL DIFFERS: first at {m}");
                ok = false;
            }
        }
        if total.fixture == 0 {
            println!("  FIXTURE NOT CAUGHT: rounding at alignment agrees with the device everywhere");
            ok = false;
        } else {
            println!("  fixture caught: {} outputs differ", total.fixture);
        }
        if let Some(dir) = options.sample.as_ref().filter(|_| options.first == 0) {
            std::fs::create_dir_all(dir).map_err(|source| FileError { path: dir.clone(), source })?;
            let path = dir.join(format!("hmma-{}-sm{}.bin", format!("{format:?}").to_lowercase(), profile.sm));
            let bytes: Vec<u8> = sample.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(&path, bytes).map_err(|source| FileError { path: path.clone(), source })?;
            println!("  device outputs of the first {} tiles written to {}", sample.len() / 256, path.display());
        }
        if let Some(head) = head.filter(|h| format == Format::F16 && !h.native.is_empty() && options.first == 0) {
            ok &= emulation(cpu, profile, &head)?;
        }
    }
    Ok(ok)
}

/// The first tiles of a run: their inputs (bytes) and the device's outputs.
struct Head {
    a: Vec<u8>,
    b: Vec<u8>,
    c: Vec<u8>,
    native: Vec<u32>,
}

/// The CubeCL emulation on the CPU runtime against the device, the model, and the fixture.
fn emulation(cpu: &Client, profile: Profile, head: &Head) -> Result<bool, TensorCoreError> {
    let start = Instant::now();
    let Head { a, b, c, native } = head;
    let n = native.len() / 256;
    let emulated_target = Target::forced(profile, cpu);
    let model = island_intrinsics::mma::f16_model(&profile);
    let Some(model) = model else {
        println!("  emulation: {profile} has no measured model: nothing to compare");
        return Ok(true);
    };
    let emulated = run_tiles(cpu, Format::F16, a, b, c, n, Some(model), emulated_target)?;
    let fixture = run_tiles(cpu, Format::F16, a, b, c, n, Some(FusedDot::SM90_ROUNDING_AT_ALIGNMENT), emulated_target)?;
    let (ah, bh, ch) = (halves(a), halves(b), words(c));
    let mut plain = ch.clone();
    for t in 0..n {
        let r = t * 256..(t + 1) * 256;
        model.tile(Format::F16, &ah[r.clone()], &bh[r.clone()], 16, &mut plain[r]);
    }
    let differ = |x: &[u32], y: &[u32]| x.iter().zip(y).filter(|(p, q)| p != q).count();
    let vs_device = differ(&emulated, native);
    let vs_plain = differ(&emulated, &plain);
    let fixture_vs_device = differ(&fixture, native);
    println!(
        "  CubeCL emulation on `{}`, {n} tiles ({} outputs, {:.1} s): vs device {vs_device} differ, vs plain model {vs_plain} differ; \
         fixture emulation vs device {fixture_vs_device} differ",
        cpu.name(),
        n * 256,
        start.elapsed().as_secs_f64()
    );
    Ok(vs_device == 0 && vs_plain == 0 && fixture_vs_device > 0)
}
