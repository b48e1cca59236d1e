//! The examples checked end to end on the CPU runtime: the `default` arms against a plain-Rust
//! reference, every kernel with its arms forced to each backend (emulated) against `default`,
//! and shapes the kernels cannot handle rejected before launch.

use cubecl::prelude::*;
use half::f16;
use island_examples::testing::floats;
use island_examples::{gemm_f16, gemm_i8, gemm_i8_mma, gemm_i8_persistent, gemm_i8_wgmma, mmq, q8_matvec, rmsnorm};
use island_runtime::inputs::Rng;
use island_runtime::{Backend, Profile, Target};
use libtest_mimic::{Failed, Trial};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("examples::q8_matvec::default_matches_reference", q8_default),
        Trial::test("examples::q8_matvec::forced_arms_match_default", q8_forced),
        Trial::test("examples::q8_matvec::bad_shapes_are_rejected", q8_shapes),
        Trial::test("examples::rmsnorm::default_and_forced_arms_match_reference", rms),
        Trial::test("examples::gemm_i8::default_and_forced_arms_match_reference", gemm),
        Trial::test("examples::gemm_i8::bad_shapes_are_rejected", gemm_shapes),
        Trial::test("examples::gemm_i8_wgmma::default_and_emulated_arm_match_reference", gemm_wgmma),
        Trial::test("examples::gemm_i8_wgmma::bad_shapes_are_rejected", gemm_wgmma_shapes),
        Trial::test("examples::gemm_i8_persistent::default_and_emulated_arm_match_reference", gemm_persistent),
        Trial::test("examples::gemm_f16::default_and_forced_arms_match_the_sm90_model", gemm_half),
        Trial::test("examples::q8_matvec::quantizer_meets_rounding_ties", q8_quantizer_ties),
        Trial::test("examples::rmsnorm::rows_whose_sum_order_decides_the_output", rms_order_decides),
        Trial::test("examples::gemm_f16::bad_shapes_are_rejected", gemm_half_shapes),
        Trial::test("examples::mmq::q8_0_default_and_emulated_arm_match_reference", || mmq_matches(mmq::Quant::Q8_0)),
        Trial::test("examples::mmq::q4_1_default_and_emulated_arm_match_reference", || mmq_matches(mmq::Quant::Q4_1)),
        Trial::test("examples::mmq::bad_shapes_and_bytes_are_rejected", mmq_shapes),
        Trial::test("examples::q8_matvec::island_compiles_like_the_direct_kernel_on_cuda", zero_overhead),
    ]
    .into_iter()
    .map(|t| t.with_kind("example"))
    .collect()
}

fn client() -> Result<Client, Failed> {
    proofs::cpu().map_err(Failed::from)
}

/// The tags a kernel check runs with on the CPU: `default` first, then every reference profile
/// of `backends` that `keep` admits, its arms emulated.
fn targets(
    client: &Client,
    default: Target,
    backends: &[Backend],
    keep: impl Fn(&Profile) -> bool,
) -> Vec<(String, Target)> {
    let mut targets = vec![("default".to_string(), default)];
    for profile in backends.iter().flat_map(|b| Profile::references(*b)).filter(|p| keep(p)) {
        targets.push((format!("{profile} arms emulated on the CPU"), Target::forced(profile, client)));
    }
    targets
}

/// The first index where two float slices differ in bits.
fn same_bits(what: &str, got: &[f32], want: &[f32]) -> Result<(), Failed> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()).into());
    }
    match island_examples::testing::first_bit_difference(got, want) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: first difference at {i}: got {:#010x} ({}), want {:#010x} ({})",
            got[i].to_bits(),
            got[i],
            want[i].to_bits(),
            want[i]
        )
        .into()),
    }
}

fn q8_problem(rows: usize, cols: usize, seed: u64) -> (q8_matvec::Q8Weights, Vec<f32>) {
    let mut rng = Rng::new(seed);
    let w = floats(rows * cols, &mut rng);
    let x = floats(cols, &mut rng);
    let gguf = q8_matvec::Q8Weights::quantize_gguf(rows, cols, &w).expect("valid shape");
    (q8_matvec::Q8Weights::from_gguf(rows, cols, &gguf).expect("valid bytes"), x)
}

fn q8_default() -> Result<(), Failed> {
    let client = client()?;
    // 167 blocks a row: two pipelined stages of two groups, one group after them, and a
    // partial group of 7 blocks.
    let (weights, x) = q8_problem(6, 32 * 167, 1);
    let problem = q8_matvec::Problem::new(&client, &weights, &x)?;
    problem.launch(&client, None)?;
    same_bits("q8 matvec on the CPU", &problem.output(&client)?, &q8_matvec::reference(&weights, &x))
}

fn q8_forced() -> Result<(), Failed> {
    let client = client()?;
    let (weights, x) = q8_problem(3, 32 * 104, 2);
    let problem = q8_matvec::Problem::new(&client, &weights, &x)?;
    problem.launch(&client, Some(Target::default_arms(&client)))?;
    let want = problem.output(&client)?;
    for backend in [Backend::Cuda, Backend::Vulkan, Backend::Hip] {
        for profile in Profile::references(backend) {
            problem.launch(&client, Some(Target::forced(profile, &client)))?;
            same_bits(&format!("q8 matvec, {profile} arms emulated on the CPU"), &problem.output(&client)?, &want)?;
        }
    }
    Ok(())
}

/// Activations that reach every rounding decision of the quantizer: per block a largest
/// magnitude of `127 · 2^k` (so the scale is exactly `2^k`), values exactly halfway between two
/// steps (`(n + ½) · 2^k`, both signs: round half away from zero decides them), their neighbours
/// one ulp either side, zeros of both signs, and a block of zeros alone.
fn quantizer_inputs(blocks: usize) -> (Vec<f32>, usize) {
    let mut x = Vec::with_capacity(blocks * 32);
    let mut ties = 0;
    for b in 0..blocks {
        if b == blocks - 1 {
            x.extend((0..32).map(|i| if i % 2 == 0 { 0.0 } else { -0.0 }));
            continue;
        }
        let step = 2f32.powi(b as i32 % 24 - 12);
        let sign = if b % 2 == 0 { 1.0 } else { -1.0 };
        for i in 0..32usize {
            let n = ((b * 37 + i * 11) % 126) as f32;
            let tie = (n + 0.5) * step * if i % 3 == 0 { -1.0 } else { 1.0 };
            let v = match i {
                0 => sign * 127.0 * step,
                1 => 0.0,
                2 => -0.0,
                _ if i % 4 == 1 => f32::from_bits(tie.to_bits() + 1),
                _ if i % 4 == 2 => f32::from_bits(tie.to_bits() - 1),
                _ => tie,
            };
            if v == tie {
                ties += 1;
            }
            x.push(v);
        }
    }
    (x, ties)
}

/// The quantizer's own outputs (packed words and scales), not only the matvec's, against the
/// reference on [`quantizer_inputs`]: a rounding slip at a tie changes one value by one step,
/// which a dot product can hide.
fn q8_quantizer_ties() -> Result<(), Failed> {
    let client = client()?;
    let blocks = 64;
    let (x, ties) = quantizer_inputs(blocks);
    // The inputs decide: the ties are exact in the scale the reference computes.
    let (want_q, want_d) = q8_matvec::quantize_activations(&x);
    let exact_ties = x
        .chunks(32)
        .zip(&want_d)
        .map(|(block, d)| block.iter().filter(|v| *d != 0.0 && (**v / d).fract().abs() == 0.5).count())
        .sum::<usize>();
    if exact_ties < ties || ties < blocks * 8 {
        return Err(format!("only {exact_ties} exact ties of {ties} planted").into());
    }
    let gguf = q8_matvec::Q8Weights::quantize_gguf(2, x.len(), &vec![0.5; 2 * x.len()]).expect("valid shape");
    let weights = q8_matvec::Q8Weights::from_gguf(2, x.len(), &gguf).expect("valid bytes");
    let problem = q8_matvec::Problem::new(&client, &weights, &x)?;
    for (what, target) in
        targets(&client, Target::default_arms(&client), &[Backend::Cuda, Backend::Vulkan, Backend::Hip], |_| true)
    {
        problem.quantize(&client, target);
        let (q, d) = problem.activations(&client)?;
        same_bits(&format!("quantizer scales, {what}"), &d, &want_d)?;
        if let Some(i) = q.iter().zip(&want_q).position(|(g, w)| g != w) {
            let (block, value) = (i / 8, (i % 8) * 4);
            return Err(format!(
                "quantizer, {what}: word {i} (block {block}, values {value}..{}): got {:#010x}, want {:#010x}; inputs {:?}",
                value + 4,
                q[i],
                want_q[i],
                &x[block * 32 + value..block * 32 + value + 4]
            )
            .into());
        }
    }
    Ok(())
}

fn q8_shapes() -> Result<(), Failed> {
    let client = client()?;
    let bad = [
        q8_matvec::Q8Weights::from_gguf(2, 33, &[0u8; 10]).err(),
        q8_matvec::Q8Weights::from_gguf(2, 64, &[0u8; 10]).err(),
        q8_matvec::Q8Weights::quantize_gguf(0, 32, &[]).err(),
    ];
    if bad.iter().any(Option::is_none) {
        return Err(format!("a bad shape was accepted: {bad:?}").into());
    }
    let (weights, _) = q8_problem(2, 64, 3);
    match q8_matvec::Problem::new(&client, &weights, &[0.0; 32]) {
        Err(_) => Ok(()),
        Ok(_) => Err("an activation of the wrong length was accepted".into()),
    }
}

fn rms() -> Result<(), Failed> {
    let client = client()?;
    // Rows short enough to stay in registers (some lanes idle at the end), and rows read twice.
    for (rows, cols) in [(3, 648), (2, 4224)] {
        let eps = 1e-6f32;
        let mut rng = Rng::new(4);
        let x = floats(rows * cols, &mut rng);
        let w = floats(cols, &mut rng);
        rmsnorm::check(rows, cols, &x, &w)?;
        if rmsnorm::check(rows, cols, &x[1..], &w).is_ok() || rmsnorm::check(0, cols, &[], &w).is_ok() {
            return Err("a bad RMSNorm shape was accepted".into());
        }
        let want = rmsnorm::reference(rows, cols, &x, &w, eps);
        let xh = client.create_from_slice(f32::as_bytes(&x));
        let wh = client.create_from_slice(f32::as_bytes(&w));
        let yh = client.empty(rows * cols * 4);
        for (what, target) in
            targets(&client, Target::for_client(&client), &[Backend::Cuda, Backend::Vulkan, Backend::Metal], |_| true)
        {
            // SAFETY: the handles hold rows × cols and cols values.
            unsafe { rmsnorm::launch(&client, &xh, &wh, &yh, (rows, cols), eps, target) }?;
            let got = island_runtime::readback::read(&client, yh.clone())?;
            same_bits(&format!("rmsnorm {rows}×{cols}, {what}"), f32::from_bytes(&got), &want)?;
        }
    }
    Ok(())
}

/// RMSNorm on rows whose row sum decides the output: 64 of them, every other one of wide
/// magnitudes (2^-20 to 2^20, so most additions round), and a check that the inputs can fail
/// the test: the same reference with its 32 lane sums added left to right instead of in the
/// butterfly's pairs must give other bits on some row, or a summation-order slip in the kernel
/// (which the normalisation's division could otherwise hide) might pass.
fn rms_order_decides() -> Result<(), Failed> {
    let client = client()?;
    let (rows, cols, eps) = (64, 648, 1e-6f32);
    let mut rng = Rng::new(41);
    let mut x = floats(rows * cols, &mut rng);
    for (i, v) in x.iter_mut().enumerate() {
        if (i / cols) % 2 == 1 {
            *v *= 2f32.powi((rng.next_u64() % 41) as i32 - 20);
        }
    }
    let w = floats(cols, &mut rng);
    let want = rmsnorm::reference(rows, cols, &x, &w, eps);
    // The same reference, the lane sums folded left to right.
    let w_ref = &w;
    let folded: Vec<f32> = (0..rows)
        .flat_map(|r| {
            let row = &x[r * cols..(r + 1) * cols];
            let lanes = (0..32)
                .map(|l| row.chunks_exact(4).skip(l).step_by(32).flatten().fold(0.0f32, |ss, &v| v.mul_add(v, ss)));
            let inv = 1.0f32 / (lanes.fold(0.0f32, |s, v| s + v) / cols as f32 + eps).sqrt();
            (0..cols).map(move |c| row[c] * inv * w_ref[c])
        })
        .collect();
    let deciding =
        (0..rows).filter(|r| (0..cols).any(|c| want[r * cols + c].to_bits() != folded[r * cols + c].to_bits())).count();
    if deciding == 0 {
        return Err(
            "no row's output depends on the order of its row sum: these inputs cannot catch an order slip".into()
        );
    }
    let xh = client.create_from_slice(f32::as_bytes(&x));
    let wh = client.create_from_slice(f32::as_bytes(&w));
    let yh = client.empty(rows * cols * 4);
    for (what, target) in
        targets(&client, Target::default_arms(&client), &[Backend::Cuda, Backend::Vulkan], |p| p.sm != 89 && p.sm != 80)
    {
        // SAFETY: the handles hold rows × cols and cols values.
        unsafe { rmsnorm::launch(&client, &xh, &wh, &yh, (rows, cols), eps, target) }?;
        let got = island_runtime::readback::read(&client, yh.clone())?;
        same_bits(
            &format!("rmsnorm {rows}×{cols} ({deciding} rows decide the order), {what}"),
            f32::from_bytes(&got),
            &want,
        )?;
    }
    Ok(())
}

fn gemm() -> Result<(), Failed> {
    let client = client()?;
    let (m, k, n) = (32, 48, 32);
    gemm_i8::check(m, k, n)?;
    let mut rng = Rng::new(5);
    let a: Vec<i8> = (0..m * k).map(|_| rng.next_u64() as i8).collect();
    let b: Vec<i8> = (0..k * n).map(|_| rng.next_u64() as i8).collect();
    let c: Vec<i32> = (0..m * n).map(|_| rng.next_u64() as i32).collect();
    let want = gemm_i8::reference(m, k, n, &a, &b, &c);
    for (what, target) in targets(&client, Target::for_client(&client), &[Backend::Cuda], |_| true) {
        let ah = client.create_from_slice(i8::as_bytes(&a));
        let bh = client.create_from_slice(i8::as_bytes(&b));
        let ch = client.create_from_slice(i32::as_bytes(&c));
        // SAFETY: the handles hold m×k, k×n and m×n values.
        unsafe { gemm_i8::launch(&client, (&ah, &bh, &ch), (m, k, n), target) };
        let got = island_runtime::readback::read(&client, ch)?;
        let got = i32::from_bytes(&got);
        if let Some(i) = got.iter().zip(&want).position(|(g, w)| g != w) {
            return Err(format!("gemm, {what}: first difference at {i}: got {:#x}, want {:#x}", got[i], want[i]).into());
        }
    }
    Ok(())
}

/// The f16 GEMM's `default` and its sm_90 arm (emulated) against the plain-Rust model on
/// realistic values and on an accumulator that dominates the products (the alignment window).
fn gemm_half() -> Result<(), Failed> {
    let client = client()?;
    let (m, k, n) = (32, 64, 32);
    gemm_f16::check(m, k, n)?;
    let mut rng = Rng::new(16);
    let mut value = |scale: i32| {
        let mantissa = (rng.next_u64() % 2048) as f32 / 1024.0 - 1.0;
        mantissa * 2f32.powi(scale)
    };
    let a: Vec<f16> = (0..m * k).map(|i| f16::from_f32(value((i % 7) as i32 - 3))).collect();
    let b: Vec<f16> = (0..k * n).map(|i| f16::from_f32(value((i % 5) as i32 - 2))).collect();
    // Half the accumulators 2^20 and more: products then straddle the window's last bit.
    let c: Vec<f32> = (0..m * n).map(|i| value(if i % 2 == 0 { 2 } else { 20 + (i % 7) as i32 })).collect();
    let want = gemm_f16::reference(m, k, n, &a, &b, &c);
    // The sm_90 profile: the generation whose tensor cores the emulation models.
    for (what, target) in targets(&client, Target::for_client(&client), &[Backend::Cuda], |p| p.sm == 90) {
        let ah = client.create_from_slice(f16::as_bytes(&a));
        let bh = client.create_from_slice(f16::as_bytes(&b));
        let ch = client.create_from_slice(f32::as_bytes(&c));
        // SAFETY: the handles hold m×k, k×n and m×n values.
        unsafe { gemm_f16::launch(&client, (&ah, &bh, &ch), (m, k, n), target) };
        let got = island_runtime::readback::read(&client, ch)?;
        same_bits(&format!("gemm_f16, {what}"), f32::from_bytes(&got), &want)?;
    }
    // The model is not a plain f32 sum: on these inputs it must differ from one somewhere.
    let plain: Vec<f32> = (0..m * n)
        .map(|e| (0..k).fold(c[e], |s, p| s + a[(e / n) * k + p].to_f32() * b[p * n + e % n].to_f32()))
        .collect();
    if plain.iter().zip(&want).all(|(p, w)| p.to_bits() == w.to_bits()) {
        return Err("the inputs do not tell the tensor-core model from a k-order f32 sum".into());
    }
    Ok(())
}

fn gemm_half_shapes() -> Result<(), Failed> {
    for (m, k, n) in [(0, 16, 16), (16, 24, 16), (17, 16, 16), (16, 16, 8)] {
        if gemm_f16::check(m, k, n).is_ok() {
            return Err(format!("{m}×{k}×{n} was accepted").into());
        }
    }
    Ok(())
}

/// The wgmma GEMM in every variant (blocks of 256×128, 128×256 and 128×128, each pipeline),
/// `k` long enough to reuse every stage, with `default` and with its sm_90 arm emulated, against the plain-Rust reference on the whole output: each block
/// reads its own rows and columns, which the island's proof (one block) does not show.
fn gemm_wgmma() -> Result<(), Failed> {
    let client = client()?;
    let (m, k, n) = (512, 640, 256);
    gemm_i8_wgmma::check(m, k, n)?;
    let mut rng = Rng::new(0x7767);
    let a: Vec<i8> = (0..m * k).map(|_| rng.next_u64() as i8).collect();
    // Column-major `b` (n rows of k bytes); every fourth row all −128, the extreme products.
    let bt: Vec<i8> = (0..n * k).map(|i| if (i / k) % 4 == 3 { i8::MIN } else { rng.next_u64() as i8 }).collect();
    let want = gemm_i8_mma::reference(m, k, n, &a, &bt);
    for (what, target) in targets(&client, Target::default_arms(&client), &[Backend::Cuda], |p| p.sm == 90) {
        let ah = client.create_from_slice(i8::as_bytes(&a));
        let bh = client.create_from_slice(i8::as_bytes(&bt));
        for blocks in gemm_i8_wgmma::Blocks::ALL {
            let ch = client.create_from_slice(i32::as_bytes(&vec![0i32; m * n]));
            // SAFETY: the handles hold m×k, k×n and m×n values; the shape passed the check.
            unsafe { gemm_i8_wgmma::launch_blocks(&client, (&ah, &bh, &ch), (m, k, n), blocks, None, target)? };
            let got = island_runtime::readback::read(&client, ch)?;
            let got = i32::from_bytes(&got);
            if let Some(i) = got.iter().zip(&want).position(|(g, w)| g != w) {
                return Err(format!(
                    "wgmma gemm {blocks:?}, {what}: first difference at {i}: got {:#x}, want {:#x}",
                    got[i], want[i]
                )
                .into());
            }
        }
    }
    Ok(())
}

/// The persistent GEMM in both variants on fewer cubes than tiles (each cube walks several
/// tiles, its ring running on across them), with `default` and with its sm_90 arm emulated,
/// against the plain-Rust reference on the whole output: the walk must cover every tile once,
/// which the island's proof (both sides walk alike) does not show.
fn gemm_persistent() -> Result<(), Failed> {
    let client = client()?;
    let (m, k, n) = (384, 640, 256);
    gemm_i8_persistent::check(m, k, n)?;
    let mut rng = Rng::new(0x7065);
    let a: Vec<i8> = (0..m * k).map(|_| rng.next_u64() as i8).collect();
    // Column-major `b`; every fourth row all −128, the extreme products.
    let bt: Vec<i8> = (0..n * k).map(|i| if (i / k) % 4 == 1 { i8::MIN } else { rng.next_u64() as i8 }).collect();
    let want = gemm_i8_mma::reference(m, k, n, &a, &bt);
    for (what, target) in targets(&client, Target::default_arms(&client), &[Backend::Cuda], |p| p.sm == 90) {
        let ah = client.create_from_slice(i8::as_bytes(&a));
        let bh = client.create_from_slice(i8::as_bytes(&bt));
        for tiles in gemm_i8_persistent::Tiles::ALL {
            let ch = client.create_from_slice(i32::as_bytes(&vec![0i32; m * n]));
            // SAFETY: the handles hold m×k, k×n and m×n values; the shape passed the check.
            unsafe { gemm_i8_persistent::launch(&client, (&ah, &bh, &ch), (m, k, n), tiles, None, Some(2), target)? };
            let got = island_runtime::readback::read(&client, ch)?;
            let got = i32::from_bytes(&got);
            if let Some(i) = got.iter().zip(&want).position(|(g, w)| g != w) {
                return Err(format!(
                    "persistent gemm {tiles:?}, {what}: first difference at {i}: got {:#x}, want {:#x}",
                    got[i], want[i]
                )
                .into());
            }
        }
    }
    Ok(())
}

fn gemm_wgmma_shapes() -> Result<(), Failed> {
    for (m, k, n) in [(0, 128, 128), (256, 100, 128), (128, 128, 128), (256, 128, 64), (256, 128, 0)] {
        if gemm_i8_wgmma::check(m, k, n).is_ok() {
            return Err(format!("the wgmma GEMM accepted {m}×{k}×{n}").into());
        }
    }
    Ok(())
}

fn gemm_shapes() -> Result<(), Failed> {
    for (m, k, n) in [(0, 16, 16), (16, 15, 16), (17, 16, 16), (16, 16, 8)] {
        if gemm_i8::check(m, k, n).is_ok() {
            return Err(format!("{m}×{k}×{n} was accepted").into());
        }
    }
    let _ = f16::ZERO;
    Ok(())
}

/// The island kernel with its CUDA arms selected compiles to the same CUDA C++ as the kernel
/// written by hand with CubeCL's `dp4a` and `plane_sum`: identical modulo names.
fn zero_overhead() -> Result<(), Failed> {
    use island_runtime::lowering::{Codegen, properties};
    use island_runtime::{Exec, Executor};
    use std::sync::Arc;
    let client = client()?;
    let profile = Profile::references(Backend::Cuda)[0];
    let props = Arc::new(properties(&profile));
    let target = Target::from_parts(Some(profile), Exec { executor: Executor::Device(Backend::Cuda), plane: 32 });
    let (rows, blocks) = (64usize, 448usize);
    let buffer = |n: usize, size: usize| unsafe { BufferArg::from_raw_parts(client.empty(n * size), n) };
    let count = CubeCount::Static(16, 1, 1);
    let dim = CubeDim::new_1d(128);
    let config = q8_matvec::Config { rows, blocks_per_row: blocks, planes: 4, unroll: 4 };
    let island = q8_matvec::matvec_q8_0::create_dummy_kernel(
        props.clone(),
        Arc::new(Default::default()),
        count.clone(),
        dim,
        buffer(rows * blocks * 2, 16),
        buffer(rows * blocks, 2),
        buffer(blocks * 2, 16),
        buffer(blocks, 4),
        buffer(rows, 4),
        config,
        target,
    );
    let direct = q8_matvec::matvec_q8_0_direct::create_dummy_kernel(
        props.clone(),
        Arc::new(Default::default()),
        count,
        dim,
        buffer(rows * blocks * 2, 16),
        buffer(rows * blocks, 2),
        buffer(blocks * 2, 16),
        buffer(blocks, 4),
        buffer(rows, 4),
        config,
    );
    let island = Codegen::CudaCpp.compile(island_runtime::lifted::define(&island)?, &profile)?;
    let direct = Codegen::CudaCpp.compile(island_runtime::lifted::define(&direct)?, &profile)?;
    same_source("matvec", &island, &direct, &["__dp4a(", "__shfl_xor_sync", "ld.global.nc.L1::no_allocate"])?;
    let words = blocks * 8;
    let (count, dim) = (CubeCount::Static(words as u32 / 32, 1, 1), CubeDim::new_1d(32));
    let island = q8_matvec::quantize_q8_1::create_dummy_kernel(
        props.clone(),
        Arc::new(Default::default()),
        count.clone(),
        dim,
        buffer(words, 16),
        buffer(words, 4),
        buffer(blocks, 4),
        words,
        target,
    );
    let direct = q8_matvec::quantize_q8_1_direct::create_dummy_kernel(
        props,
        Arc::new(Default::default()),
        count,
        dim,
        buffer(words, 16),
        buffer(words, 4),
        buffer(blocks, 4),
        words,
    );
    let island = Codegen::CudaCpp.compile(island_runtime::lifted::define(&island)?, &profile)?;
    let direct = Codegen::CudaCpp.compile(island_runtime::lifted::define(&direct)?, &profile)?;
    same_source("quantizer", &island, &direct, &["__shfl_xor_sync"])
}

/// `island` contains every needle and equals `direct`, generated names aside.
fn same_source(kernel: &str, island: &str, direct: &str, needles: &[&str]) -> Result<(), Failed> {
    for needle in needles {
        if !island.contains(needle) {
            return Err(format!("the island {kernel}'s CUDA has no `{needle}`").into());
        }
    }
    let (a, b) = (normalize(island), normalize(direct));
    if a == b {
        return Ok(());
    }
    let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(0);
    Err(format!(
        "the {kernel}'s CUDA sources differ (names normalised) at line {line}:\n  island: {}\n  direct: {}",
        a.lines().nth(line).unwrap_or(""),
        b.lines().nth(line).unwrap_or("")
    )
    .into())
}

/// Renames every generated identifier (`v123`, `<name>_v123`, `<kernel>_<hash>`) by order of
/// first appearance.
fn normalize(source: &str) -> String {
    let mut names = std::collections::HashMap::new();
    let mut out = String::with_capacity(source.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String, names: &mut std::collections::HashMap<String, usize>| {
        let hashed =
            word.rsplit_once('_').is_some_and(|(_, h)| h.len() == 8 && h.chars().all(|c| c.is_ascii_hexdigit()));
        let numbered = |w: &str| w.starts_with('v') && w.len() > 1 && w[1..].chars().all(|c| c.is_ascii_digit());
        // `v123`, or a named value with its number (`dynamic_meta_v208`).
        let generated = numbered(word) || word.rsplit_once('_').is_some_and(|(_, n)| numbered(n)) || hashed;
        if generated {
            let n = names.len();
            let id = *names.entry(word.clone()).or_insert(n);
            out.push_str(&format!("id{id}"));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in source.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out, &mut names);
            out.push(c);
        }
    }
    flush(&mut word, &mut out, &mut names);
    out
}

/// The MMQ (quantizer and product) with `default` and with its CUDA arm emulated, against the
/// plain-Rust reference: realistic scales, activations whose first half reach the quantizer's
/// rounding ties ([`quantizer_inputs`], one block of zeros included) and whose second half are
/// realistic values; `k` long enough to reuse every pipeline stage.
fn mmq_matches(quant: mmq::Quant) -> Result<(), Failed> {
    let client = client()?;
    let (m, k, n) = (128, 384, 128);
    let mut rng = Rng::new(0x6d6d71 + quant as u64);
    let gguf = mmq::random_gguf(quant, m, k, &mut rng);
    let w = mmq::MmqWeights::from_gguf(quant, m, k, &gguf)?;
    let (mut x, _) = quantizer_inputs(n * k / 64);
    x.extend(floats(n * k / 2, &mut rng));
    let want = mmq::reference(&w, &x, n);
    let problem = mmq::Problem::new(&client, &w, &x, n)?;
    for (what, target) in targets(&client, Target::default_arms(&client), &[Backend::Cuda], |_| true) {
        problem.launch(&client, target);
        same_bits(&format!("mmq {}, {what}", quant.name()), &problem.output(&client)?, &want)?;
    }
    Ok(())
}

fn mmq_shapes() -> Result<(), Failed> {
    let client = client()?;
    for (m, k, n) in [(0, 384, 128), (100, 384, 128), (128, 100, 128), (128, 384, 64), (128, 384, 0)] {
        if mmq::check(m, k, n).is_ok() {
            return Err(format!("mmq accepted {m}×{k}×{n}").into());
        }
    }
    for quant in [mmq::Quant::Q8_0, mmq::Quant::Q4_1] {
        if mmq::MmqWeights::from_gguf(quant, 128, 384, &[0u8; 10]).is_ok() {
            return Err(format!("{} weights of 10 bytes accepted", quant.name()).into());
        }
    }
    let w = mmq::MmqWeights::from_gguf(mmq::Quant::Q8_0, 128, 128, &vec![0u8; 128 * 4 * 34])?;
    if mmq::Problem::new(&client, &w, &[0.0; 100], 128).is_ok() {
        return Err("mmq accepted 100 activations for 128 columns of 128".into());
    }
    Ok(())
}
