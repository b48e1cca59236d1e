//! `islands bench`: kernel-only timings of the examples, every variant side by side in one run,
//! every result checked byte for byte against the CPU `default` in the same run.
//!
//! Buffers are created once; each variant is dispatched `iters` times back to back with one
//! sync at the end (see `island_runtime::bench`), in several rounds that alternate the variants;
//! the median round is reported.

use crate::error::Outcome;
use crate::ggml::GgmlError;
use cubecl::prelude::*;
use cubecl::server::ServerError;
use island_examples::error::{ProblemError, ShapeError};
use island_examples::testing::{first_difference, floats};
use island_examples::{gemm_f16, gemm_i8, gemm_i8_mma, gemm_i8_persistent, gemm_i8_wgmma, mmq, q8_matvec, rmsnorm};
use island_runtime::Target;
use island_runtime::bench::{SyncError, side_by_side};
use island_runtime::inputs::Rng;
use island_runtime::readback::ReadError;
use island_runtime::runtimes::ClientError;
use island_runtime::runtimes::RuntimeName;
use island_runtime::tensor_map::TensorMapError;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value = "cuda", value_parser = crate::args::runtime)]
    runtime: RuntimeName,
    /// Dispatches per timed round.
    #[arg(long, default_value_t = 200)]
    iters: usize,
    /// Rounds (the median is reported).
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Only one bench: matvec, rmsnorm, gemm, gemm-f16 or mmq.
    #[arg(long)]
    only: Option<String>,
    /// Small shapes (a smoke test for runtimes without a big device).
    #[arg(long)]
    small: bool,
    /// Only this matvec shape, `MxK` (e.g. 4096x14336).
    #[arg(long, value_parser = crate::args::shape)]
    shape: Option<(usize, usize)>,
    /// A built `test-backend-ops` (llama.cpp's tests): ggml's quantized matmuls are measured in
    /// the same run and set beside the islands (`crate::ggml`).
    #[arg(long, value_name = "PATH")]
    ggml: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<Outcome, BenchError> {
    let Args { runtime, iters, rounds, only, small, shape, ggml } = args;
    if let Some(path) = &ggml {
        crate::ggml::check(path)?;
    }
    let client = runtime.client()?;
    Ok(run_on(&client, &Options { iters, rounds, only, small, shape, ggml })?.into())
}

pub struct Options {
    pub iters: usize,
    pub rounds: usize,
    pub only: Option<String>,
    /// Small shapes, to smoke-test the bench on the CPU or lavapipe.
    pub small: bool,
    /// Only this matvec shape (m, k).
    pub shape: Option<(usize, usize)>,
    /// A built `test-backend-ops`, to measure ggml in the same run.
    pub ggml: Option<PathBuf>,
}

/// Why a bench could not run to its comparison.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Ggml(#[from] GgmlError),
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error(transparent)]
    Problem(#[from] ProblemError),
    #[error(transparent)]
    TensorMap(#[from] TensorMapError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Sync(#[from] SyncError),
}

/// Runs the benches on `client`; `Ok(false)` when a result was not byte-equal.
pub fn run_on(client: &Client, options: &Options) -> Result<bool, BenchError> {
    let cpu = RuntimeName::Cpu.client()?;
    println!("bench on `{}`: {}", island_runtime::device::runtime_name(client), Target::for_client(client));
    println!(
        "kernel-only: buffers created once, {} dispatches per round, one sync per round, median of {} rounds",
        options.iters, options.rounds
    );
    let wants = |name: &str| options.only.as_deref().is_none_or(|o| o == name);
    let mut ok = true;
    let (matvecs, rms_size, gemm_size) = if options.small {
        (vec![(64, 1024)], 64, 128)
    } else {
        (vec![(4096, 14336), (8192, 8192), (14336, 4096)], 4096, 4096)
    };
    // The int8 GEMM: the square sizes, then a 7–8B model's prefill of 512 tokens (m = tokens):
    // the attention projections, the gate/up projection and the down projection.
    let gemms = if options.small {
        vec![(128, 128, 128)]
    } else {
        vec![(4096, 4096, 4096), (8192, 8192, 8192), (512, 4096, 4096), (512, 4096, 14336), (512, 14336, 4096)]
    };
    // The MMQ at ggml's batched case: 4096 weight rows of 14336, 512 tokens.
    let (mmq_m, mmq_k, mmq_n) = if options.small { (128, 384, 128) } else { (4096, 14336, 512) };
    let peers = if client.name() == "cuda" && (wants("rmsnorm") || wants("gemm") || wants("gemm-f16")) {
        match crate::peers::measure(gemm_size, rms_size, rms_size, options.rounds) {
            Ok(p) => Some(p),
            Err(e) => {
                println!("torch peers: none ({e})");
                None
            }
        }
    } else {
        None
    };
    let matvecs = match options.shape {
        Some(shape) => vec![shape],
        None => matvecs,
    };
    let ggml = match &options.ggml {
        Some(path) => {
            let cases = crate::ggml::measure(path)?;
            println!("\nggml (`test-backend-ops perf -o MUL_MAT -b CUDA0`, in this run): its time per run");
            for c in &cases {
                let what = if c.n == 1 { "matvec (mmvq)" } else { "batched (mmq)" };
                println!(
                    "    {} m={} n={} k={} {what:<14} {:>9.2} µs ({} runs)",
                    c.type_a, c.m, c.n, c.k, c.us, c.runs
                );
            }
            cases
        }
        None => Vec::new(),
    };
    if wants("matvec") {
        for (m, k) in matvecs {
            ok &= matvec(client, &cpu, m, k, options, &ggml)?;
        }
    }
    if wants("rmsnorm") {
        ok &= rms(client, &cpu, rms_size, rms_size, options, peers.as_ref())?;
    }
    if wants("gemm") {
        for &shape in &gemms {
            let torch = if shape == (gemm_size, gemm_size, gemm_size) { peers.as_ref() } else { None };
            ok &= gemm(client, &cpu, shape, options, torch)?;
        }
    }
    if wants("gemm-f16") {
        ok &= gemm_half(client, gemm_size, options, peers.as_ref())?;
    }
    if wants("mmq") {
        for quant in [mmq::Quant::Q8_0, mmq::Quant::Q4_1] {
            ok &= mmq_bench(client, &cpu, quant, (mmq_m, mmq_k, mmq_n), options, &ggml)?;
        }
    }
    Ok(ok)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn check(what: &str, got: &[u32], want: &[u32]) -> bool {
    match first_difference(got, want) {
        None => {
            println!("    {what}: byte-equal");
            true
        }
        Some(i) => {
            println!(
                "    {what}: DIFFERENT at {i}: {:#010x} vs {:#010x}",
                got.get(i).unwrap_or(&0),
                want.get(i).unwrap_or(&0)
            );
            false
        }
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn matvec(
    client: &Client,
    cpu: &Client,
    m: usize,
    k: usize,
    o: &Options,
    ggml: &[crate::ggml::Case],
) -> Result<bool, BenchError> {
    let mut rng = Rng::new((m * 31 + k) as u64);
    let w = floats(m * k, &mut rng);
    let x = floats(k, &mut rng);
    let gguf = q8_matvec::Q8Weights::quantize_gguf(m, k, &w)?;
    let weights = q8_matvec::Q8Weights::from_gguf(m, k, &gguf)?;
    let p = q8_matvec::Problem::new(client, &weights, &x)?;
    let native = Target::for_client(client);
    let default = Target::default_for_client(client);
    // Each variant once before timing: a runtime that refuses one says so here.
    p.launch(client, Some(native))?;
    p.launch(client, Some(default))?;
    let mut island = || drop(p.launch(client, Some(native)));
    let mut forced_default = || drop(p.launch(client, Some(default)));
    let mut direct = || p.launch_direct(client);
    let mut quantize_only = || p.quantize(client, native);
    let mut direct_quantize_only = || p.quantize_direct(client);
    let mut matvec_only = || p.matvec(client, native);
    let mut direct_matvec_only = || p.matvec_direct(client);

    // The same two launches recorded once as a graph and replayed (where the runtime can).
    let island_graph = record(client, || drop(p.launch(client, Some(native))));
    let direct_graph = record(client, || p.launch_direct(client));
    let mut island_replay = || replay(&island_graph);
    let mut direct_replay = || replay(&direct_graph);
    let mut variants: Vec<(&str, &mut dyn FnMut())> = vec![
        ("island, native arms", &mut island),
        ("island forced to `default`", &mut forced_default),
        ("direct (no island)", &mut direct),
        ("  of which: quantizer alone", &mut quantize_only),
        ("  direct: quantizer alone", &mut direct_quantize_only),
        ("  of which: matvec alone", &mut matvec_only),
        ("  direct: matvec alone", &mut direct_matvec_only),
    ];
    if island_graph.is_ok() && direct_graph.is_ok() {
        variants.push(("island, graph replay", &mut island_replay));
        variants.push(("direct, graph replay", &mut direct_replay));
    } else if let Err(e) = &island_graph {
        println!("    (no graph replay: {})", e.to_string().lines().next().unwrap_or_default());
    }
    let names: Vec<&str> = variants.iter().map(|(n, _)| *n).collect();
    let times = side_by_side(client, o.rounds, o.iters, &mut variants)?;
    let weight_bytes = m * k + m * k / 32 * 2;
    let read_bytes = weight_bytes + k * 4;
    println!(
        "\nQ8_0 matvec m={m} n=1 k={k}, f32 activations quantized in the timed work ({:.1} MB of weights)",
        weight_bytes as f64 / 1e6
    );
    for (name, t) in names.iter().zip(&times) {
        println!(
            "    {name:<28} {:>8.2} µs   {:>6.0} GB/s effective",
            us(*t),
            read_bytes as f64 / t.as_secs_f64() / 1e9
        );
    }
    println!("    island / direct time ratio: {:.4}", times[0].as_secs_f64() / times[2].as_secs_f64());
    println!("    island / direct time ratio, quantizer alone: {:.4}", times[3].as_secs_f64() / times[4].as_secs_f64());
    println!("    island / direct time ratio, matvec alone: {:.4}", times[5].as_secs_f64() / times[6].as_secs_f64());
    if times.len() > 8 {
        println!(
            "    island / direct time ratio, graph replay: {:.4}",
            times[7].as_secs_f64() / times[8].as_secs_f64()
        );
        if let Some(c) = ggml.iter().find(|c| c.is("q8_0", m, 1, k)) {
            println!(
                "    ggml mmvq q8_0 (measured in this run) {:.2} µs: island graph replay is {:.2}× faster",
                c.us,
                c.us / us(times[7])
            );
        } else if (m, k) == (4096, 14336) && client.name() == "cuda" {
            let quoted = crate::peers::GGML_MMVQ_4096X14336_US;
            println!(
                "    ggml mmvq (quoted: H200, 2026-11-30, docs/perf.md; --ggml PATH measures it) {quoted:.2} µs: island graph replay is {:.2}× faster",
                quoted / us(times[7])
            );
        }
    }

    p.launch(client, Some(native))?;
    let y_island = p.output(client)?;
    p.launch(client, Some(default))?;
    let y_default = p.output(client)?;
    p.launch_direct(client);
    let y_direct = p.output(client)?;
    let reference = q8_matvec::reference(&weights, &x);
    let cpu_rows = 8.min(m);
    // The first rows alone, laid out for a matrix of that many rows.
    let sub = q8_matvec::Q8Weights::from_gguf(cpu_rows, k, &gguf[..cpu_rows * k / 32 * q8_matvec::GGUF_BLOCK_BYTES])?;
    let cpu_p = q8_matvec::Problem::new(cpu, &sub, &x)?;
    cpu_p.launch(cpu, None)?;
    let y_cpu = cpu_p.output(cpu)?;
    let mut ok = check(
        &format!("island vs CPU runtime `default` (first {cpu_rows} rows)"),
        &bits(&y_island[..cpu_rows]),
        &bits(&y_cpu),
    );
    ok &= check("island vs plain-Rust mirror of `default` (all rows)", &bits(&y_island), &bits(&reference));
    ok &= check("device `default` vs island", &bits(&y_default), &bits(&y_island));
    ok &= check("direct vs island", &bits(&y_direct), &bits(&y_island));
    Ok(ok)
}

/// Records what `dispatch` launches as a graph.
fn record(client: &Client, mut dispatch: impl FnMut()) -> Result<cubecl::client::Graph, ServerError> {
    client.graph_prepare()?;
    dispatch();
    client.start_capture()?;
    dispatch();
    client.stop_capture()
}

fn replay(graph: &Result<cubecl::client::Graph, ServerError>) {
    if let Ok(g) = graph {
        // SAFETY: the graph's buffers live as long as the problem, and only this thread uses
        // them, on the client's one stream.
        let _ = unsafe { g.replay() };
    }
}

fn rms(
    client: &Client,
    cpu: &Client,
    rows: usize,
    cols: usize,
    o: &Options,
    peers: Option<&crate::peers::Peers>,
) -> Result<bool, BenchError> {
    let eps = 1e-6f32;
    let mut rng = Rng::new(0x4242);
    let x = floats(rows * cols, &mut rng);
    let w = floats(cols, &mut rng);
    let xh = client.create_from_slice(f32::as_bytes(&x));
    let wh = client.create_from_slice(f32::as_bytes(&w));
    let yh = client.empty(rows * cols * 4);
    let copy_out = client.empty(rows * cols * 4);
    let native = Target::for_client(client);
    // SAFETY (here and in both closures): the handles hold rows × cols and cols values.
    unsafe { rmsnorm::launch(client, &xh, &wh, &yh, (rows, cols), eps, native) }?;
    let mut island = || drop(unsafe { rmsnorm::launch(client, &xh, &wh, &yh, (rows, cols), eps, native) });
    let mut copy = || unsafe { rmsnorm::launch_copy(client, &xh, &copy_out, rows * cols) };
    let times = side_by_side(client, o.rounds, o.iters, &mut [("rmsnorm", &mut island), ("copy", &mut copy)])?;
    let bytes = (2 * rows * cols + cols) * 4;
    println!("\nRMSNorm {rows}×{cols} f32 (reads x and w, writes y: {:.1} MB)", bytes as f64 / 1e6);
    println!(
        "    island, native arms   {:>8.2} µs   {:>6.0} GB/s",
        us(times[0]),
        bytes as f64 / times[0].as_secs_f64() / 1e9
    );
    println!(
        "    device copy (y = x)   {:>8.2} µs   {:>6.0} GB/s",
        us(times[1]),
        (2 * rows * cols * 4) as f64 / times[1].as_secs_f64() / 1e9
    );
    println!(
        "    RMSNorm bandwidth / copy bandwidth: {:.3}",
        (bytes as f64 / times[0].as_secs_f64()) / ((2 * rows * cols * 4) as f64 / times[1].as_secs_f64())
    );
    if let Some(p) = peers {
        let gbs = |t_us: f64| bytes as f64 / t_us / 1e3;
        println!(
            "    torch {} F.rms_norm, eager   {:>8.2} µs   {:>6.0} GB/s",
            p.torch,
            p.rms_norm_eager,
            gbs(p.rms_norm_eager)
        );
        println!(
            "    torch {} F.rms_norm, graph   {:>8.2} µs   {:>6.0} GB/s",
            p.torch,
            p.rms_norm_graph,
            gbs(p.rms_norm_graph)
        );
        println!(
            "    torch {} copy (y = x)        {:>8.2} µs   {:>6.0} GB/s",
            p.torch,
            p.copy,
            (2 * rows * cols * 4) as f64 / p.copy / 1e3
        );
        let best = p.rms_norm_eager.min(p.rms_norm_graph);
        println!("    island speed / torch rms_norm (faster of eager, graph): {:.3}", best / us(times[0]));
    }
    let y = f32::from_bytes(&island_runtime::readback::read(client, yh.clone())?).to_vec();
    let reference = rmsnorm::reference(rows, cols, &x, &w, eps);
    let cpu_rows = 4;
    let cx = cpu.create_from_slice(f32::as_bytes(&x[..cpu_rows * cols]));
    let cw = cpu.create_from_slice(f32::as_bytes(&w));
    let cy = cpu.empty(cpu_rows * cols * 4);
    // SAFETY: as above, for the first rows.
    unsafe { rmsnorm::launch(cpu, &cx, &cw, &cy, (cpu_rows, cols), eps, Target::for_client(cpu)) }?;
    let y_cpu = f32::from_bytes(&island_runtime::readback::read(cpu, cy)?).to_vec();
    let mut ok = check("island vs CPU runtime `default` (first rows)", &bits(&y[..cpu_rows * cols]), &bits(&y_cpu));
    ok &= check("island vs plain-Rust mirror of `default` (all rows)", &bits(&y), &bits(&reference));
    Ok(ok)
}

fn gemm(
    client: &Client,
    cpu: &Client,
    (m, k, n): (usize, usize, usize),
    o: &Options,
    peers: Option<&crate::peers::Peers>,
) -> Result<bool, BenchError> {
    gemm_i8_mma::check(m, k, n)?;
    gemm_i8_wgmma::check(m, k, n)?;
    gemm_i8_persistent::check(m, k, n)?;
    let mut rng = Rng::new(0x6e33);
    let a: Vec<i8> = (0..m * k).map(|_| rng.next_u64() as i8).collect();
    let b: Vec<i8> = (0..k * n).map(|_| rng.next_u64() as i8).collect();
    // `b` column-major for the mma.sync kernel (n rows of k bytes), as cuBLAS's int8 kernels take it.
    let bt: Vec<i8> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
    let ah = client.create_from_slice(i8::as_bytes(&a));
    let bh = client.create_from_slice(i8::as_bytes(&b));
    let bth = client.create_from_slice(i8::as_bytes(&bt));
    let ch = client.create_from_slice(i32::as_bytes(&vec![0i32; m * n]));
    let dh = client.create_from_slice(i32::as_bytes(&vec![0i32; m * n]));
    let native = Target::for_client(client);
    // SAFETY: the handles hold m×k, k×n and m×n values; the shape passed the checks.
    let mut cmma = || unsafe { gemm_i8::launch(client, (&ah, &bh, &ch), (m, k, n), native) };
    let mut mma = || unsafe { gemm_i8_mma::launch(client, (&ah, &bth, &dh), (m, k, n), native) };
    let wg_out: Vec<_> = gemm_i8_wgmma::Blocks::ALL
        .iter()
        .map(|_| client.create_from_slice(i32::as_bytes(&vec![0i32; m * n])))
        .collect();
    // The TMA variants' tensor maps, encoded once, outside the timed dispatches.
    let maps = gemm_i8_wgmma::Blocks::ALL
        .iter()
        .map(|b| {
            let cfg = b.config();
            cfg.pipeline.reads_maps().then(|| gemm_i8_wgmma::Maps::new(client, (&ah, &bth), (m, k, n), cfg)).transpose()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut wg_runs: Vec<_> = gemm_i8_wgmma::Blocks::ALL
        .iter()
        .zip(&wg_out)
        .zip(&maps)
        // SAFETY: as above; the maps are those of these buffers.
        .map(|((&blocks, out), maps)| {
            let (ah, bth) = (&ah, &bth);
            move || {
                let launched = unsafe {
                    gemm_i8_wgmma::launch_blocks(client, (ah, bth, out), (m, k, n), blocks, maps.as_ref(), native)
                };
                launched.expect("maps encoded above")
            }
        })
        .collect();
    let persistent = gemm_i8_persistent::Tiles::ALL;
    let pt_out: Vec<_> =
        persistent.iter().map(|_| client.create_from_slice(i32::as_bytes(&vec![0i32; m * n]))).collect();
    let pt_maps = persistent
        .iter()
        .map(|&t| gemm_i8_persistent::maps(client, (&ah, &bth), (m, k, n), t))
        .collect::<Result<Vec<_>, _>>()?;
    let mut pt_runs: Vec<_> = persistent
        .iter()
        .zip(&pt_out)
        .zip(&pt_maps)
        // SAFETY: as above; the maps are those of these buffers.
        .map(|((&tiles, out), maps)| {
            let (ah, bth) = (&ah, &bth);
            move || {
                let launched = unsafe {
                    gemm_i8_persistent::launch(client, (ah, bth, out), (m, k, n), tiles, Some(maps), None, native)
                };
                launched.expect("maps encoded above")
            }
        })
        .collect();
    let iters = (o.iters / 20).max(3);
    let mut variants: Vec<(&str, &mut dyn FnMut())> = vec![("cmma", &mut cmma), ("mma.sync", &mut mma)];
    for run in wg_runs.iter_mut() {
        variants.push(("wgmma", run));
    }
    for run in pt_runs.iter_mut() {
        variants.push(("persistent", run));
    }
    let times = side_by_side(client, o.rounds, iters, &mut variants)?;
    let flops = 2.0 * (m * n * k) as f64;
    let tops = |t_us: f64| flops / t_us / 1e6;
    println!("\nint8 GEMM m={m} k={k} n={n} (i32 out)");
    println!(
        "    island, cmma 16×16×16 tiles, B row-major       {:>10.1} µs   {:>6.1} TOP/s",
        us(times[0]),
        tops(us(times[0]))
    );
    println!(
        "    island, mma.sync pipeline, B column-major      {:>10.1} µs   {:>6.1} TOP/s",
        us(times[1]),
        tops(us(times[1]))
    );
    for (i, blocks) in gemm_i8_wgmma::Blocks::ALL.iter().enumerate() {
        let t = us(times[2 + i]);
        println!("    island, wgmma {:<36} {:>10.1} µs   {:>6.1} TOP/s", blocks.label(), t, tops(t));
    }
    let first_pt = 2 + gemm_i8_wgmma::Blocks::ALL.len();
    for (i, tiles) in persistent.iter().enumerate() {
        let t = us(times[first_pt + i]);
        println!("    island, wgmma {:<36} {:>10.1} µs   {:>6.1} TOP/s", tiles.label(), t, tops(t));
    }
    let wgmma_best = (2..first_pt + persistent.len()).map(|i| us(times[i])).fold(f64::INFINITY, f64::min);
    if let Some(p) = peers {
        println!(
            "    torch {} _int_mm, B row-major           {:>10.1} µs   {:>6.1} TOP/s",
            p.torch,
            p.int_mm_b_row_major,
            tops(p.int_mm_b_row_major)
        );
        println!(
            "    torch {} _int_mm, B column-major        {:>10.1} µs   {:>6.1} TOP/s",
            p.torch,
            p.int_mm_b_col_major,
            tops(p.int_mm_b_col_major)
        );
        let best = p.int_mm_b_row_major.min(p.int_mm_b_col_major);
        println!("    island wgmma speed (fastest variant) / torch _int_mm (faster layout): {:.3}", best / wgmma_best);
        println!("    island mma.sync speed / torch _int_mm (faster layout): {:.3}", best / us(times[1]));
        println!("    island cmma speed / torch _int_mm (faster layout):     {:.3}", best / us(times[0]));
    }
    let lt = cublaslt_int8(client, (m, k, n), &a, &bt, o);
    if let Some(Ok(best)) = &lt {
        println!(
            "    cuBLASLt, fastest of {} heuristic algorithms        {:>10.1} µs   {:>6.1} TOP/s   ({})",
            best.algorithms,
            best.us,
            tops(best.us),
            best.config
        );
        println!("    island wgmma speed (fastest variant) / cuBLASLt's fastest: {:.3}", best.us / wgmma_best);
        println!("    island mma.sync speed / cuBLASLt's fastest: {:.3}", best.us / us(times[1]));
    } else if let Some(Err(e)) = &lt {
        println!("    cuBLASLt: none ({e})");
    }
    // Check one fresh product of each: against the plain-Rust reference on the whole output,
    // and against the CPU runtime's `default` on the top-left block.
    let want = gemm_i8_mma::reference(m, k, n, &a, &bt);
    let as_u32 = |v: &[i32]| v.iter().map(|x| *x as u32).collect::<Vec<_>>();
    let c0 = vec![0i32; m * n];
    let fresh = client.create_from_slice(i32::as_bytes(&c0));
    // SAFETY: as above.
    unsafe { gemm_i8::launch(client, (&ah, &bh, &fresh), (m, k, n), native) };
    let got_cmma = i32::from_bytes(&island_runtime::readback::read(client, fresh)?).to_vec();
    let fresh = client.create_from_slice(i32::as_bytes(&c0));
    // SAFETY: as above.
    unsafe { gemm_i8_mma::launch(client, (&ah, &bth, &fresh), (m, k, n), native) };
    let got = i32::from_bytes(&island_runtime::readback::read(client, fresh)?).to_vec();
    let mut got_wg = Vec::new();
    for &blocks in &gemm_i8_wgmma::Blocks::ALL {
        let fresh = client.create_from_slice(i32::as_bytes(&c0));
        // SAFETY: as above.
        unsafe { gemm_i8_wgmma::launch_blocks(client, (&ah, &bth, &fresh), (m, k, n), blocks, None, native) }?;
        got_wg.push(i32::from_bytes(&island_runtime::readback::read(client, fresh)?).to_vec());
    }
    let mut got_pt = Vec::new();
    for &tiles in &persistent {
        let fresh = client.create_from_slice(i32::as_bytes(&c0));
        // SAFETY: as above.
        unsafe { gemm_i8_persistent::launch(client, (&ah, &bth, &fresh), (m, k, n), tiles, None, None, native) }?;
        got_pt.push(i32::from_bytes(&island_runtime::readback::read(client, fresh)?).to_vec());
    }
    let mut ok = check("cmma island vs plain-Rust reference (whole output)", &as_u32(&got_cmma), &as_u32(&want));
    ok &= check("mma.sync island vs plain-Rust reference (whole output)", &as_u32(&got), &as_u32(&want));
    for (blocks, got) in gemm_i8_wgmma::Blocks::ALL.iter().zip(&got_wg) {
        let what = format!("wgmma island, {} vs plain-Rust reference (whole output)", blocks.label());
        ok &= check(&what, &as_u32(got), &as_u32(&want));
    }
    for (tiles, got) in persistent.iter().zip(&got_pt) {
        let what = format!("wgmma island, {} vs plain-Rust reference (whole output)", tiles.label());
        ok &= check(&what, &as_u32(got), &as_u32(&want));
    }
    if let Some(Ok(best)) = &lt {
        ok &= check("cuBLASLt vs plain-Rust reference (whole output)", &as_u32(&best.out), &as_u32(&want));
    }
    let block = gemm_i8_mma::CONFIG.block_m().min(gemm_i8_mma::CONFIG.block_n()) as usize;
    let ca = cpu.create_from_slice(i8::as_bytes(&a[..block * k]));
    let cb = cpu.create_from_slice(i8::as_bytes(&bt[..block * k]));
    let cc = cpu.create_from_slice(i32::as_bytes(&vec![0i32; block * block]));
    // SAFETY: the first block of rows of `a` and of `bᵀ`, a block×block output.
    unsafe { gemm_i8_mma::launch(cpu, (&ca, &cb, &cc), (block, k, block), Target::for_client(cpu)) };
    let cpu_block = i32::from_bytes(&island_runtime::readback::read(cpu, cc)?).to_vec();
    ok &= check(
        "mma.sync island vs CPU runtime `default` (top-left block)",
        &as_u32(&gemm_i8_mma::top_left(&got, n)),
        &as_u32(&cpu_block),
    );
    let (rows, cols) = (gemm_i8_wgmma::CONFIG.block_m() as usize, gemm_i8_wgmma::CONFIG.block_n as usize);
    let ca = cpu.create_from_slice(i8::as_bytes(&a[..rows * k]));
    let cb = cpu.create_from_slice(i8::as_bytes(&bt[..cols * k]));
    let cc = cpu.create_from_slice(i32::as_bytes(&vec![0i32; rows * cols]));
    // SAFETY: the first block of rows of `a` and of `bᵀ`, a rows×cols output.
    unsafe { gemm_i8_wgmma::launch(cpu, (&ca, &cb, &cc), (rows, k, cols), Target::for_client(cpu)) };
    let cpu_block = i32::from_bytes(&island_runtime::readback::read(cpu, cc)?).to_vec();
    ok &= check(
        "wgmma island 256×128 vs CPU runtime `default` (top-left block)",
        &as_u32(&gemm_i8_wgmma::top_left(&got_wg[0], n)),
        &as_u32(&cpu_block),
    );
    // The persistent GEMM's `default` on the CPU runtime for its first tile of 128×256, against
    // each variant's top-left 128×256.
    let (rows, cols) = (gemm_i8_persistent::BLOCK_M as usize, gemm_i8_persistent::CONFIG_N256.block_n as usize);
    let ca = cpu.create_from_slice(i8::as_bytes(&a[..rows * k]));
    let cb = cpu.create_from_slice(i8::as_bytes(&bt[..cols * k]));
    let cc = cpu.create_from_slice(i32::as_bytes(&vec![0i32; rows * cols]));
    let tiles = gemm_i8_persistent::Tiles::M128N256;
    // SAFETY: the first rows of `a` and of `bᵀ`, a rows×cols output, a shape that passes the check.
    unsafe {
        gemm_i8_persistent::launch(cpu, (&ca, &cb, &cc), (rows, k, cols), tiles, None, None, Target::for_client(cpu))
    }?;
    let cpu_block = i32::from_bytes(&island_runtime::readback::read(cpu, cc)?).to_vec();
    for (tiles, got) in persistent.iter().zip(&got_pt) {
        let block: Vec<i32> = (0..rows).flat_map(|r| got[r * n..r * n + cols].to_vec()).collect();
        let what = format!("wgmma island, {} vs CPU runtime `default` (top-left 128×256)", tiles.label());
        ok &= check(&what, &as_u32(&block), &as_u32(&cpu_block));
    }
    Ok(ok)
}

/// cuBLASLt's fastest int8 algorithm on the same inputs (`None` off CUDA or without the
/// `cuda` feature).
#[allow(unused_variables)]
fn cublaslt_int8(
    client: &Client,
    (m, k, n): (usize, usize, usize),
    a: &[i8],
    bt: &[i8],
    o: &Options,
) -> Option<Result<crate::cublaslt::Best<i32>, crate::cublaslt::CublasLtError>> {
    #[cfg(feature = "cuda")]
    if client.name() == "cuda" {
        return Some(crate::cublaslt::int8(m, k, n, a, bt, o.rounds, (o.iters / 20).max(3)));
    }
    None
}

/// The f16 GEMM island (16×16 tensor-core tiles, f32 accumulation and output) beside
/// cuBLASLt's fastest f16 algorithm (f32 accumulation and output) and `torch.matmul` (f16
/// output). The island is checked against the sm_90 model on a sampled corner; cuBLASLt's
/// accumulation order is its own, so its agreement is counted, not required.
fn gemm_half(
    client: &Client,
    size: usize,
    o: &Options,
    peers: Option<&crate::peers::Peers>,
) -> Result<bool, BenchError> {
    let (m, k, n) = (size, size, size);
    gemm_f16::check(m, k, n)?;
    let mut rng = Rng::new(0x6631);
    let a: Vec<half::f16> = floats(m * k, &mut rng).into_iter().map(half::f16::from_f32).collect();
    let b: Vec<half::f16> = floats(k * n, &mut rng).into_iter().map(half::f16::from_f32).collect();
    let ah = client.create_from_slice(half::f16::as_bytes(&a));
    let bh = client.create_from_slice(half::f16::as_bytes(&b));
    let ch = client.create_from_slice(f32::as_bytes(&vec![0f32; m * n]));
    let native = Target::for_client(client);
    // SAFETY: the handles hold m×k, k×n and m×n values; the shape passed the check.
    let mut island = || unsafe { gemm_f16::launch(client, (&ah, &bh, &ch), (m, k, n), native) };
    let iters = (o.iters / 50).max(3);
    let times = side_by_side(client, o.rounds, iters, &mut [("f16 tiles", &mut island)])?;
    let tflops = |t_us: f64| 2.0 * (m * n * k) as f64 / t_us / 1e6;
    println!("\nf16 GEMM {m}×{k}×{n} (f32 accumulation)");
    println!(
        "    island, cmma 16×16×16 tiles, f32 out            {:>10.1} µs   {:>6.1} TFLOP/s",
        us(times[0]),
        tflops(us(times[0]))
    );
    if let Some(p) = peers {
        println!(
            "    torch {} matmul, f16 out                 {:>10.1} µs   {:>6.1} TFLOP/s",
            p.torch,
            p.matmul_f16,
            tflops(p.matmul_f16)
        );
    }
    let fresh = client.create_from_slice(f32::as_bytes(&vec![0f32; m * n]));
    // SAFETY: as above.
    unsafe { gemm_f16::launch(client, (&ah, &bh, &fresh), (m, k, n), native) };
    let got = f32::from_bytes(&island_runtime::readback::read(client, fresh)?).to_vec();
    let lt = cublaslt_f16(client, (m, k, n), &a, &b, o);
    if let Some(Ok(best)) = &lt {
        println!(
            "    cuBLASLt, fastest of {} heuristic algorithms, f32 out {:>7.1} µs   {:>6.1} TFLOP/s   ({})",
            best.algorithms,
            best.us,
            tflops(best.us),
            best.config
        );
        println!("    island speed / cuBLASLt's fastest: {:.3}", best.us / us(times[0]));
        let same = got.iter().zip(&best.out).filter(|(x, y)| x.to_bits() == y.to_bits()).count();
        println!("    cuBLASLt's output bit-equal to the island's in {same} of {} values (not required)", got.len());
    } else if let Some(Err(e)) = &lt {
        println!("    cuBLASLt: none ({e})");
    }
    // The sm_90 model on the first 16 rows × 256 columns (the model is slow on a host).
    let (rows, cols) = (16.min(m), 256.min(n));
    let a_rows = &a[..rows * k];
    let b_cols: Vec<half::f16> = (0..k).flat_map(|r| b[r * n..r * n + cols].to_vec()).collect();
    let want = gemm_f16::reference(rows, k, cols, a_rows, &b_cols, &vec![0f32; rows * cols]);
    let corner: Vec<f32> = (0..rows).flat_map(|r| got[r * n..r * n + cols].to_vec()).collect();
    Ok(check(&format!("island vs the sm_90 model (first {rows} rows × {cols} columns)"), &bits(&corner), &bits(&want)))
}

#[allow(unused_variables)]
fn cublaslt_f16(
    client: &Client,
    (m, k, n): (usize, usize, usize),
    a: &[half::f16],
    b: &[half::f16],
    o: &Options,
) -> Option<Result<crate::cublaslt::Best<f32>, crate::cublaslt::CublasLtError>> {
    #[cfg(feature = "cuda")]
    if client.name() == "cuda" {
        return Some(crate::cublaslt::f16(m, k, n, a, b, o.rounds, (o.iters / 20).max(3)));
    }
    None
}

/// The MMQ island (activation quantizer and product) at ggml's batched case, beside ggml's
/// `mmq` measured in this run; checked against the plain-Rust reference on the whole output
/// and against the CPU runtime's `default` on the first block of rows and tokens.
fn mmq_bench(
    client: &Client,
    cpu: &Client,
    quant: mmq::Quant,
    (m, k, n): (usize, usize, usize),
    o: &Options,
    ggml: &[crate::ggml::Case],
) -> Result<bool, BenchError> {
    let mut rng = Rng::new(0x6d6d71 + quant as u64);
    let gguf = mmq::random_gguf(quant, m, k, &mut rng);
    let w = mmq::MmqWeights::from_gguf(quant, m, k, &gguf)?;
    let x = floats(n * k, &mut rng);
    let p = mmq::Problem::new(client, &w, &x, n)?;
    let native = Target::for_client(client);
    let mut whole = || p.launch(client, native);
    let mut quantize = || p.quantize(client, native);
    let mut product = || p.product(client, native);
    let iters = (o.iters / 20).max(3);
    let times = side_by_side(
        client,
        o.rounds,
        iters,
        &mut [("mmq", &mut whole), ("quantizer", &mut quantize), ("product", &mut product)],
    )?;
    let tflops = |t_us: f64| 2.0 * (m * n * k) as f64 / t_us / 1e6;
    println!("\n{} MMQ m={m} n={n} k={k} (f32 activations quantized to Q8_1 in the timed work)", quant.name());
    println!(
        "    island, quantizer + product                     {:>10.2} µs   {:>6.1} TFLOP/s",
        us(times[0]),
        tflops(us(times[0]))
    );
    println!("      of which: quantizer alone                     {:>10.2} µs", us(times[1]));
    println!(
        "      of which: product alone                       {:>10.2} µs   {:>6.1} TFLOP/s",
        us(times[2]),
        tflops(us(times[2]))
    );
    if let Some(c) = ggml.iter().find(|c| c.is(quant.name(), m, n, k)) {
        println!(
            "    ggml mmq {} (measured in this run)              {:>10.2} µs   {:>6.1} TFLOP/s",
            quant.name(),
            c.us,
            tflops(c.us)
        );
        println!("    island speed / ggml mmq: {:.3}", c.us / us(times[0]));
    }
    p.launch(client, native);
    let got = p.output(client)?;
    let want = mmq::reference(&w, &x, n);
    let mut ok = check("island vs plain-Rust reference (whole output)", &bits(&got), &bits(&want));
    // The first block of weight rows and of tokens, on the CPU runtime (`default`).
    let (bm, bn) = (mmq::CONFIG.block_m() as usize, mmq::CONFIG.block_n() as usize);
    let sub = mmq::MmqWeights::from_gguf(quant, bm, k, &gguf[..bm * k / 32 * quant.gguf_block_bytes()])?;
    let cpu_p = mmq::Problem::new(cpu, &sub, &x[..bn * k], bn)?;
    cpu_p.launch(cpu, Target::for_client(cpu));
    let cpu_y = cpu_p.output(cpu)?;
    let corner: Vec<f32> = (0..bn).flat_map(|j| got[j * m..j * m + bm].to_vec()).collect();
    ok &= check(
        &format!("island vs CPU runtime `default` (first {bm} rows × {bn} tokens)"),
        &bits(&corner),
        &bits(&cpu_y),
    );
    Ok(ok)
}
