//! Greedy decoding, with a SHA-256 of every step's logits so that two runs (two backends, or a
//! backend and the plain-Rust reference) can be compared byte for byte.

use crate::engine::{Engine, Submitted};
use crate::error::LlmError;
use crate::model_file::hex;
use crate::reference::Reference;
use island_runtime::ValueKind;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
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

    /// The engine, where it keeps two steps in flight ([`Engine::submit`]: the next token chosen
    /// on the device); `None` runs one step at a time with [`Forward::forward_then`].
    fn pipelined(&mut self) -> Option<&mut Engine> {
        None
    }

    /// Runs `token` at the next position and returns the next token's logits, calling
    /// `meanwhile` once before they are back: where the work runs on a device, while it
    /// computes (the engine), else after it (the default).
    fn forward_then(&mut self, token: u32, meanwhile: &mut dyn FnMut()) -> Result<Vec<f32>, LlmError> {
        let logits = self.forward(token, true)?.expect("logits were asked for");
        meanwhile();
        Ok(logits)
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

    fn pipelined(&mut self) -> Option<&mut Engine> {
        self.pipelines().then_some(self)
    }

    /// `meanwhile` runs after the step is enqueued, before its logits are read.
    fn forward_then(&mut self, token: u32, meanwhile: &mut dyn FnMut()) -> Result<Vec<f32>, LlmError> {
        self.step_then(token, meanwhile)
    }
}

impl Forward for Reference<'_> {
    fn forward(&mut self, token: u32, logits: bool) -> Result<Option<Vec<f32>>, LlmError> {
        Ok(self.step(token, logits))
    }
}

/// A [`Forward`] whose host work never overlaps its steps: each step's logits are hashed after
/// the step, before the next is enqueued (to measure what the overlap saves).
pub struct Serial<'a>(pub &'a mut dyn Forward);

impl Forward for Serial<'_> {
    fn forward(&mut self, token: u32, logits: bool) -> Result<Option<Vec<f32>>, LlmError> {
        self.0.forward(token, logits)
    }

    fn prefill(&mut self, tokens: &[u32]) -> Result<(), LlmError> {
        self.0.prefill(tokens)
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
    /// The host's own work over the generated tokens (choosing each token, hashing its logits,
    /// `on_step`): on a device it runs while the next step computes.
    pub host: Duration,
}

impl Generation {
    pub fn tokens(&self) -> Vec<u32> {
        self.steps.iter().map(|s| s.token).collect()
    }

    /// The host's own work per generated token.
    pub fn host_per_token(&self) -> Duration {
        self.host / (self.steps.len().max(1) as u32)
    }

    /// Decode speed: tokens after the first, per second.
    pub fn tokens_per_second(&self) -> f64 {
        (self.steps.len().saturating_sub(1)) as f64 / self.decode.as_secs_f64().max(1e-9)
    }
}

/// The first index of the largest logit (NaN never wins; 0 where every logit is NaN).
///
/// The maximum is taken on 16 lanes, which the compiler keeps in vector registers, then its
/// first index is found: 6.6 µs for 49,152 logits where a scalar walk took 53 µs (2-core x86-64,
/// 2026-12-04).
pub fn argmax(logits: &[f32]) -> u32 {
    const L: usize = 16;
    let mut lanes = [f32::NEG_INFINITY; L];
    let chunks = logits.chunks_exact(L);
    let tail = chunks.remainder();
    for c in chunks {
        for (m, &v) in lanes.iter_mut().zip(c) {
            *m = if v > *m { v } else { *m };
        }
    }
    let max = lanes.iter().chain(tail).fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    logits.iter().position(|&v| v == max).unwrap_or(0) as u32
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
/// token) if it is given; `on_step` sees each step as it comes. A step's logits are hashed and
/// handed to `on_step` while the next step computes ([`Forward::forward_then`]).
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
    let mut steps = Vec::with_capacity(count);
    let mut host = Duration::ZERO;
    if count == 0 {
        return Ok(Generation {
            prompt: prompt.to_vec(),
            steps,
            prefill: start.elapsed(),
            decode: Duration::ZERO,
            host,
        });
    }
    if let Some(engine) = f.pipelined() {
        return pipelined(engine, (prompt, *last), count, stop, on_step, start);
    }
    let mut logits = f.forward(*last, true)?.expect("logits were asked for");
    let prefill = start.elapsed();
    let decode_start = Instant::now();
    for i in 0..count {
        let chosen = Instant::now();
        let token = argmax(&logits);
        let mut pending = Some(logits);
        let mut record = || {
            if let Some(logits) = pending.take() {
                let step = Step { token, hash: hash(&logits), logits };
                on_step(i, &step);
                steps.push(step);
            }
        };
        let last_step = i + 1 == count || Some(token) == stop;
        if last_step {
            record();
            host += chosen.elapsed();
            break;
        }
        let mut spent = chosen.elapsed();
        logits = f.forward_then(token, &mut || {
            let t = Instant::now();
            record();
            spent += t.elapsed();
        })?;
        host += spent;
    }
    Ok(Generation { prompt: prompt.to_vec(), steps, prefill, decode: decode_start.elapsed(), host })
}

/// [`generate`] on an engine with two steps in flight, after the prompt's head (`last` its
/// last token): each step is enqueued as the one before it starts (its token chosen on the
/// device), and a step's logits are read, checked against the device's choice, hashed and
/// handed to `on_step` while the next step computes. Steps enqueued past the end are waited for
/// and their positions taken back ([`Engine::rewind`]).
fn pipelined(
    e: &mut Engine,
    (prompt, last): (&[u32], u32),
    count: usize,
    stop: Option<u32>,
    mut on_step: impl FnMut(usize, &Step),
    start: Instant,
) -> Result<Generation, LlmError> {
    let mut steps = Vec::with_capacity(count);
    let mut host = Duration::ZERO;
    let mut in_flight = VecDeque::from([e.submit(Some(last))?]);
    if count > 1 {
        in_flight.push_back(e.submit(None)?);
    }
    let (mut prefill, mut decode_start) = (Duration::ZERO, Instant::now());
    for i in 0..count {
        let (logits, chosen) = e.collect(in_flight.pop_front().expect("a step in flight for each step"))?;
        let collected = Instant::now();
        if i == 0 {
            (prefill, decode_start) = (start.elapsed(), collected);
        }
        let token = argmax(&logits);
        if token != chosen {
            drain(e, &mut in_flight)?;
            return Err(LlmError::Runtime(format!(
                "step {i}: the device chose token {chosen}, the first largest logit is token {token}"
            )));
        }
        let last_step = i + 1 == count || Some(token) == stop;
        if last_step {
            drain(e, &mut in_flight)?;
        } else if i + 2 < count {
            in_flight.push_back(e.submit(None)?);
        }
        let step = Step { token, hash: hash(&logits), logits };
        on_step(i, &step);
        steps.push(step);
        host += collected.elapsed();
        if last_step {
            break;
        }
    }
    Ok(Generation { prompt: prompt.to_vec(), steps, prefill, decode: decode_start.elapsed(), host })
}

/// Waits for the steps in flight and takes their positions back.
fn drain(e: &mut Engine, in_flight: &mut VecDeque<Submitted>) -> Result<(), LlmError> {
    for s in in_flight.drain(..) {
        e.collect(s)?;
        e.rewind();
    }
    Ok(())
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
