//! The model engine's kernels one by one, on inputs that reach their rounding decisions, against
//! the plain-Rust reference's operations, bit for bit, on the CPU runtime and on every runtime of
//! the conformance list; on the CPU runtime also with the arms of a CUDA and a lavapipe profile
//! emulated (the lane sums then shared across units, through emulated shuffles, as those
//! devices share them).
//!
//! The whole-model check meets only the model's own activations, where a normalisation can divide
//! a last-bit difference away and a quantizer never meets a tie. Each check here first shows its
//! inputs decide: a variant of the reference that orders or rounds one step differently (a sum in
//! reverse, a product unfused, a reciprocal instead of a division) must differ from the reference
//! on them, or the check fails as unable to fail. The shapes are SmolLM2-135M's.

use island_llm::act_matvec::Act;
use island_llm::deciding::{Draw, activations, matrix, softmax_scores, swiglu_pairs};
use island_llm::kernels::AttnShape;
use island_llm::math::exp_host;
use island_llm::ops;
use island_llm::quant::{QuantMatrix, QuantType};
use island_llm::reference as r;
use island_llm::rope::rope_tables;
use island_llm::weights::Config;
use island_runtime::inputs::Rng;
use island_runtime::runtimes::RuntimeName;
use island_runtime::value::ValueKind;
use island_runtime::{Backend, Contract, Profile, Target};
use libtest_mimic::{Failed, Trial};

const CONFIG: Config = Config {
    layers: 30,
    dim: 576,
    ffn: 1536,
    heads: 9,
    kv_heads: 3,
    head_dim: 64,
    vocab: 49152,
    rope_base: 100000.0,
    eps: 1e-5,
    context: 8192,
};
const SHAPE: AttnShape = AttnShape { heads: 9, kv_heads: 3, context: 64 };

type Check = fn(&cubecl::prelude::Client, Target) -> Result<(), Failed>;

pub fn trials() -> Vec<Trial> {
    let checks: [(&str, Check); 14] = [
        ("rmsnorm", rmsnorm),
        ("matvec_q8_0", |c, t| matvec(c, t, QuantType::Q8_0)),
        ("matvec_q4_1", |c, t| matvec(c, t, QuantType::Q4_1)),
        ("rope", rope),
        ("scores", scores),
        ("softmax", softmax),
        ("attend", attend),
        ("swiglu", swiglu),
        ("norm_quant", norm_quant),
        ("swiglu_quant", swiglu_quant),
        ("act_matvec_q8_0", |c, t| act_matvec(c, t, QuantType::Q8_0)),
        ("act_matvec_q4_1", |c, t| act_matvec(c, t, QuantType::Q4_1)),
        ("attention_step", attention_step),
        ("choose", choose),
    ];
    let mut runtimes = vec![RuntimeName::Cpu];
    runtimes.extend(proofs::conformance_runtimes().unwrap_or_default());
    // The profiles whose arms the CPU runtime runs emulated: both lane trees shared (32 lanes a
    // plane), only the 8-lane tree (8).
    let emulated = [
        ("cuda_sm90", Profile::references(Backend::Cuda)[0]),
        ("vulkan_subgroup8", Profile::references(Backend::Vulkan)[0]),
    ];
    let mut trials = Vec::new();
    for r in runtimes {
        let mut tags: Vec<(String, Option<Profile>)> = vec![(r.as_str().to_string(), None)];
        if r == RuntimeName::Cpu {
            tags.extend(emulated.iter().map(|(name, p)| (format!("cpu_with_{name}_arms"), Some(*p))));
        }
        for (on, profile) in tags {
            for (name, check) in checks {
                // A one-token step's fused kernels run on the CPU runtime here and on CUDA and
                // Vulkan in the engine (`island_llm::engine`: not through WGSL, where they do not
                // compile in bounded time). The choice runs everywhere (through wgpu in two
                // launches, without shared memory).
                let step = name.starts_with("act_matvec") || name == "attention_step";
                if step && !matches!(r, RuntimeName::Cpu | RuntimeName::Device(Backend::Cuda | Backend::Vulkan)) {
                    continue;
                }
                let trial = format!("examples::llm::ops::{name}_on_{on}_equals_the_reference_on_deciding_inputs");
                trials.push(
                    Trial::test(trial, move || {
                        let client = if r == RuntimeName::Cpu { proofs::cpu()? } else { r.client()? };
                        let target = match profile {
                            Some(p) => Target::forced(p, &client),
                            None => Target::for_client(&client),
                        };
                        check(&client, target)
                    })
                    .with_kind("example")
                    .with_ignored_flag(r != RuntimeName::Cpu && !proofs::runs_engine_kernels(r)),
                );
            }
        }
    }
    trials
}

/// Whether two values are the same under the exact contract (bits equal, any NaN equal to any
/// NaN), as proofs compare.
fn same(a: f32, b: f32) -> bool {
    Contract::Exact.accepts(ValueKind::F32, a.to_bits() as u64, b.to_bits() as u64, None)
}

/// The first index where `got` and `want` differ in bits, as an error naming `what`.
fn same_bits(what: &str, got: &[f32], want: &[f32]) -> Result<(), Failed> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()).into());
    }
    let differ: Vec<usize> = (0..got.len()).filter(|&i| !same(got[i], want[i])).collect();
    match differ.first() {
        None => Ok(()),
        Some(&i) => Err(format!("{what}: {} of {} values differ from the reference; first at {i}: kernel {:e} ({:#010x}), reference {:e} ({:#010x})", differ.len(), got.len(), got[i], got[i].to_bits(), want[i], want[i].to_bits()).into()),
    }
}

/// The inputs decide `what`: the variant's outputs differ from the reference's somewhere, and
/// most of the reference's outputs are numbers (a saturated output compares only specials).
fn decides(what: &str, reference: &[f32], variant: &[f32]) -> Result<(), Failed> {
    let finite = reference.iter().filter(|v| v.is_finite()).count();
    if 2 * finite < reference.len() {
        return Err(format!(
            "the inputs saturate the output: {finite} of {} reference values are finite",
            reference.len()
        )
        .into());
    }
    if reference.iter().zip(variant).any(|(&a, &b)| !same(a, b)) {
        Ok(())
    } else {
        Err(format!("the inputs cannot fail the check: {what} gives the reference's bits on every value").into())
    }
}

/// `random` rows of `n` wide values (the order of their squares decides), then rows whose
/// squares overflow, subnormals, zeros of both signs, constant rows, a ramp through zero and
/// values over sixty binades.
fn norm_rows(rng: &mut Rng, n: usize, random: usize) -> Vec<Vec<f32>> {
    let mut rows: Vec<Vec<f32>> =
        (0..random).map(|i| (0..n).map(|_| rng.wide(if i % 2 == 0 { 3 } else { 20 })).collect()).collect();
    rows.push((0..n).map(|i| if i == 7 { 3e19 } else { rng.wide(3) }).collect()); // a square overflows
    rows.push((0..n).map(|_| rng.wide(3) * 1e-40).collect()); // subnormals
    rows.push(vec![0.0; n]);
    rows.push((0..n).map(|i| if i % 2 == 0 { -0.0 } else { rng.wide(1) }).collect());
    rows.push(vec![1.5; n]);
    rows.push(vec![-1e-3; n]);
    rows.push((0..n).map(|i| (i as f32 - 288.0) * 0.125).collect());
    rows.push((0..n).map(|_| rng.wide(60)).collect());
    rows
}

/// RMSNorm on 32 rows: wide magnitudes (order of the squares decides), values whose squares
/// overflow, subnormals, zeros, and rows of one repeated value.
fn rmsnorm(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let n = CONFIG.dim;
    let mut rng = Rng::new(0x5eed_0001);
    let w: Vec<f32> = (0..n).map(|_| rng.wide(2)).collect();
    let rows = norm_rows(&mut rng, n, 24);
    let want: Vec<Vec<f32>> = rows.iter().map(|x| r::rmsnorm(x, &w, CONFIG.eps)).collect();
    let reversed: Vec<f32> = rows
        .iter()
        .flat_map(|x| {
            let ss = x.iter().rev().fold(0.0f32, |s, &v| v.mul_add(v, s));
            let inv = 1.0f32 / (ss / n as f32 + CONFIG.eps).sqrt();
            x.iter().zip(&w).map(move |(&v, &g)| v * inv * g).collect::<Vec<_>>()
        })
        .collect();
    let regrouped: Vec<f32> = rows
        .iter()
        .flat_map(|x| {
            let ss = x.iter().fold(0.0f32, |s, &v| v.mul_add(v, s));
            let inv = 1.0f32 / (ss / n as f32 + CONFIG.eps).sqrt();
            x.iter().zip(&w).map(move |(&v, &g)| v * (inv * g)).collect::<Vec<_>>()
        })
        .collect();
    let other_lanes = |lanes: usize| -> Vec<f32> {
        rows.iter()
            .flat_map(|x| {
                let ss = r::lane_sum(lanes, n, |s, j| x[j].mul_add(x[j], s));
                let inv = 1.0f32 / (ss / n as f32 + CONFIG.eps).sqrt();
                x.iter().zip(&w).map(move |(&v, &g)| v * inv * g).collect::<Vec<_>>()
            })
            .collect()
    };
    let flat: Vec<f32> = want.concat();
    decides("the squares summed in one chain", &flat, &other_lanes(1))?;
    decides("the squares on 16 lanes", &flat, &other_lanes(16))?;
    decides("the squares summed in reverse", &flat, &reversed)?;
    decides("x · (inv · w)", &flat, &regrouped)?;
    let got = ops::rmsnorm_rows(client, target, &rows, &w, CONFIG.eps)?;
    same_bits("rmsnorm", &got.concat(), &flat)
}

/// The quantizer and the matvec of one quantization type, with and without the fused residual,
/// at the model's width (18 blocks: lanes of 3 and 2 blocks), at its FFN's (48), and at 3
/// blocks (lanes left empty).
fn matvec(client: &cubecl::prelude::Client, target: Target, ty: QuantType) -> Result<(), Failed> {
    for (i, cols) in [CONFIG.dim, CONFIG.ffn, 96].into_iter().enumerate() {
        matvec_at(client, target, ty, cols, 0x5eed_0002 ^ ty as u64 ^ (i as u64) << 32)
            .map_err(|e| Failed::from(format!("{cols} columns: {}", e.message().unwrap_or_default())))?;
    }
    Ok(())
}

fn matvec_at(
    client: &cubecl::prelude::Client,
    target: Target,
    ty: QuantType,
    cols: usize,
    seed: u64,
) -> Result<(), Failed> {
    let mut rng = Rng::new(seed);
    let rows = 96;
    let w = matrix(ty, rows, cols, &mut rng)?;
    let x = activations(cols, &mut rng);
    let y0: Vec<f32> = (0..rows).map(|_| rng.wide(8)).collect();
    let mut want = vec![0.0; rows];
    r::matvec(&w, &x, &mut want, false);
    let mut want_acc = y0.clone();
    r::matvec(&w, &x, &mut want_acc, true);
    // One chain over the blocks (every product fused into the running sum) must give other
    // bits somewhere; with more blocks than lanes, so must the blocks in reverse order and
    // another lane count (with fewer, those only add zeros in other places).
    let mut serial = vec![0.0; rows];
    r::matvec_lanes(&w, &x, &mut serial, false, 1);
    decides("the blocks in one chain", &want, &serial)?;
    if w.blocks() > 8 {
        let reversed_blocks = x.chunks_exact(32).rev().flatten().copied().collect::<Vec<_>>();
        let mut reversed = vec![0.0; rows];
        r::matvec(&reverse_blocks(&w), &reversed_blocks, &mut reversed, false);
        decides("the blocks summed in reverse order", &want, &reversed)?;
        let mut four = vec![0.0; rows];
        r::matvec_lanes(&w, &x, &mut four, false, 4);
        decides("the blocks on 4 lanes", &want, &four)?;
    }
    same_bits(&format!("{ty:?} matvec"), &ops::matvec(client, target, &w, &x, None)?, &want)?;
    same_bits(&format!("{ty:?} matvec with the residual"), &ops::matvec(client, target, &w, &x, Some(&y0))?, &want_acc)
}

/// `w` with its blocks in reverse order along `k` (paired with activations reversed by block, the
/// same products in the other order).
fn reverse_blocks(w: &QuantMatrix) -> QuantMatrix {
    let blocks = w.blocks();
    let per = w.words.len() / blocks;
    let mut out = w.clone();
    for b in 0..blocks {
        let from = blocks - 1 - b;
        out.words[b * per..(b + 1) * per].copy_from_slice(&w.words[from * per..(from + 1) * per]);
        out.scales[b * w.rows..(b + 1) * w.rows].copy_from_slice(&w.scales[from * w.rows..(from + 1) * w.rows]);
        if !w.mins.is_empty() {
            out.mins[b * w.rows..(b + 1) * w.rows].copy_from_slice(&w.mins[from * w.rows..(from + 1) * w.rows]);
        }
    }
    out
}

/// RoPE at a position whose angles are not exact, on wide values: one rounding per output
/// (`fma`) decides against two.
fn rope(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let mut rng = Rng::new(0x5eed_0003);
    let (dim, kv) = (CONFIG.dim, CONFIG.kv_dim());
    let (cos, sin) = rope_tables(&CONFIG, SHAPE.context);
    let qkv: Vec<f32> = (0..dim + 2 * kv).map(|i| if i % 17 == 0 { -0.0 } else { rng.wide(12) }).collect();
    let pos = 37usize;
    let at = pos * kv;
    let cache = SHAPE.context * kv;
    let half = CONFIG.head_dim / 2;
    let (mut q, mut kc, mut vc) = (vec![0.0; dim], vec![0.0; cache], vec![0.0; cache]);
    let mut unfused = Vec::new();
    for u in 0..(dim + kv) / 2 {
        let t = pos * half + u % half;
        let (x0, x1) = (qkv[2 * u], qkv[2 * u + 1]);
        let (y0, y1) = r::rope_pair(x0, x1, cos[t], sin[t]);
        unfused.extend([x0 * cos[t] - x1 * sin[t], x0 * sin[t] + x1 * cos[t]]);
        let out = if 2 * u < dim { &mut q[2 * u..2 * u + 2] } else { &mut kc[at + 2 * u - dim..at + 2 * u - dim + 2] };
        out.copy_from_slice(&[y0, y1]);
    }
    vc[at..at + kv].copy_from_slice(&qkv[dim + kv..]);
    let rotated: Vec<f32> = q.iter().chain(&kc[at..at + kv]).copied().collect();
    decides("each output rounded twice (product, then sum)", &rotated, &unfused)?;
    let got = ops::rope(client, target, &qkv, (&cos, &sin), pos as u32, cache, SHAPE)?;
    same_bits("rope: the query", &got.q, &q)?;
    same_bits("rope: the key cache", &got.kc, &kc)?;
    same_bits("rope: the value cache", &got.vc, &vc)
}

/// Attention scores over 40 cached positions of one layer (from a nonzero base): terms of wide
/// magnitudes, so the order and the fusing of the dot product decide.
fn scores(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let mut rng = Rng::new(0x5eed_0004);
    let (dim, kv, hd) = (CONFIG.dim, CONFIG.kv_dim(), CONFIG.head_dim);
    let n = 40usize;
    let base = 3 * SHAPE.context * kv;
    let q: Vec<f32> = (0..dim).map(|_| rng.wide(10)).collect();
    let kc: Vec<f32> = (0..base + SHAPE.context * kv).map(|_| rng.wide(10)).collect();
    let group = SHAPE.heads / SHAPE.kv_heads;
    let mut want = vec![0.0; SHAPE.heads * SHAPE.context];
    let mut reversed = want.clone();
    let mut unfused = want.clone();
    for h in 0..SHAPE.heads {
        for j in 0..n {
            let k0 = base + j * kv + h / group * hd;
            let (qh, key) = (&q[h * hd..(h + 1) * hd], &kc[k0..k0 + hd]);
            want[h * SHAPE.context + j] = r::score(qh, key);
            reversed[h * SHAPE.context + j] =
                qh.iter().zip(key).rev().fold(0.0f32, |a, (&x, &y)| x.mul_add(y, a)) * 0.125;
            unfused[h * SHAPE.context + j] = qh.iter().zip(key).fold(0.0f32, |a, (&x, &y)| a + x * y) * 0.125;
        }
    }
    decides("the dot product in reverse", &want, &reversed)?;
    decides("the dot product unfused", &want, &unfused)?;
    same_bits("scores", &ops::attention_scores(client, target, &q, &kc, n as u32, base as u32, SHAPE)?, &want)
}

/// Softmax over 61 of 64 positions per head, on the inputs the softmax cell decides with
/// (`deciding::softmax_scores`: equal maxima, a spread that underflows `exp`, −∞, a constant
/// row, realistic and wide rows); the positions past `n` must be left alone.
fn softmax(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let mut rng = Rng::new(0x5eed_0005);
    let (c, n) = (SHAPE.context, 61usize);
    let s = softmax_scores(SHAPE.heads, c, &mut rng);
    let mut want = s.clone();
    let mut reversed = s.clone();
    let mut reciprocal = s.clone();
    for h in 0..SHAPE.heads {
        let row = h * c..h * c + n;
        r::softmax(&mut want[row.clone()]);
        let v = &mut reversed[row.clone()];
        let mx = v[1..].iter().fold(v[0], |a, &b| a.max(b));
        v.iter_mut().for_each(|x| *x = exp_host(*x - mx));
        let sum = v.iter().rev().fold(0.0f32, |a, &b| a + b);
        v.iter_mut().for_each(|x| *x /= sum);
        let v = &mut reciprocal[row];
        let mx = v[1..].iter().fold(v[0], |a, &b| a.max(b));
        v.iter_mut().for_each(|x| *x = exp_host(*x - mx));
        let inv = 1.0 / v.iter().fold(0.0f32, |a, &b| a + b);
        v.iter_mut().for_each(|x| *x *= inv);
    }
    let mut serial = s.clone();
    for h in 0..SHAPE.heads {
        let v = &mut serial[h * c..h * c + n];
        let mx = v[1..].iter().fold(v[0], |a, &b| a.max(b));
        v.iter_mut().for_each(|x| *x = exp_host(*x - mx));
        let sum = v.iter().fold(0.0f32, |a, &b| a + b);
        v.iter_mut().for_each(|x| *x /= sum);
    }
    decides("the exponentials summed in one chain", &want, &serial)?;
    decides("the exponentials summed in reverse", &want, &reversed)?;
    decides("a multiplication by the sum's reciprocal", &want, &reciprocal)?;
    same_bits("softmax", &ops::softmax_heads(client, target, &s, n as u32, SHAPE)?, &want)
}

/// The weighted sum of 50 cached values: weights with exact zeros, wide values, so order and
/// fusing decide.
fn attend(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let mut rng = Rng::new(0x5eed_0006);
    let (kv, hd, c) = (CONFIG.kv_dim(), CONFIG.head_dim, SHAPE.context);
    let n = 50usize;
    let base = 2 * c * kv;
    let p: Vec<f32> = (0..SHAPE.heads * c).map(|i| if i % 11 == 0 { 0.0 } else { rng.unit() }).collect();
    let vc: Vec<f32> = (0..base + c * kv).map(|_| rng.wide(12)).collect();
    let group = SHAPE.heads / SHAPE.kv_heads;
    let (mut want, mut reversed, mut unfused, mut serial) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for h in 0..SHAPE.heads {
        for d in 0..hd {
            let ph = &p[h * c..h * c + n];
            let v = |j: usize| vc[base + j * kv + h / group * hd + d];
            want.push(r::weighted_sum(ph, (0..n).map(v)));
            reversed.push((0..n).rev().fold(0.0f32, |a, j| ph[j].mul_add(v(j), a)));
            unfused.push((0..n).fold(0.0f32, |a, j| a + ph[j] * v(j)));
            serial.push((0..n).fold(0.0f32, |a, j| ph[j].mul_add(v(j), a)));
        }
    }
    decides("the weighted sum in reverse", &want, &reversed)?;
    decides("the weighted sum unfused", &want, &unfused)?;
    decides("the weighted sum in one chain", &want, &serial)?;
    same_bits("attend", &ops::attention_values(client, target, &p, &vc, n as u32, base as u32, SHAPE)?, &want)
}

/// SwiGLU over the model's width: gates where `exp(−g)` overflows (−0.0 results), underflows,
/// ±0, subnormals, and realistic values; the order of the division and the product decides.
fn swiglu(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let mut rng = Rng::new(0x5eed_0007);
    let n = CONFIG.ffn;
    let (gate, up) = swiglu_pairs(n, &mut rng);
    let want: Vec<f32> = gate.iter().zip(&up).map(|(&g, &u)| r::swiglu(g, u)).collect();
    let reordered: Vec<f32> = gate.iter().zip(&up).map(|(&g, &u)| g * u / (1.0 + exp_host(-g))).collect();
    decides("g · u / (1 + exp(−g))", &want, &reordered)?;
    let gate_up: Vec<f32> = gate.iter().chain(&up).copied().collect();
    same_bits("swiglu", &ops::swiglu_all(client, target, &gate_up)?, &want)
}

/// The quantized words and scales `got` against `want`, word by word and scale by scale.
fn same_quantized(what: &str, got: &(Vec<i32>, Vec<f32>), want: &(Vec<i32>, Vec<f32>)) -> Result<(), Failed> {
    if let Some(i) = (0..want.0.len()).find(|&i| got.0.get(i) != Some(&want.0[i])) {
        return Err(format!(
            "{what}: word {i} is {:#010x}, the reference's {:#010x}",
            got.0.get(i).copied().unwrap_or(0),
            want.0[i]
        )
        .into());
    }
    same_bits(&format!("{what}: the block scales"), &got.1, &want.1)
}

/// The quantized words of `x` with each block's maximum taken over its first word only: what
/// a block maximum that is not shared across the block's units gives.
fn first_word_maxima(x: &[f32]) -> Vec<i32> {
    let mut out = Vec::new();
    for block in x.chunks_exact(32) {
        let amax = block[..4].iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        for w in block.chunks_exact(4) {
            let q: Vec<u8> = w.iter().map(|&v| if amax == 0.0 { 0 } else { (v / d).round() as i32 as u8 }).collect();
            out.push(i32::from_le_bytes([q[0], q[1], q[2], q[3]]));
        }
    }
    out
}

/// RMSNorm fused with the quantizer, on rows built as the RMSNorm check's ([`norm_rows`], six
/// random) and one with a block of zeros: the words and scales of the unfused pair.
fn norm_quant(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let n = CONFIG.dim;
    let mut rng = Rng::new(0x5eed_0008);
    let w: Vec<f32> = (0..n).map(|_| rng.wide(2)).collect();
    let mut rows = norm_rows(&mut rng, n, 6);
    rows.push((0..n).map(|i| if i / 32 == 3 { 0.0 } else { rng.wide(3) }).collect()); // a block of zeros
    for (k, x) in rows.iter().enumerate() {
        let h = r::rmsnorm(x, &w, CONFIG.eps);
        let want = r::quantize(&h);
        if k < 6 {
            decides_words("a block's maximum over its first word", &want.0, &first_word_maxima(&h))?;
        }
        same_quantized(&format!("norm_quant, row {k}"), &ops::norm_quant(client, target, x, &w, CONFIG.eps)?, &want)?;
    }
    Ok(())
}

/// SwiGLU fused with the quantizer, on the SwiGLU check's pairs: the words and scales of the
/// unfused pair.
fn swiglu_quant(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let mut rng = Rng::new(0x5eed_0009);
    let n = CONFIG.ffn;
    let (gate, up) = swiglu_pairs(n, &mut rng);
    let a: Vec<f32> = gate.iter().zip(&up).map(|(&g, &u)| r::swiglu(g, u)).collect();
    let want = r::quantize(&a);
    decides_words("a block's maximum over its first word", &want.0, &first_word_maxima(&a))?;
    let gate_up: Vec<f32> = gate.iter().chain(&up).copied().collect();
    same_quantized("swiglu_quant", &ops::swiglu_quant(client, target, &gate_up)?, &want)
}

/// The inputs decide `what`: the variant's words differ from the reference's somewhere.
fn decides_words(what: &str, reference: &[i32], variant: &[i32]) -> Result<(), Failed> {
    if reference == variant {
        return Err(format!("the inputs cannot fail the check: {what} gives the reference's words").into());
    }
    Ok(())
}

/// A decode step's matvec with the op before it in the cube ([`island_llm::act_matvec`]), each
/// kind on the inputs of that op's own check, against the reference's op, quantizer and matvec:
/// RMSNorm rows (the QKV and gate-up projections, 100 rows: a cube's rows past the last), the
/// plain values with the residual add (the output projection) and SwiGLU pairs with it (the
/// down projection, 48 blocks: lanes of 6).
fn act_matvec(client: &cubecl::prelude::Client, target: Target, ty: QuantType) -> Result<(), Failed> {
    let mut rng = Rng::new(0x5eed_000a ^ ty as u64);
    let (dim, ffn, rows) = (CONFIG.dim, CONFIG.ffn, 100);
    let w = matrix(ty, rows, dim, &mut rng)?;
    let down = matrix(ty, rows, ffn, &mut rng)?;
    let g: Vec<f32> = (0..dim).map(|_| rng.wide(2)).collect();
    let y0: Vec<f32> = (0..rows).map(|r| if r % 7 == 0 { -0.0 } else { rng.wide(12) }).collect();
    let expect = |w: &QuantMatrix, x: &[f32], add: bool| {
        let mut y = if add { y0.clone() } else { vec![0.0; rows] };
        r::matvec(w, x, &mut y, add);
        y
    };
    // A random row, one whose square overflows, subnormals, zeros, and zeros of both signs.
    let norm_rows = norm_rows(&mut rng, dim, 1);
    for (k, x) in norm_rows.iter().take(5).enumerate() {
        let h = r::rmsnorm(x, &g, CONFIG.eps);
        let want = expect(&w, &h, false);
        if k == 0 {
            decides("the activation not normalised", &want, &expect(&w, x, false))?;
        }
        let got = ops::act_matvec(client, target, Act::Norm, &w, x, &g, CONFIG.eps, None)?;
        same_bits(&format!("{ty:?} RMSNorm and matvec, row {k}"), &got, &want)?;
    }
    let x = activations(dim, &mut rng);
    let got = ops::act_matvec(client, target, Act::Plain, &w, &x, &[], 0.0, Some(&y0))?;
    same_bits(&format!("{ty:?} matvec with the residual"), &got, &expect(&w, &x, true))?;
    let (gate, up) = swiglu_pairs(ffn, &mut rng);
    let a: Vec<f32> = gate.iter().zip(&up).map(|(&g, &u)| r::swiglu(g, u)).collect();
    let gate_up: Vec<f32> = gate.iter().chain(&up).copied().collect();
    let got = ops::act_matvec(client, target, Act::Swiglu, &down, &gate_up, &[], 0.0, Some(&y0))?;
    same_bits(&format!("{ty:?} SwiGLU and matvec with the residual"), &got, &expect(&down, &a, true))
}

/// A decode step's attention in one kernel ([`island_llm::attention_step`]) against the
/// reference's RoPE, scores, softmax and weighted sum: at the first position (one term), at a
/// position of a 64-position cache, and past the cube's 256 units in a cache of 320; the
/// query, key and value of wide magnitudes, zeros in the cache, and a stale key at the
/// token's own slot (the kernel must use the key it rotates).
fn attention_step(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    let mut rng = Rng::new(0x5eed_000b);
    let (dim, kv, hd) = (CONFIG.dim, CONFIG.kv_dim(), CONFIG.head_dim);
    let (half, group) = (hd / 2, SHAPE.heads / SHAPE.kv_heads);
    for (context, pos) in [(64usize, 0usize), (64, 45), (320, 300)] {
        let shape = AttnShape { context, ..SHAPE };
        let (cos, sin) = rope_tables(&CONFIG, context);
        let qkv: Vec<f32> = (0..dim + 2 * kv).map(|i| if i % 17 == 0 { -0.0 } else { rng.wide(3) }).collect();
        let cache = context * kv;
        let kc: Vec<f32> = (0..cache).map(|i| if i % 13 == 0 { 0.0 } else { rng.wide(3) }).collect();
        let vc: Vec<f32> = (0..cache).map(|i| if i % 11 == 0 { 0.0 } else { rng.wide(10) }).collect();
        let rotate = |from: usize| -> Vec<f32> {
            (0..half)
                .flat_map(|i| {
                    let t = pos * half + i;
                    let (y0, y1) = r::rope_pair(qkv[from + 2 * i], qkv[from + 2 * i + 1], cos[t], sin[t]);
                    [y0, y1]
                })
                .collect()
        };
        let (mut kc_want, mut vc_want) = (kc.clone(), vc.clone());
        for g in 0..SHAPE.kv_heads {
            let at = pos * kv + g * hd;
            kc_want[at..at + hd].copy_from_slice(&rotate(dim + g * hd));
            vc_want[at..at + hd].copy_from_slice(&qkv[dim + kv + g * hd..dim + kv + (g + 1) * hd]);
        }
        let n = pos + 1;
        let attend = |keys: &[f32], serial: bool| -> Vec<f32> {
            let mut out = Vec::new();
            for h in 0..SHAPE.heads {
                let (q, g) = (rotate(h * hd), h / group);
                let mut s: Vec<f32> =
                    (0..n).map(|j| r::score(&q, &keys[j * kv + g * hd..j * kv + (g + 1) * hd])).collect();
                r::softmax(&mut s);
                for d in 0..hd {
                    let v = |j: usize| vc_want[j * kv + g * hd + d];
                    out.push(if serial {
                        (0..n).fold(0.0f32, |a, j| s[j].mul_add(v(j), a))
                    } else {
                        r::weighted_sum(&s, (0..n).map(v))
                    });
                }
            }
            out
        };
        let want = attend(&kc_want, false);
        if pos > 8 {
            decides("the weighted sum in one chain", &want, &attend(&kc_want, true))?;
            decides("the cache's stale key at the token's slot", &want, &attend(&kc, false))?;
        }
        let got = ops::attention_step(client, target, &qkv, (&cos, &sin), pos as u32, (&kc, &vc), shape)?;
        let at = format!("attention_step at position {pos} of {context}");
        same_bits(&format!("{at}: the outputs"), &got.att, &want)?;
        same_bits(&format!("{at}: the key cache"), &got.kc, &kc_want)?;
        same_bits(&format!("{at}: the value cache"), &got.vc, &vc_want)?;
    }
    Ok(())
}

/// The token chosen on the device ([`island_llm::choose`]) against [`generate::argmax`] on
/// logits that decide it: the largest at either end, in the last round's clamped tail and in
/// each unit's last term; ties inside a unit, across units and across the tree's halves; `+0`
/// against `−0`; NaN everywhere but one value, NaN everywhere, and `−∞` everywhere; random
/// vectors with few distinct values (ties common). The position advances by one each time.
fn choose(client: &cubecl::prelude::Client, target: Target) -> Result<(), Failed> {
    use cubecl::prelude::*;
    use island_llm::generate;
    use island_llm::kernels::slots;
    let vocab = 49_152 + 7;
    let mut cases: Vec<Vec<f32>> = Vec::new();
    let flat = |v: f32| vec![v; vocab];
    let with = |base: f32, at: &[(usize, f32)]| {
        let mut v = vec![base; vocab];
        for &(i, x) in at {
            v[i] = x;
        }
        v
    };
    for at in [0, 1, 255, 256, 1023, 1024, vocab - 8, vocab - 1] {
        cases.push(with(1.0, &[(at, 2.0)]));
    }
    cases.push(with(1.0, &[(3, 2.0), (3 + 1024, 2.0), (vocab - 1, 2.0)]));
    cases.push(with(1.0, &[(vocab - 1, 2.0), (vocab - 2, 2.0)]));
    cases.push(with(-1.0, &[(700, 0.0), (5, -0.0)]));
    cases.push(with(-1.0, &[(5, -0.0), (700, 0.0)]));
    cases.push(with(f32::NAN, &[(4000, -3.0)]));
    cases.push(flat(f32::NAN));
    cases.push(flat(f32::NEG_INFINITY));
    cases.push(with(f32::NEG_INFINITY, &[(0, f32::NAN), (9, f32::NEG_INFINITY)]));
    let mut rng = Rng::new(0x2026_1204);
    for _ in 0..4 {
        cases.push((0..vocab).map(|_| rng.below(5) as f32).collect());
    }
    let step = client.create_from_slice(u32::as_bytes(&[7, 8, 0]));
    let parts = client.empty(island_llm::choose::PARTS_LEN * 4);
    for (k, logits) in cases.iter().enumerate() {
        let h = client.create_from_slice(f32::as_bytes(logits));
        island_llm::choose::launch(client, &h, &step, &parts, vocab, target)?;
        let got = u32::from_bytes(&client.read_one(step.clone())?).to_vec();
        let want = generate::argmax(logits);
        let pos = 8 + k as u32;
        if got[slots::TOKEN] != want || got[slots::POS] != pos || got[slots::N] != pos + 1 {
            return Err(format!(
                "case {k}: the device chose {} at position {}, n {}; the first largest is {want}, position {pos}",
                got[slots::TOKEN],
                got[slots::POS],
                got[slots::N]
            )
            .into());
        }
    }
    Ok(())
}
