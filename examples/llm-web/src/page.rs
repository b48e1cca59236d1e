//! The page's module (wasm32): the engine on the browser's WebGPU, a greedy generation with
//! every step's logit hash, as the page's JavaScript calls it.

use island_llm::generate::{self, Generation, Step};
use island_llm::tokenizer::Tok;
use island_llm::{Engine, Model, model_file, record};
use island_runtime::runtimes::RuntimeName;
use island_vocab::Backend;
use wasm_bindgen::prelude::*;
use web_time::{Duration, Instant};

/// Panics and log lines go to the browser's console.
#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
    // Fails only if a logger is set already, which then keeps logging.
    let _ = console_log::init_with_level(log::Level::Info);
}

/// A finished generation, for the page.
#[wasm_bindgen(getter_with_clone)]
pub struct Run {
    /// The run as `island-llm --record` writes it: the prompt's token ids, and each step's
    /// token and logit SHA-256 (`record::format`).
    pub record: String,
    /// The prompt and the generated tokens as text.
    pub text: String,
    /// Generated tokens after the first, per second.
    pub tokens_per_second: f64,
    /// Milliseconds from the prompt's first token to the first generated token's logits.
    pub prompt_ms: f64,
    /// The islands' tag the engine launched with (which arms, on which executor).
    pub target: String,
}

/// One generated step, handed to the page's `on_step` as it comes.
#[wasm_bindgen(getter_with_clone)]
pub struct StepView {
    pub index: u32,
    pub token: u32,
    /// The token as text.
    pub piece: String,
    /// SHA-256 of the step's logits (little-endian f32 bytes), 64 hexadecimal digits.
    pub sha256: String,
}

/// Checks `model` (the SmolLM2 GGUF, by size and SHA-256), opens the browser's WebGPU device,
/// runs `prompt` (all but its last token in passes of up to `batch` tokens: the same bits as one
/// token a step) and generates up to `tokens` tokens greedily (stopping after the end-of-sequence
/// token), calling `on_step` with a [`StepView`] after each.
#[wasm_bindgen]
pub async fn generate(
    model: Vec<u8>,
    prompt: String,
    tokens: u32,
    batch: u32,
    on_step: js_sys::Function,
) -> Result<Run, JsError> {
    run(&model, &prompt, (tokens as usize, batch as usize), &on_step).await.map_err(|e| JsError::new(&e))
}

async fn run(
    model: &[u8],
    prompt: &str,
    (count, batch): (usize, usize),
    on_step: &js_sys::Function,
) -> Result<Run, String> {
    model_file::check(model).map_err(|why| format!("not the checked model file ({}): {why}", model_file::FILE_NAME))?;
    let model = Model::from_gguf(model).map_err(text)?;
    let tok = Tok::new(&model.vocab).map_err(text)?;
    let ids = tok.encode(prompt).map_err(text)?;
    let (&last, head) = ids.split_last().ok_or("the prompt has no tokens")?;
    if count == 0 {
        return Err("0 tokens to generate".into());
    }
    if batch == 0 {
        return Err("a prompt pass of 0 tokens".into());
    }
    let context = ids.len() + count;
    if context > model.config.context {
        return Err(format!(
            "{} prompt tokens and {count} more exceed the model's {} positions",
            ids.len(),
            model.config.context
        ));
    }
    let client = RuntimeName::Device(Backend::WebGpu).client_async().await.map_err(text)?;
    // All but the prompt's last token in passes (nothing read back), then the last one as a step
    // whose logits are awaited. A pass holds no more than the prompt needs.
    let batch = batch.min(head.len().max(1));
    let mut engine = Engine::new(&client, &model, (context, batch), None).map_err(text)?;
    let start = Instant::now();
    engine.prefill(head, false).map_err(text)?;
    let (mut steps, mut token) = (Vec::with_capacity(count), last);
    let (mut prompt_time, mut host) = (Duration::ZERO, Duration::ZERO);
    for index in 0..count {
        let submitted = engine.submit(Some(token)).map_err(text)?;
        let (logits, chosen) = engine.collect_async(submitted).await.map_err(text)?;
        let chose = Instant::now();
        if index == 0 {
            prompt_time = start.elapsed();
        }
        let next = generate::argmax(&logits);
        if chosen != next {
            return Err(format!("step {index}: the device chose token {chosen}, the host's argmax {next}"));
        }
        let step = Step { token: next, hash: generate::hash(&logits), logits: Vec::new() };
        let view = StepView {
            index: index as u32,
            token: next,
            piece: tok.decode(&[next]).map_err(text)?,
            sha256: model_file::hex(&step.hash),
        };
        on_step.call1(&JsValue::NULL, &view.into()).map_err(|e| format!("on_step: {e:?}"))?;
        steps.push(step);
        host += chose.elapsed();
        token = next;
        if next == model.vocab.eos {
            break;
        }
    }
    let decode = start.elapsed() - prompt_time;
    let generation = Generation { prompt: ids, steps, prefill: prompt_time, decode, host };
    let all: Vec<u32> = generation.prompt.iter().copied().chain(generation.tokens()).collect();
    Ok(Run {
        record: record::format(&generation),
        text: tok.decode(&all).map_err(text)?,
        tokens_per_second: generation.tokens_per_second(),
        prompt_ms: prompt_time.as_secs_f64() * 1e3,
        target: engine.target().to_string(),
    })
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}
