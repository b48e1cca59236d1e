//! `island-llm`: greedy text generation with SmolLM2-135M on any CubeCL runtime, with a hash of
//! every step's logits, and byte-for-byte comparisons with the CPU runtime or the plain-Rust
//! reference.
//!
//! ```text
//! island-llm "The three primary colors are"                     # CPU runtime, 32 tokens
//! island-llm --runtime cuda --tokens 64 --compare cpu "…"       # and the CPU runtime beside it
//! island-llm --compare reference --tokens 2 "…"                 # the plain-Rust definition
//! island-llm --compare float "…"                                # an f64 textbook forward pass
//! island-llm --runtime vulkan --expect hashes.json "…"          # against a recorded run
//! ```
//!
//! Exit status: 0 when every comparison asked for holds, 1 when one differs, 2 for bad input
//! (an `ISLANDS_*` setting it refuses included: `docs/settings.md`).

use clap::Parser;
use island_llm::engine::StepKernels;
use island_llm::float_reference::FloatReference;
use island_llm::generate::{self, Agreement, Generation};
use island_llm::reference::Reference;
use island_llm::tokenizer::Tok;
use island_llm::{Engine, LlmError, Model, model_file, record};
use island_runtime::runtimes::RuntimeName;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(version, about = "SmolLM2-135M on island kernels: the same logits, byte for byte, on every backend")]
struct Args {
    /// The prompt (raw text; --chat wraps it in the model's chat template).
    prompt: String,
    /// The runtime to generate on: cpu, cuda, vulkan, webgpu (as built).
    #[arg(long, default_value = "cpu", value_parser = parse_runtime)]
    runtime: RuntimeName,
    /// Tokens to generate.
    #[arg(long, default_value_t = 32)]
    tokens: usize,
    /// Positions the KV cache holds (prompt and generated tokens).
    #[arg(long, default_value_t = 512)]
    context: usize,
    /// Prompt tokens run in one pass at most (1: one token a step); at most --context. The
    /// bytes are the same.
    #[arg(long, default_value_t = 512)]
    batch: usize,
    /// The GGUF file (default: $ISLANDS_MODEL, else the cache `scripts/fetch-model.sh` fills).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Run a GGUF other than the checked SmolLM2 file (no size or hash check).
    #[arg(long)]
    any_model: bool,
    /// Wrap the prompt as one user message of the model's chat template.
    #[arg(long)]
    chat: bool,
    /// Keep only the prompt's first N tokens (to time a prompt of a given length).
    #[arg(long, value_name = "N")]
    prompt_tokens: Option<usize>,
    /// Also run `cpu` (the CPU runtime) or `reference` (plain Rust, the same operations) and
    /// compare every step's logits byte for byte, or `float` (the textbook forward pass in f64 on
    /// the same tokens) and report how far the logits are and whether greedy picks agree.
    #[arg(long, value_parser = ["cpu", "reference", "float"])]
    compare: Option<String>,
    /// Write the run (tokens and logit hashes, JSON) to this file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Compare every step's logit hash with a run written by --record.
    #[arg(long)]
    expect: Option<PathBuf>,
    /// Generate all --tokens even past the end-of-sequence token (for timing).
    #[arg(long)]
    ignore_eos: bool,
    /// Before the timed run, run the prompt and one step once (every kernel compiled, the step
    /// recorded) and start the sequence again: the times are then the kernels', not the
    /// compiler's.
    #[arg(long)]
    warmup: bool,
    /// Time the generation this many times (the first as reported above, then again from the
    /// start of the sequence), as `llama-bench -r N` does, and print each decode rate with their
    /// mean and standard deviation. A device's clocks may still be rising during the first
    /// (NVIDIA's Vulkan driver: tens of tokens). Every repetition must give the first one's
    /// logits, byte for byte, else the exit status is 1.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    repetitions: u32,
    /// Hash each step's logits before the next step is enqueued, not while it runs (to measure
    /// what the overlap saves). The bytes are the same.
    #[arg(long)]
    serial_host: bool,
    /// Print nothing per step (only the summary).
    #[arg(long)]
    quiet: bool,
    /// Launch every kernel of every step, instead of replaying the first step's recorded
    /// launches where the runtime records graphs (CUDA). The bytes are the same.
    #[arg(long)]
    eager: bool,
    /// Run each op and the activation quantizer after it as two kernels, instead of one fused
    /// kernel where both cells run their twins. The bytes are the same.
    #[arg(long)]
    unfused: bool,
    /// Which of a one-token step's fused kernels run where they may: the op before each
    /// matvec with its quantizer and the matvec in one launch (`matvec`), the attention in one
    /// (`attention`), both or none. The bytes are the same.
    #[arg(long, default_value = "both", value_parser = ["both", "matvec", "attention", "none"])]
    step_kernels: String,
}

fn parse_runtime(name: &str) -> Result<RuntimeName, String> {
    RuntimeName::parse(name).ok_or_else(|| format!("unknown runtime `{name}`; expected one of {}", RuntimeName::list()))
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match settings().and_then(|()| run(&Args::parse())) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("island-llm: {e}");
            ExitCode::from(2)
        }
    }
}

/// Every `ISLANDS_*` setting (`docs/settings.md`), then those launches and the cells' dispatch
/// consult: a wrong one is refused here, before the command line is read and before any work.
fn settings() -> Result<(), LlmError> {
    island_runtime::settings::check_all()?;
    island_runtime::policy::settings().map_err(Clone::clone)?;
    island_runtime::dispatch::settings().map_err(Clone::clone)?;
    Ok(())
}

fn chat(prompt: &str) -> String {
    format!(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
    )
}

fn run(args: &Args) -> Result<bool, LlmError> {
    let path = match &args.model {
        Some(path) => path.clone(),
        None => model_file::default_path()?,
    };
    let bytes = model_file::read(&path, !args.any_model)?;
    let model = Model::from_gguf(&bytes)?;
    drop(bytes);
    let tok = Tok::new(&model.vocab)?;
    let text = if args.chat { chat(&args.prompt) } else { args.prompt.clone() };
    let mut prompt = tok.encode(&text)?;
    if let Some(n) = args.prompt_tokens {
        if n > prompt.len() {
            return Err(LlmError::Setting(format!("--prompt-tokens {n}: the prompt has only {} tokens", prompt.len())));
        }
        prompt.truncate(n);
    }
    if prompt.is_empty() || args.tokens == 0 {
        return Err(LlmError::Setting("the prompt and --tokens must be non-empty".into()));
    }
    if prompt.len().checked_add(args.tokens).is_none_or(|n| n > args.context) {
        return Err(LlmError::Setting(format!(
            "{} prompt tokens and {} to generate do not fit a context of {} (--context)",
            prompt.len(),
            args.tokens,
            args.context
        )));
    }
    let expected = args.expect.as_deref().map(record::read).transpose()?;
    if let Some(e) = &expected
        && e.prompt != prompt
    {
        return Err(LlmError::Setting(format!(
            "{}: recorded for another prompt",
            args.expect.as_ref().unwrap().display()
        )));
    }

    let client = args.runtime.client().map_err(|e| LlmError::Runtime(e.to_string()))?;
    let batch = args.batch.min(args.context);
    let mut engine = Engine::new(&client, &model, (args.context, batch), None)?;
    engine.set_replay(!args.eager);
    engine.set_fusion(!args.unfused);
    let k = args.step_kernels.as_str();
    engine.set_step_kernels(StepKernels {
        matvec: matches!(k, "both" | "matvec"),
        attention: matches!(k, "both" | "attention"),
    });
    println!(
        "model: {} ({} layers, dim {}, vocabulary {})",
        path.display(),
        model.config.layers,
        model.config.dim,
        model.config.vocab
    );
    println!("runtime: {} on `{}` ({})", args.runtime.as_str(), client.properties().identity.name, engine.target());
    println!("prompt: {} tokens {:?}", prompt.len(), prompt);
    let mut shown = tok.decode(&prompt)?;
    print!("{shown}");
    let quiet = args.quiet;
    let stop = (!args.ignore_eos).then_some(model.vocab.eos);
    if args.warmup {
        generate::generate(&mut engine, &prompt, 2, None, |_, _| {})?;
        engine.reset();
    }
    let timed = |engine: &mut Engine| {
        if args.serial_host {
            generate::generate(&mut generate::Serial(engine), &prompt, args.tokens, stop, |_, _| {})
        } else {
            generate::generate(engine, &prompt, args.tokens, stop, |_, _| {})
        }
    };
    let ours = timed(&mut engine)?;
    let mut rates = vec![ours.tokens_per_second()];
    let mut repeated_ok = true;
    for r in 1..args.repetitions {
        engine.reset();
        let again = timed(&mut engine)?;
        rates.push(again.tokens_per_second());
        repeated_ok &= report(&format!("repetition {} vs the first", r + 1), &again, &ours);
    }
    // The text, then the per-step hashes (printed after the run, not to time the printing).
    let text = tok.decode(&[prompt.clone(), ours.tokens()].concat())?;
    println!("{}", &text[shown.len().min(text.len())..]);
    shown = text;
    if !quiet {
        for (i, s) in ours.steps.iter().enumerate() {
            println!("step {i:3}: token {:6} logits sha256 {}", s.token, s.short_hash());
        }
    }
    println!("steps: {}", engine.replay_state());
    println!("one-token step kernels: {}", engine.step_kernels_used()?);
    println!(
        "{}: prompt {:.1} ms ({} tokens, batches of up to {batch}: {:.1} tokens/s{}), decode {:.1} tokens/s ({} tokens; the host's own work {:.0} µs a token, {}), {} characters",
        args.runtime.as_str(),
        ours.prefill.as_secs_f64() * 1e3,
        prompt.len(),
        prompt.len() as f64 / ours.prefill.as_secs_f64().max(1e-9),
        if args.warmup { ", warm" } else { ", compiling included" },
        ours.tokens_per_second(),
        ours.steps.len(),
        ours.host_per_token().as_secs_f64() * 1e6,
        if args.serial_host { "between steps" } else { "while the next step runs" },
        shown.len()
    );
    if let Some(&last) = ours.tokens().last()
        && ours.steps.len() > 1
        && let Some(device) = engine.device_step_time(last, 100)?
    {
        let token = ours.decode.as_secs_f64() / (ours.steps.len() - 1) as f64;
        println!(
            "a token: {:.0} µs; the step alone on the device, replayed 100 times back to back at position {}: {:.0} µs",
            token * 1e6,
            engine.position(),
            device.as_secs_f64() * 1e6
        );
    }
    if rates.len() > 1 {
        let (mean, sd) = mean_sd(&rates);
        let each: Vec<String> = rates.iter().map(|r| format!("{r:.1}")).collect();
        println!("decode over {} repetitions: {} tokens/s (mean {mean:.1} ± {sd:.1})", rates.len(), each.join(", "));
    }
    let mut ok = repeated_ok;
    if args.compare.as_deref() == Some("float") {
        float_report(&model, &ours);
    } else if let Some(other) = &args.compare {
        let theirs = match other.as_str() {
            "cpu" => {
                let cpu = RuntimeName::Cpu.client().map_err(|e| LlmError::Runtime(e.to_string()))?;
                let mut e = Engine::new(&cpu, &model, (args.context, batch), None)?;
                generate::generate(&mut e, &prompt, args.tokens, stop, |_, _| {})?
            }
            _ => generate::generate(&mut Reference::new(&model, args.context), &prompt, args.tokens, stop, |_, _| {})?,
        };
        ok &= report(&format!("{} vs {other}", args.runtime.as_str()), &ours, &theirs);
    }
    if let Some(e) = &expected {
        ok &= report(&format!("{} vs {}", args.runtime.as_str(), args.expect.as_ref().unwrap().display()), &ours, e);
    }
    if let Some(p) = &args.record {
        record::write(p, &ours)?;
        println!("recorded {} steps in {}", ours.steps.len(), p.display());
    }
    Ok(ok)
}

/// The mean and the sample standard deviation (`llama-bench`'s ±).
fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 { xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, var.sqrt())
}

/// The engine's logits beside the f64 textbook forward pass on the same tokens.
fn float_report(model: &Model, ours: &Generation) {
    let mut reference = FloatReference::new(model);
    let tokens: Vec<u32> = [&ours.prompt[..], &ours.tokens()[..ours.steps.len() - 1]].concat();
    let first = ours.prompt.len() - 1;
    let (mut worst, mut agree, mut disagreements) = (0.0f64, 0, Vec::new());
    for (i, &t) in tokens.iter().enumerate() {
        let logits = reference.step(t);
        if i < first {
            continue;
        }
        let step = i - first;
        let e = FloatReference::compare(&ours.steps[step].logits, &logits);
        worst = worst.max(e.max_abs);
        if e.same_argmax {
            agree += 1;
        } else {
            disagreements.push(format!("step {step} (reference margin {:.4})", e.margin));
        }
    }
    println!(
        "vs the f64 reference on the same tokens: greedy choice agrees at {agree} of {} steps, max |logit difference| {worst:.4}{}",
        ours.steps.len(),
        if disagreements.is_empty() { String::new() } else { format!("; differs at {}", disagreements.join(", ")) }
    );
}

fn report(what: &str, a: &Generation, b: &Generation) -> bool {
    match generate::compare(a, b) {
        Agreement::Identical { steps } if steps == a.steps.len() && steps == b.steps.len() => {
            println!("{what}: logits byte-identical at all {steps} steps, tokens identical");
            true
        }
        Agreement::Identical { steps } => {
            println!(
                "{what}: byte-identical for {steps} steps, but one run has {} and the other {}",
                a.steps.len(),
                b.steps.len()
            );
            false
        }
        Agreement::Differs { step, values, max_ulp, first } => {
            let tokens_same = a.tokens() == b.tokens();
            println!(
                "{what}: logits DIFFER from step {step}: {values} values, up to {max_ulp} ulp (first at index {first}); tokens {}",
                if tokens_same { "identical" } else { "differ" }
            );
            false
        }
    }
}
