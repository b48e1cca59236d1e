//! Greedy decoding, with a SHA-256 of every step's logits so that two runs (two backends, or a
//! backend and the plain-Rust reference) can be compared byte for byte.

use crate::engine::Engine;
use crate::error::LlmError;
use crate::model_file::hex;
use crate::reference::Reference;
use island_runtime::ValueKind;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// Something that runs a sequence token by token: the engine on a device, or the reference.
pub trait Forward {
    /// Runs `token` at the next position; with `logits`, returns the next token's logits.
    fn forward(&mut self, token: u32, logits: bool) -> Result<Option<Vec<f32>>, LlmError>;

    /// Runs `tokens` at the next positions, without logits (the same state as running each
    /// with [`Forward::forward`]).
    fn prefill(&mut self, tokens: &[u32]) -> Result<(), LlmError> {
        tokens.iter().try_for_each(|&t| self.forward(t, false).map(drop))
    }
}

impl Forward for Engine {
    fn forward(&mut self, token: u32, logits: bool) -> Result<Option<Vec<f32>>, LlmError> {
        self.step(token, logits)
    }

    /// In batches of up to [`Engine::batch`] tokens.
    fn prefill(&mut self, tokens: &[u32]) -> Result<(), LlmError> {
        Engine::prefill(self, tokens, false).map(drop)
    }
}

impl Forward for Reference<'_> {
    fn forward(&mut self, token: u32, logits: bool) -> Result<Option<Vec<f32>>, LlmError> {
        Ok(self.step(token, logits))
    }
}

/// One generated token and the logits it was chosen from.
#[derive(Clone, Debug)]
pub struct Step {
    pub token: u32,
    /// SHA-256 of the logits' little-endian bytes.
    pub hash: [u8; 32],
    pub logits: Vec<f32>,
}

impl Step {
    /// The first 16 hex digits of the hash.
    pub fn short_hash(&self) -> String {
        hex(&self.hash[..8])
    }
}

/// A greedy generation.
#[derive(Clone, Debug)]
pub struct Generation {
    pub prompt: Vec<u32>,
    pub steps: Vec<Step>,
    /// Time for the prompt (all but its last token as [`Forward::prefill`] runs them, then the
    /// last with its logits) and for the generated tokens after the first.
    pub prefill: Duration,
    pub decode: Duration,
}

impl Generation {
    pub fn tokens(&self) -> Vec<u32> {
        self.steps.iter().map(|s| s.token).collect()
    }

    /// Decode speed: tokens after the first, per second.
    pub fn tokens_per_second(&self) -> f64 {
        (self.steps.len().saturating_sub(1)) as f64 / self.decode.as_secs_f64().max(1e-9)
    }
}

/// The first index of the largest logit (NaN never wins).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// SHA-256 of `logits`' little-endian bytes.
pub fn hash(logits: &[f32]) -> [u8; 32] {
    let mut h = Sha256::new();
    for v in logits {
        h.update(v.to_le_bytes());
    }
    h.finalize().into()
}

/// Feeds `prompt` (all but its last token with [`Forward::prefill`], the last for its logits),
/// then generates up to `count` tokens greedily, stopping after `stop` (the end-of-sequence
/// token) if it is given; `on_step` sees each step as it comes.
pub fn generate(
    f: &mut dyn Forward,
    prompt: &[u32],
    count: usize,
    stop: Option<u32>,
    mut on_step: impl FnMut(usize, &Step),
) -> Result<Generation, LlmError> {
    let (last, head) = prompt.split_last().ok_or_else(|| LlmError::Setting("the prompt has no tokens".into()))?;
    let start = Instant::now();
    f.prefill(head)?;
    let mut token = *last;
    let mut steps = Vec::with_capacity(count);
    let mut prefill = Duration::ZERO;
    let mut decode_start = Instant::now();
    for i in 0..count {
        let logits = f.forward(token, true)?.expect("logits were asked for");
        let step = Step { token: argmax(&logits), hash: hash(&logits), logits };
        if i == 0 {
            prefill = start.elapsed();
            decode_start = Instant::now();
        }
        on_step(i, &step);
        token = step.token;
        steps.push(step);
        if Some(token) == stop {
            break;
        }
    }
    Ok(Generation { prompt: prompt.to_vec(), steps, prefill, decode: decode_start.elapsed() })
}

/// How two generations compare, step by step.
#[derive(Clone, Debug, PartialEq)]
pub enum Agreement {
    /// Every step's logits are byte-equal.
    Identical { steps: usize },
    /// Step `step` is the first whose logits differ: `values` of them, the largest by `max_ulp`.
    Differs { step: usize, values: usize, max_ulp: u64, first: usize },
}

/// Compares the logits of `a` and `b` step by step (up to the shorter).
pub fn compare(a: &Generation, b: &Generation) -> Agreement {
    for (i, (x, y)) in a.steps.iter().zip(&b.steps).enumerate() {
        if x.hash != y.hash {
            let diff: Vec<usize> = (0..x.logits.len().min(y.logits.len()))
                .filter(|&k| x.logits[k].to_bits() != y.logits[k].to_bits())
                .collect();
            let ulps = |a: f32, b: f32| ValueKind::F32.ulp_distance(a.to_bits().into(), b.to_bits().into());
            let max_ulp = diff.iter().map(|&k| ulps(x.logits[k], y.logits[k])).max().unwrap_or(0);
            return Agreement::Differs {
                step: i,
                values: diff.len(),
                max_ulp,
                first: diff.first().copied().unwrap_or(0),
            };
        }
    }
    Agreement::Identical { steps: a.steps.len().min(b.steps.len()) }
}
