//! The model engine (`examples/llm`) end to end: on the CPU runtime its logits equal the
//! plain-Rust reference's bit for bit (every op dispatched through its cell), on every device
//! runtime of the conformance list they equal the CPU runtime's, a prompt gives every token the
//! reference's logits whether it runs in one batch, in batches or one token a step, and a bad
//! model file or recorded run is an error that names it.

use island_llm::cells;
use island_llm::generate::{self, Agreement};
use island_llm::reference::Reference;
use island_llm::tokenizer::Tok;
use island_llm::{Engine, LlmError, Model, model_file, record};
use island_runtime::cell::{self, CellKey};
use island_runtime::dispatch;
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::{Failed, Trial};
use std::sync::OnceLock;

/// The prompt of every run here, and the steps each run generates.
const PROMPT: &str = "The three primary colors are";
const STEPS: usize = 3;
const CONTEXT: usize = 16;
/// Prompt tokens a pass: the prompt runs in batches of 4, then 1.
const BATCH: usize = 4;

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        Trial::test("examples::llm::cpu_runtime_logits_equal_the_reference", cpu_equals_reference)
            .with_kind(proofs::MODEL),
    ];
    trials.push(
        Trial::test("examples::llm::cpu_prompt_batches_give_every_token_the_reference_logits", || {
            batches_equal_reference(RuntimeName::Cpu)
        })
        .with_kind(proofs::MODEL),
    );
    if let Ok(runtimes) = proofs::conformance_runtimes() {
        for r in runtimes {
            let ignored = !proofs::runs_engine_kernels(r);
            // Every runtime built in, WGSL included: about 100 s on lavapipe since naga is
            // optimised in dev builds (the workspace's Cargo.toml).
            // Fused and unfused apart, so that the two run beside each other (through WGSL the
            // pair took 269 s as one trial, most of it naga's and lavapipe's compilers, one
            // thread each; 2-core x86-64, 2026-12-07).
            for fuse in [true, false] {
                let name = format!(
                    "examples::llm::{}_{}logits_equal_the_cpu_runtime",
                    r.as_str(),
                    if fuse { "" } else { "unfused_" }
                );
                trials.push(Trial::test(name, move || device_equals_cpu(r, fuse)).with_kind(proofs::MODEL));
            }
            let name = format!("examples::llm::{}_prompt_batches_give_every_token_the_reference_logits", r.as_str());
            trials.push(
                Trial::test(name, move || batches_equal_reference(r))
                    .with_kind(proofs::MODEL)
                    .with_ignored_flag(ignored),
            );
        }
    }
    trials.extend(
        [
            Trial::test("examples::llm::tokenizer_splits_digits_and_keeps_control_tokens", tokenizer),
            Trial::test("examples::llm::exp_matches_its_definition_at_the_edges", exp_edges),
            Trial::test("examples::llm::argmax_is_the_first_largest_logit", argmax),
            Trial::test("examples::llm::bad_model_files_are_errors", bad_files),
            Trial::test("examples::llm::malformed_recorded_runs_are_errors", bad_records),
        ]
        .map(|t| t.with_kind("example")),
    );
    trials
}

fn model() -> Result<&'static Model, Failed> {
    static MODEL: OnceLock<Result<Model, Failed>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let path = model_file::default_path()?;
            let bytes = model_file::read(&path, true)?;
            Ok(Model::from_gguf(&bytes)?)
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn prompt(model: &Model) -> Result<Vec<u32>, Failed> {
    Ok(Tok::new(&model.vocab)?.encode(PROMPT)?)
}

fn run_on(r: RuntimeName, model: &Model, prompt: &[u32]) -> Result<generate::Generation, Failed> {
    run_with(r, model, prompt, true)
}

/// [`run_on`], with the fused kernels (`crate::fused`) or without.
fn run_with(r: RuntimeName, model: &Model, prompt: &[u32], fuse: bool) -> Result<generate::Generation, Failed> {
    let client = r.client()?;
    let mut engine = Engine::new(&client, model, (CONTEXT, BATCH), None)?;
    engine.set_fusion(fuse);
    Ok(generate::generate(&mut engine, prompt, STEPS, None, |_, _| {})?)
}

fn agree(what: &str, a: &generate::Generation, b: &generate::Generation) -> Result<(), Failed> {
    match generate::compare(a, b) {
        Agreement::Identical { steps } if steps == STEPS => Ok(()),
        other => Err(format!("{what}: {other:?} (tokens {:?} and {:?})", a.tokens(), b.tokens()).into()),
    }
}

/// Every kernel's order and rounding against their plain-Rust definition, on the real weights
/// and activations of 7 positions (30 layers each: every op thousands of times, at the model's
/// shapes), logits compared bit for bit, with the fused kernels and without.
/// It also shows that the decode step dispatches every op through its cell: each cell the step
/// needs for this model (its matvecs' quant types, with and without the residual add) was chosen
/// on the CPU runtime's device during the run (an op launched past its op function would leave
/// its cell unchosen), and every other cell the engine's crate registers is a matvec of a quant
/// type this model does not use there.
fn cpu_equals_reference() -> Result<(), Failed> {
    let model = model()?;
    let prompt = prompt(model)?;
    let ours = cpu_generation()?;
    let theirs = generate::generate(&mut Reference::new(model, CONTEXT), &prompt, STEPS, None, |_, _| {})?;
    agree("the CPU runtime against the reference", ours, &theirs)?;
    golden(ours)?;
    stopped_early(model, &prompt, &theirs)?;
    // Each op and its quantizer as two kernels: the same bits.
    let unfused = run_with(RuntimeName::Cpu, model, &prompt, false)?;
    agree("the CPU runtime, unfused, against the reference", &unfused, &theirs)?;
    let mut needed = vec![
        cells::embed::KEY,
        cells::rmsnorm::KEY,
        cells::rope::KEY,
        cells::attention::SCORES_KEY,
        cells::attention::SOFTMAX_KEY,
        cells::attention::ATTEND_KEY,
        cells::SWIGLU_KEY,
        cells::key(model.embedding.ty),
    ];
    for l in &model.layers {
        needed.extend([cells::key(l.qkv.ty), cells::key(l.gate_up.ty)]);
        needed.extend([cells::matvec::key_add(l.out.ty), cells::matvec::key_add(l.down.ty)]);
    }
    let ran: Vec<CellKey> = dispatch::dispatched(&RuntimeName::Cpu.client()?).into_iter().map(|(k, _)| k).collect();
    let missed: Vec<String> = needed.iter().filter(|k| !ran.contains(k)).map(|k| k.to_string()).collect();
    if !missed.is_empty() {
        return Err(
            format!("the engine's step did not dispatch these cells through their op functions: {missed:?}").into()
        );
    }
    let unknown: Vec<String> = cell::ops()
        .into_iter()
        .filter(|r| r.krate == "island-llm" && !needed.contains(&r.op.key) && !r.op.key.op.starts_with("matvec"))
        .map(|r| r.op.key.to_string())
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(format!("cells the engine registers but its step never needs: {unknown:?}").into())
    }
}

/// The committed logit hashes of this trial's run on the CPU runtime
/// (`examples/llm/golden/cpu-trial.json`, rewritten under `ISLANDS_BLESS=1`). The engine and its
/// reference share host-side tables and definitions (RoPE's angles, `exp`'s polynomial, the
/// tokenizer), so a change there moves both alike and their agreement cannot see it; the
/// committed bytes can (and the H200's CUDA and Vulkan runs gave the CPU runtime's bytes).
fn golden(ours: &generate::Generation) -> Result<(), Failed> {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/llm/golden/cpu-trial.json"));
    if island_runtime::settings::bless()? {
        std::fs::create_dir_all(path.parent().ok_or("no parent")?).map_err(|e| e.to_string())?;
        record::write(path, ours)?;
        return Ok(());
    }
    let want = record::read(path).map_err(|e| format!("{e} (ISLANDS_BLESS=1 writes it)"))?;
    let diverged = ours.steps.iter().zip(&want.steps).position(|(a, b)| (a.token, a.hash) != (b.token, b.hash));
    match (ours.prompt == want.prompt, ours.steps.len() == want.steps.len(), diverged) {
        (true, true, None) => Ok(()),
        (false, ..) => Err(format!("{}: another prompt ({:?} against {:?})", path.display(), ours.prompt, want.prompt).into()),
        (_, false, _) => Err(format!("{}: {} steps against {}", path.display(), ours.steps.len(), want.steps.len()).into()),
        (_, _, Some(i)) => Err(format!(
            "the CPU runtime's logits left the committed bytes at step {i} (token {} hash {} against token {} hash {}): \
             a change of the definitions; if it is meant, bless it (ISLANDS_BLESS=1) and say why",
            ours.steps[i].token,
            ours.steps[i].short_hash(),
            want.steps[i].token,
            want.steps[i].short_hash()
        )
        .into()),
    }
}

/// A prompt's tokens and, for each, the logits after it.
type PromptLogits = (Vec<u32>, Vec<Vec<f32>>);

/// A prompt with a chat template's control tokens and a number: every token's logits from the
/// plain-Rust reference (one token a step), once.
fn batch_case() -> Result<&'static PromptLogits, Failed> {
    static CASE: OnceLock<Result<PromptLogits, Failed>> = OnceLock::new();
    CASE.get_or_init(|| {
        let model = model()?;
        let tok = Tok::new(&model.vocab)?;
        let prompt = tok.encode("<|im_start|>user\nName 3 primary colors.<|im_end|>\n")?;
        let mut r = Reference::new(model, CONTEXT + 8);
        let logits = prompt.iter().map(|&t| r.step(t, true).expect("logits were asked for")).collect();
        Ok((prompt, logits))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Batch invariance: on runtime `r`, the prompt of [`batch_case`] in one batch, in batches of 5
/// (the last of 1), in batches of 3 after two tokens a step, and one token a step gives every
/// token the reference's logits bit for bit; in one batch unfused too (the fused kernels where
/// `r` runs them). Batches of more than one token take each matvec unit's tokens in groups
/// (`kernels::TOKENS_PER_UNIT`, here whole groups and parts of one), one-token steps run the
/// graph replay where `r` records one.
fn batches_equal_reference(r: RuntimeName) -> Result<(), Failed> {
    let model = model()?;
    let (prompt, want) = batch_case()?;
    let client = r.client()?;
    let n = prompt.len();
    // (what, fused, the batch the engine holds, the prompt's runs: tokens a call, or 0 for `step`)
    let plans: [(&str, bool, usize, &[usize]); 5] = [
        ("one batch", true, n, &[n]),
        ("one batch, unfused", false, n, &[n]),
        ("batches of 5", true, 5, &[n]),
        ("two steps, then batches of 3", true, 3, &[0, 0, n - 2]),
        ("one token a step", true, 1, &[]),
    ];
    let mut failures = Vec::new();
    for (what, fuse, batch, runs) in plans {
        let mut engine = Engine::new(&client, model, (CONTEXT + 8, batch), None)?;
        engine.set_fusion(fuse);
        let mut got = Vec::with_capacity(n);
        let mut at = 0;
        for &run in runs {
            if run == 0 {
                got.push(engine.step(prompt[at], true)?.expect("logits were asked for"));
                at += 1;
            } else {
                got.extend(engine.prefill(&prompt[at..at + run], true)?);
                at += run;
            }
        }
        while at < n {
            got.push(engine.step(prompt[at], true)?.expect("logits were asked for"));
            at += 1;
        }
        let differ: Vec<usize> = (0..n).filter(|&i| got.get(i).map(|g| bits(g)) != Some(bits(&want[i]))).collect();
        if !differ.is_empty() {
            failures.push(format!("{what}: tokens {differ:?} of {n} differ"));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("`{}` against the reference: {}", r.as_str(), failures.join("; ")).into())
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The CPU runtime's run of the trials' prompt (fused), once for all the trials that compare
/// with it: they run beside each other, and the first to ask computes it.
fn cpu_generation() -> Result<&'static generate::Generation, Failed> {
    static RUN: OnceLock<Result<generate::Generation, Failed>> = OnceLock::new();
    RUN.get_or_init(|| {
        let model = model()?;
        run_on(RuntimeName::Cpu, model, &prompt(model)?)
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The device's run of the trials' prompt, fused or not, against the CPU runtime's (fused). The
/// device runs first, so that the CPU's, which a trial beside computes, is ready by the time it
/// is compared.
fn device_equals_cpu(r: RuntimeName, fuse: bool) -> Result<(), Failed> {
    let model = model()?;
    let prompt = prompt(model)?;
    let device = run_with(r, model, &prompt, fuse)?;
    let what = if fuse { "" } else { ", unfused," };
    agree(&format!("`{}`{what} against the CPU runtime", r.as_str()), &device, cpu_generation()?)
}

/// Texts whose byte-level BPE pieces are known: whole words with their space marker `Ġ`, a
/// control token matched whole, a newline (`Ċ`), and a number split into its digits (the
/// `smollm` pre-tokenizer); each must encode to those vocabulary entries and decode back.
fn tokenizer() -> Result<(), Failed> {
    let vocab = &model()?.vocab;
    let tok = Tok::new(vocab)?;
    let cases: [(&str, &[&str]); 3] = [
        (PROMPT, &["The", "Ġthree", "Ġprimary", "Ġcolors", "Ġare"]),
        ("<|im_start|>user\nHi", &["<|im_start|>", "user", "Ċ", "Hi"]),
        ("in 2026", &["in", "Ġ", "2", "0", "2", "6"]),
    ];
    for (text, pieces) in cases {
        let want = pieces
            .iter()
            .map(|p| {
                vocab
                    .tokens
                    .iter()
                    .position(|t| t == p)
                    .map(|i| i as u32)
                    .ok_or_else(|| Failed::from(format!("`{p}` is not in the vocabulary")))
            })
            .collect::<Result<Vec<u32>, Failed>>()?;
        let got = tok.encode(text)?;
        if got != want {
            return Err(format!("{text:?} encodes to {got:?}, expected {want:?} ({pieces:?})").into());
        }
        if tok.decode(&got)? != text {
            return Err(format!("{text:?} does not decode back to itself").into());
        }
    }
    Ok(())
}

/// [`generate::argmax`] (16 lanes, then the first index of the maximum) against its definition
/// walked in order: ties inside a chunk, across chunks and in the tail, NaN (at the start, where
/// a walk that compares with its first value would let it win), every value NaN, ±0, ±∞, and
/// lengths around the lane count.
fn argmax() -> Result<(), Failed> {
    fn walk(v: &[f32]) -> u32 {
        let mut best: Option<usize> = None;
        for (i, &x) in v.iter().enumerate() {
            if !x.is_nan() && best.is_none_or(|b| x > v[b]) {
                best = Some(i);
            }
        }
        best.unwrap_or(0) as u32
    }
    let mut cases: Vec<Vec<f32>> = vec![
        vec![],
        vec![f32::NAN],
        vec![f32::NAN; 40],
        vec![f32::NAN, 1.0, 3.0, 3.0],
        vec![-0.0, 0.0, -0.0],
        vec![0.0, -0.0],
        vec![f32::NEG_INFINITY; 33],
        vec![f32::NEG_INFINITY, f32::NAN, f32::NEG_INFINITY],
        vec![1.0, f32::INFINITY, 2.0, f32::INFINITY],
        (0..17).map(|i| if i == 16 { 5.0 } else { 1.0 }).collect(),
        (0..40).map(|i| if i == 7 || i == 39 { 2.0 } else { 1.0 }).collect(),
    ];
    let mut seed = 0x2026_1204_u64;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    for len in [1, 15, 16, 17, 31, 32, 33, 47, 100, 49152] {
        for _ in 0..20 {
            // Few distinct values, so that ties are common; now and then a NaN.
            let v: Vec<f32> =
                (0..len).map(|_| if next() % 50 == 0 { f32::NAN } else { (next() % 9) as f32 - 4.0 }).collect();
            cases.push(v);
        }
    }
    for v in &cases {
        let (got, want) = (generate::argmax(v), walk(v));
        if got != want {
            return Err(format!("argmax of {} values gave {got}, the first largest is {want}", v.len()).into());
        }
    }
    Ok(())
}

/// The kernel `exp` against [`island_llm::math::exp_host`] on the values where it changes
/// regime: NaN, ±∞, the overflow and underflow thresholds and their neighbours, the subnormal
/// flush, zero of both signs, reduction boundaries `k·ln2 ± ½ulp`, and a sweep.
fn exp_edges() -> Result<(), Failed> {
    use cubecl::prelude::*;
    let client = proofs::cpu()?;
    let mut xs = vec![
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        88.8,
        -88.0,
        88.72283,
        -87.33654,
        -87.3365,
        1e-30,
        -1e-30,
    ];
    for base in [88.8f32, -88.0, 88.72283, -87.33654, 0.0] {
        let b = base.to_bits();
        xs.extend([f32::from_bits(b + 1), f32::from_bits(b.wrapping_sub(1))]);
    }
    for k in -127..=128 {
        let x = k as f32 * std::f32::consts::LN_2 * 0.5;
        xs.extend([x, f32::from_bits(x.to_bits() + 1), f32::from_bits(x.to_bits().wrapping_sub(1))]);
    }
    xs.extend((0..4096).map(|i| -90.0 + i as f32 * (180.0 / 4096.0)));
    xs.retain(|x| x.is_nan() || x.to_bits() != 0xffff_ffff);
    let n = xs.len();
    let (x, y) = (client.create_from_slice(f32::as_bytes(&xs)), client.empty(n * 4));
    // SAFETY: both handles hold `n` f32 values.
    unsafe {
        island_llm::math::exp_each::launch_with(
            &client,
            CubeCount::Static((n as u32).div_ceil(64), 1, 1),
            CubeDim::new_1d(64),
            BufferArg::from_raw_parts(x, n),
            BufferArg::from_raw_parts(y.clone(), n),
            island_runtime::Target::for_client(&client),
        );
    }
    let got = f32::from_bytes(&island_runtime::readback::read(&client, y)?).to_vec();
    for (i, &x) in xs.iter().enumerate() {
        let want = island_llm::math::exp_host(x);
        if got[i].to_bits() != want.to_bits() {
            return Err(format!("exp({x:e}) = {:e} in the kernel, {want:e} by definition", got[i]).into());
        }
        let exact = (x as f64).exp();
        let close = if x.is_nan() {
            want.is_nan()
        } else if exact > f32::MAX as f64 {
            want == f32::INFINITY
        } else if exact < f32::MIN_POSITIVE as f64 {
            want == 0.0
        } else {
            (want as f64 / exact - 1.0).abs() < 1e-6
        };
        if !close {
            return Err(format!("exp({x:e}) = {want:e}, but e^x = {exact:e}").into());
        }
        if want != 0.0 && want < f32::MIN_POSITIVE {
            return Err(format!("exp({x:e}) = {want:e} is subnormal; the definition flushes it").into());
        }
    }
    Ok(())
}

fn bad_files() -> Result<(), Failed> {
    let dir = std::env::temp_dir().join(format!("islands-llm-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let missing = dir.join("absent.gguf");
    let short = dir.join("short.gguf");
    std::fs::write(&short, b"GGUF\x03\x00\x00\x00 not a model")?;
    let checks: Vec<(&str, Result<Model, LlmError>, &str)> = vec![
        ("a missing file", model_file::read(&missing, true).and_then(|b| Model::from_gguf(&b)), "fetch-model.sh"),
        (
            "a file of the wrong size",
            model_file::read(&short, true).and_then(|b| Model::from_gguf(&b)),
            "bytes, expected",
        ),
        ("a truncated GGUF", model_file::read(&short, false).and_then(|b| Model::from_gguf(&b)), "does not parse"),
        ("no GGUF at all", Model::from_gguf(b"not a gguf file at all"), "does not parse"),
    ];
    let _ = std::fs::remove_dir_all(&dir);
    for (what, result, needle) in checks {
        match result {
            Ok(_) => return Err(format!("{what} was accepted").into()),
            Err(e) if e.to_string().contains(needle) => {}
            Err(e) => return Err(format!("{what}: the error `{e}` does not say `{needle}`").into()),
        }
    }
    Ok(())
}

/// A generation that stops at the end-of-sequence token leaves the engine where one step at a
/// time would (two steps in flight: the one run ahead is taken back), and the next step from
/// there gives the reference's logits.
fn stopped_early(model: &Model, prompt: &[u32], theirs: &generate::Generation) -> Result<(), Failed> {
    let stop = theirs.steps[1].token;
    let at = theirs.steps.iter().position(|s| s.token == stop).expect("step 1 has the token");
    let client = RuntimeName::Cpu.client()?;
    let mut engine = Engine::new(&client, model, (CONTEXT, BATCH), None)?;
    let run = generate::generate(&mut engine, prompt, STEPS, Some(stop), |_, _| {})?;
    if run.steps.len() != at + 1 || engine.position() != prompt.len() + at {
        return Err(format!(
            "stopped at token {stop}: {} steps and position {}, one step at a time gives {} and {}",
            run.steps.len(),
            engine.position(),
            at + 1,
            prompt.len() + at
        )
        .into());
    }
    let next = engine.step(stop, true)?.expect("logits were asked for");
    if generate::hash(&next) != theirs.steps[at + 1].hash {
        return Err("after a stop, the next step's logits differ from the reference's".into());
    }
    Ok(())
}

/// A recorded run reads back as written; a malformed hash or token is an error naming its line,
/// never a panic (a multi-byte character in a hash of 64 bytes included).
fn bad_records() -> Result<(), Failed> {
    let step = |token, b| generate::Step { token, hash: [b; 32], logits: Vec::new() };
    let run = generate::Generation {
        prompt: vec![1, 2],
        steps: vec![step(7, 0xab), step(8, 0x0f)],
        prefill: Default::default(),
        decode: Default::default(),
        host: Default::default(),
    };
    let text = record::format(&run);
    let back = record::parse(&text)?;
    if back.prompt != run.prompt
        || back.steps.iter().zip(&run.steps).any(|(a, b)| (a.token, a.hash) != (b.token, b.hash))
    {
        return Err(format!("a recorded run does not read back:\n{text}").into());
    }
    let good = "ab".repeat(32);
    let checks = [
        ("a hash with a two-byte character", good.replacen("ab", "é", 1), "line 5"),
        ("a hash of 63 digits", good[1..].to_string(), "line 5"),
        ("a hash that is not hexadecimal", good.replacen("ab", "xy", 1), "line 5"),
    ];
    for (what, hash, needle) in checks {
        let bad = text.replacen(&"0f".repeat(32), &hash, 1);
        match std::panic::catch_unwind(|| record::parse(&bad)) {
            Err(_) => return Err(format!("{what}: the reader panicked").into()),
            Ok(Ok(_)) => return Err(format!("{what} was accepted").into()),
            Ok(Err(e)) if e.to_string().contains(needle) => {}
            Ok(Err(e)) => return Err(format!("{what}: the error `{e}` does not say `{needle}`").into()),
        }
    }
    if record::parse(&text.replacen("\"token\": 8", "\"token\": 4294967296", 1)).is_ok() {
        return Err("a token past u32 was accepted".into());
    }
    // A missing file is named as the recorded run it should be, not as a model file.
    let missing = std::env::temp_dir().join("islands-no-such-run.json");
    match record::read(&missing) {
        Ok(_) => return Err("a missing recorded run was read".into()),
        Err(e) if e.to_string().contains("recorded run") && e.to_string().contains("islands-no-such-run.json") => {}
        Err(e) => return Err(format!("a missing recorded run: the error `{e}` does not name it as one").into()),
    }
    Ok(())
}
