//! The forward pass on one CubeCL client: weights resident once in their quantized form, a KV
//! cache, a prompt in batches of tokens and then one token a step.
//!
//! What changes from one step to the next (the tokens, their first position) lives in a small
//! device buffer ([`slots`]) that the host writes before the step; every launch of a one-token
//! step is the same launch at every position. Where the runtime records graphs (CUDA, wgpu), the
//! first such step's launches are recorded once, the layers and the logits head apart, and
//! replayed at every later step: the same kernels on the same buffers, without CubeCL's host cost
//! per launch.
//!
//! A batch (a prompt, [`Engine::prefill`]) runs the same kernels with its tokens on the second
//! axis of each launch: every token's values are computed by the same operations in the same
//! order as in a step of its own, so its logits (and the cache it leaves) are the same bits
//! whether the prompt runs in one batch, in batches of any size or one token a step.
//!
//! A one-token step on a device with planes runs five launches a layer where the cells it
//! stands for run their twins with one tag: [`act_matvec`] (RMSNorm, the quantizer and the QKV
//! projection; the quantizer and the output projection; RMSNorm, the quantizer and the gate and
//! up projections; SwiGLU, the quantizer and the down projection) and [`attention_step`]. They
//! compute the unfused kernels' bits. They run on CUDA and Vulkan ([`runs_step_kernels`] says
//! why not elsewhere yet); elsewhere the unfused kernels run.

use crate::act_matvec::{self, Act, ActBuffers};
use crate::attention_step::{self, StepBuffers};
use crate::cells;
use crate::choose;
use crate::error::LlmError;
use crate::fused;
use crate::kernels::{AttnShape, MatvecShape, slots};
use crate::lanes;
use crate::quant::{BLOCK, QuantMatrix};
use crate::rope::rope_tables;
use crate::weights::{Config, Model};
use cubecl::bytes::Bytes;
use cubecl::client::Graph;
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;
use island_runtime::cell::CellKey;
use island_runtime::dispatch::Choice;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::time::{Duration, Instant};

/// A quantized matrix on the device.
struct DeviceMatrix {
    shape: MatvecShape,
    words: Handle,
    scales: Handle,
    mins: Handle,
    /// `{rows, cols, accumulate}` as u32, for the incumbents (`crate::incumbents`).
    params: Handle,
}

impl DeviceMatrix {
    /// The matrix's shape as a product over the first `cols` values of a row of activations.
    fn over(&self, cols: usize) -> MatvecShape {
        MatvecShape { blocks: cols / BLOCK, ..self.shape }
    }

    fn new(client: &Client, m: &QuantMatrix, accumulate: bool) -> DeviceMatrix {
        let mins = if m.mins.is_empty() { vec![0.0f32] } else { m.mins.clone() };
        DeviceMatrix {
            shape: MatvecShape { ty: m.ty, rows: m.rows, blocks: m.blocks(), accumulate },
            words: client.create_from_slice(i32::as_bytes(&m.words)),
            scales: client.create_from_slice(f32::as_bytes(&m.scales)),
            mins: client.create_from_slice(f32::as_bytes(&mins)),
            params: client.create_from_slice(u32::as_bytes(&[m.rows as u32, m.cols as u32, accumulate as u32])),
        }
    }
}

struct DeviceLayer {
    attn_norm: Handle,
    qkv: DeviceMatrix,
    out: DeviceMatrix,
    ffn_norm: Handle,
    gate_up: DeviceMatrix,
    down: DeviceMatrix,
}

/// The activations (one row a token of a batch) and caches of one sequence.
struct Scratch {
    x: Handle,
    h: Handle,
    xq: Handle,
    xd: Handle,
    qkv: Handle,
    /// The attention state: the batch's queries, then each layer's key cache, then each layer's
    /// value cache (`crate::kernels::rope_store`).
    state: Handle,
    s: Handle,
    att: Handle,
    gate_up: Handle,
    a: Handle,
    logits: Handle,
    /// Every token's logits of a batch, allocated when first asked for.
    batch_logits: Option<Handle>,
    /// What changes between steps, `u32`s at [`slots`].
    step: Handle,
    /// The units' bests of [`crate::choose`] where they do not meet in shared memory.
    choose_parts: Handle,
}

/// The parts of a step, each launched, or recorded once and replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// The embedding and every layer: the caches take the token's key and value.
    Layers,
    /// The final norm and the logits.
    Head,
    /// The next token chosen from the logits, and the position advanced, in the step buffer
    /// ([`crate::choose`]): only where two steps are in flight ([`Engine::submit`]).
    Choose,
}

/// A read of a step's logits and step buffer, enqueued behind the step.
type PendingRead = Pin<Box<dyn Future<Output = Result<Vec<Bytes>, cubecl::server::ServerError>> + Send>>;

/// A step enqueued by [`Engine::submit`], to be waited for with [`Engine::collect`].
#[must_use = "a submitted step's logits are collected"]
pub enum Submitted {
    /// Read behind the step, on a runtime whose reads copy at the point they are enqueued
    /// (CUDA: into pinned host memory on the step's stream).
    Pending(PendingRead),
    /// Read already: the CPU runtime's reads are views of its memory, which the next step
    /// overwrites, so they are copied as the step is submitted.
    Ready(Vec<Vec<u8>>),
}

/// How a part of a step runs.
enum Replay {
    /// Not yet tried: the next run launches it and records it where the runtime can.
    Untried,
    /// Recorded: replayed.
    Recorded(Graph),
    /// Launched at every step (no graphs on this runtime, replay turned off, or the recording
    /// refused, with why).
    Launched(String),
}

/// The model on a device, ready to run a sequence of up to `context` positions.
pub struct Engine {
    /// The recorded parts (dropped before the buffers they name), layers then head.
    replays: [Replay; 3],
    /// See [`Engine::reader`].
    reader: Option<&'static Client>,
    client: Client,
    target: Target,
    config: Config,
    context: usize,
    /// Tokens a batch holds at most.
    batch: usize,
    embedding: DeviceMatrix,
    layers: Vec<DeviceLayer>,
    output_norm: Handle,
    cos: Handle,
    sin: Handle,
    scratch: Scratch,
    /// `{ffn}` as u32: the SwiGLU incumbents' scalar (`crate::cells::swiglu`).
    ffn_params: Handle,
    /// Positions filled so far.
    pos: usize,
    /// Whether an op and the quantizer after it run as one kernel where their cells run twins
    /// ([`crate::fused`]).
    fuse: bool,
    /// Which of a one-token step's fused kernels run where they may (nothing is fused without
    /// `fuse`).
    step_kernels: StepKernels,
    /// [`Engine::pipelines`], decided at its first call: it consults the cell records, and
    /// [`Engine::submit`] asks at every step.
    pipelines: std::sync::OnceLock<bool>,
}

/// Which of a one-token step's fused kernels an engine runs ([`Engine::set_step_kernels`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepKernels {
    /// [`act_matvec`]: the op before each matvec, its quantizer and the matvec in one launch.
    pub matvec: bool,
    /// [`attention_step`]: RoPE, the caches, the scores, softmax and the weighted sum in one.
    pub attention: bool,
}

fn f32s(client: &Client, v: &[f32]) -> Handle {
    client.create_from_slice(f32::as_bytes(v))
}

impl Engine {
    /// Uploads `model` to `client`'s device for sequences of up to `context` positions, a
    /// prompt run in batches of up to `batch` tokens. `target` is the islands' tag (`None`: the
    /// device's, under the launch policy).
    pub fn new(
        client: &Client,
        model: &Model,
        (context, batch): (usize, usize),
        target: Option<Target>,
    ) -> Result<Engine, LlmError> {
        // Which candidate each cell runs is read at the first step: a wrong setting stops here.
        island_runtime::dispatch::settings().map_err(Clone::clone)?;
        let c = model.config;
        if context == 0 || context > c.context {
            return Err(LlmError::Setting(format!(
                "a context of {context} positions: the model allows 1 to {}",
                c.context
            )));
        }
        if batch == 0 || batch > context {
            return Err(LlmError::Setting(format!(
                "a batch of {batch} tokens: 1 to the context's {context} positions"
            )));
        }
        // The largest buffers' bytes must fit a usize: the attention state `(batch·dim +
        // 2·layers·context·kv_dim)·4` and the scores `batch·heads·context·4`.
        let kv_values = c.layers.checked_mul(context).and_then(|n| n.checked_mul(c.kv_dim()));
        let state = kv_values.and_then(|n| n.checked_mul(2)?.checked_add(batch.checked_mul(c.dim)?)?.checked_mul(4));
        let scores = batch.checked_mul(c.heads).and_then(|n| n.checked_mul(context)?.checked_mul(4));
        if state.is_none() || scores.is_none() {
            return Err(LlmError::Setting(format!(
                "a KV cache of {context} positions and batches of {batch} tokens overflow the address space"
            )));
        }
        let kv_values = kv_values.unwrap_or_default();
        let target = target.unwrap_or_else(|| Target::for_client(client));
        let (cos, sin) = rope_tables(&c, context);
        let layers = model
            .layers
            .iter()
            .map(|l| DeviceLayer {
                attn_norm: f32s(client, &l.attn_norm),
                qkv: DeviceMatrix::new(client, &l.qkv, false),
                out: DeviceMatrix::new(client, &l.out, true),
                ffn_norm: f32s(client, &l.ffn_norm),
                gate_up: DeviceMatrix::new(client, &l.gate_up, false),
                down: DeviceMatrix::new(client, &l.down, true),
            })
            .collect();
        let widest = c.dim.max(c.ffn);
        let b = batch;
        let scratch = Scratch {
            x: client.empty(b * c.dim * 4),
            h: client.empty(b * c.dim * 4),
            xq: client.empty(b * widest),
            xd: client.empty(b * widest / BLOCK * 4),
            qkv: client.empty(b * (c.dim + 2 * c.kv_dim()) * 4),
            state: client.empty((b * c.dim + 2 * kv_values) * 4),
            s: client.empty(b * c.heads * context * 4),
            att: client.empty(b * c.dim * 4),
            gate_up: client.empty(b * 2 * c.ffn * 4),
            a: client.empty(b * c.ffn * 4),
            logits: client.empty(c.vocab * 4),
            batch_logits: None,
            step: client.create_from_slice(u32::as_bytes(&vec![0; slots::len(b)])),
            choose_parts: client.empty(choose::PARTS_LEN * 4),
        };
        Ok(Engine {
            replays: [Replay::Untried, Replay::Untried, Replay::Untried],
            reader: None,
            client: client.clone(),
            target,
            config: c,
            context,
            batch,
            embedding: DeviceMatrix::new(client, &model.embedding, false),
            layers,
            output_norm: f32s(client, &model.output_norm),
            cos: f32s(client, &cos),
            sin: f32s(client, &sin),
            scratch,
            ffn_params: client.create_from_slice(u32::as_bytes(&[c.ffn as u32])),
            pos: 0,
            fuse: true,
            step_kernels: StepKernels { matvec: true, attention: true },
            pipelines: std::sync::OnceLock::new(),
        })
    }

    /// The islands' tag this engine launches with.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Positions filled so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Forgets the sequence (the cache is overwritten from position 0).
    pub fn reset(&mut self) {
        self.pos = 0;
    }

    /// Launches every kernel of every step (`false`), instead of replaying the recorded steps
    /// where the runtime records graphs (`true`, the default). Both compute the same launches.
    pub fn set_replay(&mut self, on: bool) {
        for r in &mut self.replays {
            *r = if on { Replay::Untried } else { Replay::Launched("replay turned off".into()) };
        }
    }

    /// Runs each op and the activation quantizer after it as separate kernels (`false`),
    /// instead of one fused kernel where both cells run their twins (`true`, the default).
    /// Both compute the same bits. Call it before the first step: a recorded step keeps what
    /// it recorded.
    pub fn set_fusion(&mut self, on: bool) {
        self.fuse = on;
    }

    /// Which of a one-token step's fused kernels run where they may (both by default). Every
    /// choice computes the same bits. Call it before the first step, as [`Engine::set_fusion`].
    pub fn set_step_kernels(&mut self, kernels: StepKernels) {
        self.step_kernels = kernels;
    }

    /// How each part of a step ran at the last step: `"replayed"`, or `"launched: why"`.
    pub fn replay_state(&self) -> String {
        let part = |r: &Replay| match r {
            Replay::Untried => "not run yet".to_string(),
            Replay::Recorded(_) => "replayed".to_string(),
            Replay::Launched(why) => format!("launched ({why})"),
        };
        let [layers, head, choice] = &self.replays;
        format!("layers {}, logits {}, choice {}", part(layers), part(head), part(choice))
    }

    /// Which fused kernels a one-token step runs ([`act_matvec`], [`attention_step`]), by the
    /// same rule as the step's launches: the sites named, or "none" (the unfused kernels).
    pub fn step_kernels_used(&self) -> Result<String, LlmError> {
        let Some(layer) = self.layers.first() else { return Ok("none".to_string()) };
        let c = self.config;
        let mut used = Vec::new();
        if self.step_kernels.matvec {
            let sites = [
                ("RMSNorm+QKV", norm_step_keys(&layer.qkv.over(c.dim)).to_vec()),
                ("output projection", plain_step_keys(&layer.out.over(c.dim)).to_vec()),
                ("RMSNorm+gate·up", norm_step_keys(&layer.gate_up.over(c.dim)).to_vec()),
                ("SwiGLU+down", swiglu_step_keys(&layer.down.over(c.ffn)).to_vec()),
            ];
            for (site, keys) in sites {
                if self.step_target(1, &keys)?.is_some() {
                    used.push(site);
                }
            }
        }
        if self.attention_step_target(1)?.is_some() {
            used.push("attention");
        }
        Ok(if used.is_empty() { "none".to_string() } else { used.join(", ") })
    }

    /// Tokens a batch holds at most.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Runs `token` at the next position; with `logits`, returns the logits of the next token.
    pub fn step(&mut self, token: u32, logits: bool) -> Result<Option<Vec<f32>>, LlmError> {
        if logits {
            return self.step_then(token, &mut || {}).map(Some);
        }
        self.write_step(&[token])?;
        self.run(Part::Layers, token)?;
        self.pos += 1;
        Ok(None)
    }

    /// The device's own time for a step: the recorded step (layers and logits) replayed `reps`
    /// times back to back for `token` at the next position, nothing read between, after one
    /// replay. `None` where the step is not replayed. The position does not advance: the next
    /// step writes the same cache slot again, so the sequence is as it was.
    pub fn device_step_time(&mut self, token: u32, reps: u32) -> Result<Option<Duration>, LlmError> {
        let recorded = self.replays[..2].iter().all(|r| matches!(r, Replay::Recorded(_)));
        if !recorded || reps == 0 || self.pos >= self.context {
            return Ok(None);
        }
        self.write_step(&[token])?;
        let sync = |e: &Self| {
            island_runtime::readback::read(&e.client, e.scratch.step.clone())
                .map_err(|e| LlmError::Runtime(e.to_string()))
        };
        self.run(Part::Layers, token)?;
        self.run(Part::Head, token)?;
        sync(self)?;
        let start = Instant::now();
        for _ in 0..reps {
            self.run(Part::Layers, token)?;
            self.run(Part::Head, token)?;
        }
        sync(self)?;
        Ok(Some(start.elapsed() / reps))
    }

    /// Enqueues a one-token step at the next position, without waiting for it: of `token`
    /// (written into the step buffer by the host), or with `None` of the token the last
    /// submitted step chose on the device. The step's logits and its own choice of the next
    /// token are read back behind it; [`Engine::collect`] waits for them. Each step submitted
    /// advances the position; [`Engine::rewind`] takes back one that is not used.
    pub fn submit(&mut self, token: Option<u32>) -> Result<Submitted, LlmError> {
        match token {
            Some(t) => self.write_step(&[t])?,
            None if !self.pipelines() => {
                return Err(LlmError::Setting(
                    "a step of the token chosen on the device needs what `Engine::pipelines` names: CUDA or the CPU runtime, and the embedding's twin".into(),
                ));
            }
            None if self.pos >= self.context => {
                return Err(LlmError::Setting(format!("the sequence is full: {} positions", self.context)));
            }
            None => {}
        }
        let t = token.unwrap_or(0);
        self.run(Part::Layers, t)?;
        self.run(Part::Head, t)?;
        self.run(Part::Choose, t)?;
        self.pos += 1;
        let handles = vec![self.scratch.logits.clone(), self.scratch.step.clone()];
        let client = self.reader();
        let read = catch_unwind(AssertUnwindSafe(|| Box::pin(client.read_async(handles)) as PendingRead))
            .map_err(|p| LlmError::Runtime(island_runtime::readback::panic_text(&p)))?;
        if island_runtime::hardware::device::runtime_name(&self.client) == "cpu" {
            return Ok(Submitted::Ready(wait(read)?));
        }
        Ok(Submitted::Pending(read))
    }

    /// The client reads behind a step are enqueued from. A read's future borrows its client and
    /// outlives this call, so this is a clone that lives as long as the process, made at the
    /// engine's first [`Engine::submit`] (one a pipelining engine; CubeCL's clients are handles
    /// to a device the process keeps anyway).
    fn reader(&mut self) -> &'static Client {
        self.reader.get_or_insert_with(|| Box::leak(Box::new(self.client.clone())))
    }

    /// Waits for a submitted step: its logits, and the token it chose on the device.
    pub fn collect(&self, s: Submitted) -> Result<(Vec<f32>, u32), LlmError> {
        let bytes = match s {
            Submitted::Pending(read) => wait(read)?,
            Submitted::Ready(bytes) => bytes,
        };
        Ok(self.step_results(&bytes))
    }

    /// [`Engine::collect`] where the host cannot block on the device (the web, whose reads
    /// complete in the page's event loop): awaits the read.
    pub async fn collect_async(&self, s: Submitted) -> Result<(Vec<f32>, u32), LlmError> {
        let bytes = match s {
            Submitted::Pending(read) => {
                let buffers = read.await.map_err(|e| LlmError::Runtime(e.to_string()))?;
                buffers.iter().map(|b| b.to_vec()).collect()
            }
            Submitted::Ready(bytes) => bytes,
        };
        Ok(self.step_results(&bytes))
    }

    /// A step's logits and the token it chose, from its two buffers read back.
    fn step_results(&self, bytes: &[Vec<u8>]) -> (Vec<f32>, u32) {
        let vocab = self.config.vocab;
        let logits = f32::from_bytes(&bytes[0])[..vocab].to_vec();
        let chosen = u32::from_bytes(&bytes[1])[slots::TOKEN];
        (logits, chosen)
    }

    /// Whether [`crate::generate`] keeps two steps in flight on this engine (see
    /// [`Engine::submit`]): on the runtimes the free function `pipelines` names, where the
    /// embedding runs its twin.
    pub fn pipelines(&self) -> bool {
        *self.pipelines.get_or_init(|| {
            // The embedding's incumbent takes the token from the host, which does not know it
            // when the device chose it: only the twin reads it from the step buffer.
            // (Decided as the embedding's launch will decide it, without logging it as
            // dispatched; the records and settings it reads are the process's, read once.)
            use island_runtime::dispatch;
            let embed = || -> Option<Choice> {
                let (forced, keep) = (dispatch::forced().ok()?, dispatch::keep().ok()?);
                let records = island_runtime::records::embedded::cell_records().ok()?;
                Some(dispatch::choose_from(&self.client, &cells::embed::KEY, records, forced, keep).choice)
            };
            pipelines(&self.client) && matches!(embed(), Some(Choice::Twin(_)))
        })
    }

    /// Takes back the last submitted step's position (a step run ahead whose token is not
    /// used): the next step writes its cache slot again.
    pub fn rewind(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// [`Engine::step`] with logits, calling `meanwhile` once the step is enqueued and before
    /// its logits are read: host work that overlaps the device's.
    pub fn step_then(&mut self, token: u32, meanwhile: &mut dyn FnMut()) -> Result<Vec<f32>, LlmError> {
        self.write_step(&[token])?;
        self.run(Part::Layers, token)?;
        self.pos += 1;
        self.run(Part::Head, token)?;
        meanwhile();
        Ok(self.read_logits(&self.scratch.logits, 1)?.remove(0))
    }

    /// Runs `tokens` at the next positions, in batches of up to [`Engine::batch`] tokens (the
    /// same bits as one token a step); with `logits`, returns the logits after each token, else
    /// none.
    pub fn prefill(&mut self, tokens: &[u32], logits: bool) -> Result<Vec<Vec<f32>>, LlmError> {
        let mut all = Vec::with_capacity(if logits { tokens.len() } else { 0 });
        for chunk in tokens.chunks(self.batch) {
            self.write_step(chunk)?;
            let t = chunk.len();
            self.launch(Part::Layers, t, chunk[0])?;
            self.pos += t;
            if logits {
                let c = self.config;
                let out = match &self.scratch.batch_logits {
                    Some(h) => h.clone(),
                    None => self.client.empty(self.batch * c.vocab * 4),
                };
                self.scratch.batch_logits = Some(out.clone());
                self.norm_matvec(&self.output_norm, &self.embedding, &out, t)?;
                all.extend(self.read_logits(&out, t)?);
            }
        }
        Ok(all)
    }

    /// Checks `tokens` (a batch from the next position) and writes the step buffer for them.
    fn write_step(&self, tokens: &[u32]) -> Result<(), LlmError> {
        let c = self.config;
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= c.vocab) {
            return Err(LlmError::Setting(format!("token {bad} is outside the vocabulary of {}", c.vocab)));
        }
        if tokens.len() > self.context - self.pos {
            return Err(LlmError::Setting(format!(
                "the sequence is full: {} positions, {} filled, {} more asked for",
                self.context,
                self.pos,
                tokens.len()
            )));
        }
        let mut step = vec![0u32; slots::len(self.batch)];
        (step[slots::POS], step[slots::N]) = (self.pos as u32, self.pos as u32 + 1);
        step[slots::TOKEN..slots::TOKEN + tokens.len()].copy_from_slice(tokens);
        self.client.write(&self.scratch.step, Bytes::from_elems(step));
        Ok(())
    }

    /// The first `tokens` rows of logits in `h`.
    fn read_logits(&self, h: &Handle, tokens: usize) -> Result<Vec<Vec<f32>>, LlmError> {
        let bytes =
            island_runtime::readback::read(&self.client, h.clone()).map_err(|e| LlmError::Runtime(e.to_string()))?;
        let vocab = self.config.vocab;
        Ok(f32::from_bytes(&bytes)[..tokens * vocab].chunks_exact(vocab).map(<[f32]>::to_vec).collect())
    }

    /// Runs `part` of the step at `self.pos` (its token `token`): replays its recording, or
    /// launches it and, the first time on a runtime that records graphs, records it. The
    /// launch before a recording is the step's own (its results stand); the recording itself
    /// executes nothing. A part whose cells ran an incumbent is not recorded: an incumbent takes
    /// its scalars from a buffer built for that step.
    fn run(&mut self, part: Part, token: u32) -> Result<(), LlmError> {
        let i = part as usize;
        match &self.replays[i] {
            Replay::Recorded(g) => {
                // SAFETY: the graph's buffers are this engine's and live as long as it (the
                // recordings are dropped first); only this engine's client, on its one stream,
                // uses them, and it writes the step buffer on that stream between replays.
                return unsafe { g.replay() }.map_err(|e| LlmError::Runtime(format!("replaying the step: {e}")));
            }
            Replay::Launched(_) => return self.launch(part, 1, token),
            Replay::Untried => {}
        }
        if let Err(e) = self.client.graph_prepare() {
            self.replays[i] = Replay::Launched(format!("{} records no graphs: {e}", self.client.name()));
            return self.launch(part, 1, token);
        }
        let incumbents = cells::incumbent_launches();
        if let Err(e) = self.launch(part, 1, token) {
            // The capture stays prepared until it is stopped.
            let _ = self.client.stop_capture();
            return Err(e);
        }
        let recorded = match self.client.start_capture() {
            Ok(()) => {
                let launched = self.launch(part, 1, token);
                match (launched, self.client.stop_capture()) {
                    (Ok(()), Ok(graph)) => Ok(graph),
                    (Err(e), _) => Err(e.to_string()),
                    (_, Err(e)) => Err(e.to_string()),
                }
            }
            Err(e) => {
                // Refused up front: the capture stays prepared until it is stopped.
                let _ = self.client.stop_capture();
                Err(e.to_string())
            }
        };
        self.replays[i] = match recorded {
            Ok(_) if cells::incumbent_launches() != incumbents => {
                Replay::Launched("an incumbent kernel runs in it, with scalars built per step".into())
            }
            Ok(graph) => Replay::Recorded(graph),
            Err(why) => {
                // CubeCL's errors read "…\nCaused by:\n  {reason}\nBacktrace:…": the reason.
                let mut lines = why.lines().map(str::trim);
                let why = lines.find(|l| *l == "Caused by:").and_then(|_| lines.next()).unwrap_or(why.trim());
                let why = why.to_string();
                log::info!("{part:?} of the step is launched at every step: recording it failed: {why}");
                Replay::Launched(format!("not recorded: {why}"))
            }
        };
        Ok(())
    }

    /// Launches `part` of the step of `tokens` tokens from `self.pos` (the first `token`; the
    /// step buffer holds them all).
    fn launch(&self, part: Part, tokens: usize, token: u32) -> Result<(), LlmError> {
        let c = self.config;
        let (client, t, sc) = (&self.client, self.target, &self.scratch);
        match part {
            Part::Head => return self.norm_matvec(&self.output_norm, &self.embedding, &sc.logits, tokens),
            Part::Choose => return choose::launch(client, &sc.logits, &sc.step, &sc.choose_parts, c.vocab, t),
            Part::Layers => {}
        }
        let kv = c.kv_dim();
        let attn = (AttnShape { heads: c.heads, kv_heads: c.kv_heads, context: self.context }, tokens);
        let cache = c.layers * self.context * kv;
        let e = &self.embedding;
        let bufs = [&e.words, &e.scales, &sc.x, &sc.step];
        cells::embed::embed(client, (c.vocab, c.dim, tokens), bufs, token, t).map_err(runtime)?;
        let (pos, n) = (self.pos, self.pos + 1);
        for (l, layer) in self.layers.iter().enumerate() {
            // The layer's caches in the state (after the batch's queries): keys from `keys`,
            // values from `values`.
            let keys = self.batch * c.dim + l * self.context * kv;
            let values = keys + cache;
            self.norm_matvec(&layer.attn_norm, &layer.qkv, &sc.qkv, tokens)?;
            if let Some(ta) = self.attention_step_target(tokens)? {
                let bufs = StepBuffers {
                    qkv: &sc.qkv,
                    state: &sc.state,
                    cos: &self.cos,
                    sin: &self.sin,
                    step: &sc.step,
                    att: &sc.att,
                };
                let state_len = self.batch * c.dim + 2 * cache;
                attention_step::launch(client, attn.0, bufs, (state_len, keys, values), ta)?;
            } else {
                let bufs = [&sc.qkv, &sc.state, &self.cos, &self.sin, &sc.step];
                cells::rope::rope(client, attn, bufs, pos, [keys, values], t).map_err(runtime)?;
                cells::attention::scores(client, attn, [&sc.state, &sc.s, &sc.step], n, keys, t).map_err(runtime)?;
                cells::attention::softmax(client, attn, [&sc.s, &sc.step], n, t).map_err(runtime)?;
                let bufs = [&sc.s, &sc.state, &sc.att, &sc.step];
                cells::attention::attend(client, attn, bufs, n, values, t).map_err(runtime)?;
            }
            self.plain_matvec(&layer.out, tokens)?;
            self.norm_matvec(&layer.ffn_norm, &layer.gate_up, &sc.gate_up, tokens)?;
            self.swiglu_matvec(&layer.down, tokens)?;
        }
        Ok(())
    }

    /// `y = m·q8_1(rmsnorm(x, w))` of each of `tokens` rows of the residual stream `x`: one fused
    /// kernel and the product where both cells run their twins, else the two cells' candidates
    /// apart.
    fn norm_matvec(&self, w: &Handle, m: &DeviceMatrix, y: &Handle, tokens: usize) -> Result<(), LlmError> {
        let (c, sc) = (self.config, &self.scratch);
        let shape = m.over(c.dim);
        if self.step_kernels.matvec
            && let Some(ta) = self.step_target(tokens, &norm_step_keys(&shape))?
        {
            let b = ActBuffers { src: &sc.x, norm: w, words: &m.words, scales: &m.scales, mins: &m.mins, y };
            act_matvec::launch(&self.client, Act::Norm, shape, c.eps, b, ta);
            return Ok(());
        }
        if self.fuse
            && let Some(tn) = cells::twin_target(&self.client, &cells::rmsnorm::KEY, self.target).map_err(runtime)?
            && let Some(tm) =
                cells::twin_target(&self.client, &cells::matvec::key_of(&shape), self.target).map_err(runtime)?
        {
            fused::launch_norm_quant(&self.client, c.dim, c.eps, tokens, [&sc.x, w, &sc.xq, &sc.xd], tn);
            let bufs = [&m.words, &m.scales, &m.mins, &sc.xq, &sc.xd, y];
            cells::matvec::launch_product(&self.client, (shape, tokens), bufs, tm);
            return Ok(());
        }
        cells::rmsnorm::rmsnorm(&self.client, (c.dim, tokens), c.eps, [&sc.x, w, &sc.h], self.target)
            .map_err(runtime)?;
        self.matvec(m, &sc.h, (c.dim, tokens), y)
    }

    /// `x += down·q8_1(swiglu(gate_up))` of each of `tokens` tokens: one fused kernel and the
    /// product where both cells run their twins and a block's maximum is a plane exchange (on the
    /// CPU runtime each unit would compute its whole block's 32 SwiGLUs), else the two cells'
    /// candidates apart.
    fn swiglu_matvec(&self, down: &DeviceMatrix, tokens: usize) -> Result<(), LlmError> {
        let (c, sc, client) = (self.config, &self.scratch, &self.client);
        let shape = down.over(c.ffn);
        if self.step_kernels.matvec
            && let Some(ta) = self.step_target(tokens, &swiglu_step_keys(&shape))?
        {
            let b = ActBuffers {
                src: &sc.gate_up,
                norm: &sc.gate_up,
                words: &down.words,
                scales: &down.scales,
                mins: &down.mins,
                y: &sc.x,
            };
            act_matvec::launch(client, Act::Swiglu, shape, 0.0, b, ta);
            return Ok(());
        }
        if self.fuse
            && lanes::block_units(&self.target) == 8
            && let Some(ts) = cells::twin_target(client, &cells::SWIGLU_KEY, self.target).map_err(runtime)?
            && let Some(tm) =
                cells::twin_target(client, &cells::matvec::key_of(&shape), self.target).map_err(runtime)?
        {
            fused::launch_swiglu_quant(client, c.ffn, tokens, [&sc.gate_up, &sc.xq, &sc.xd], ts);
            let bufs = [&down.words, &down.scales, &down.mins, &sc.xq, &sc.xd, &sc.x];
            cells::matvec::launch_product(client, (shape, tokens), bufs, tm);
            return Ok(());
        }
        let (ffn, params) = ((c.ffn, tokens), &self.ffn_params);
        cells::swiglu::swiglu(client, ffn, &sc.gate_up, &sc.a, params, self.target).map_err(runtime)?;
        self.matvec(down, &sc.a, (c.ffn, tokens), &sc.x)
    }

    /// `x += out·q8_1(att)` of each of `tokens` tokens: the attention's output projection.
    fn plain_matvec(&self, out: &DeviceMatrix, tokens: usize) -> Result<(), LlmError> {
        let (c, sc) = (self.config, &self.scratch);
        let shape = out.over(c.dim);
        if self.step_kernels.matvec
            && let Some(ta) = self.step_target(tokens, &plain_step_keys(&shape))?
        {
            let b = ActBuffers {
                src: &sc.att,
                norm: &sc.att,
                words: &out.words,
                scales: &out.scales,
                mins: &out.mins,
                y: &sc.x,
            };
            act_matvec::launch(&self.client, Act::Plain, shape, 0.0, b, ta);
            return Ok(());
        }
        self.matvec(out, &sc.att, (c.dim, tokens), &sc.x)
    }

    /// The tag of a one-token step's kernel that stands for the twins of the cells `keys`
    /// ([`act_matvec`], [`attention_step`]): where fusion is on, the step has one token, the
    /// device has planes and every cell runs its twin with the same tag; else `None`, and the
    /// cells' candidates run apart.
    fn step_target(&self, tokens: usize, keys: &[CellKey]) -> Result<Option<Target>, LlmError> {
        if !self.fuse || tokens != 1 || !runs_step_kernels(&self.client) {
            return Ok(None);
        }
        let mut tag = None;
        for key in keys {
            match cells::twin_target(&self.client, key, self.target).map_err(runtime)? {
                Some(t) if tag.is_none_or(|first| first == t) => tag = Some(t),
                _ => return Ok(None),
            }
        }
        Ok(tag)
    }

    /// [`Self::step_target`] of the attention's four cells, where the cache holds at most
    /// [`attention_step::FAST_CONTEXT`] positions.
    fn attention_step_target(&self, tokens: usize) -> Result<Option<Target>, LlmError> {
        if !self.step_kernels.attention || self.context > attention_step::FAST_CONTEXT {
            return Ok(None);
        }
        use cells::attention::{ATTEND_KEY, SCORES_KEY, SOFTMAX_KEY};
        self.step_target(tokens, &[cells::rope::KEY, SCORES_KEY, SOFTMAX_KEY, ATTEND_KEY])
    }

    /// `y = m·q8_1(x)` (or `y += …`) over the first `cols` values of each of `tokens` rows of
    /// `x`, with the candidate of the matvec cell the device's record selects
    /// (`crate::cells::matvec`).
    fn matvec(&self, m: &DeviceMatrix, x: &Handle, (cols, tokens): (usize, usize), y: &Handle) -> Result<(), LlmError> {
        let shape = m.over(cols);
        let bufs = [&m.words, &m.scales, &m.mins, x, &self.scratch.xq, &self.scratch.xd, y];
        cells::matvec::matvec(&self.client, (shape, tokens), bufs, &m.params, self.target).map_err(runtime)
    }
}

/// The cells [`act_matvec`]'s kernel stands for before a product of `shape`: RMSNorm (and its
/// quantizer) with the product ([`Engine::norm_matvec`]).
fn norm_step_keys(shape: &MatvecShape) -> [CellKey; 2] {
    [cells::rmsnorm::KEY, cells::matvec::key_of(shape)]
}

/// The same for SwiGLU with the down projection ([`Engine::swiglu_matvec`]).
fn swiglu_step_keys(shape: &MatvecShape) -> [CellKey; 2] {
    [cells::SWIGLU_KEY, cells::matvec::key_of(shape)]
}

/// The same for the quantizer alone with the output projection ([`Engine::plain_matvec`]).
fn plain_step_keys(shape: &MatvecShape) -> [CellKey; 1] {
    [cells::matvec::key_of(shape)]
}

/// Whether [`crate::generate`] keeps two steps in flight on this engine ([`Engine::submit`]):
/// on CUDA and Vulkan (SPIR-V), where it takes the host's path off the device's time (a read
/// copies the buffers at the point it is enqueued, before the next step's launches), and on the
/// CPU runtime, where the checks run the same loop (its reads are views, copied as each step is
/// submitted, so there it gains nothing). Not yet through WGSL, where no run has shown it.
fn pipelines(client: &Client) -> bool {
    matches!(island_runtime::hardware::device::runtime_name(client), "cuda" | "cpu" | "wgpu<spirv>")
}

/// Whether a one-token step's fused kernels run on `client`'s runtime: on CUDA and on Vulkan
/// through SPIR-V (their shared memory is valid SPIR-V with the patched `cubecl-spirv`, see
/// `patches/README.md`). Not through WGSL, where every `exact::fma` is the 32-bit integer
/// formulation, inlined: the fused attention did not compile within 120 s on NVIDIA's driver
/// nor within minutes on lavapipe (2026-12-04); not on the CPU runtime (plane size 1), where a
/// cube's barrier costs a thread per unit. Elsewhere the unfused kernels run, the same bits.
fn runs_step_kernels(client: &Client) -> bool {
    matches!(island_runtime::hardware::device::runtime_name(client), "cuda" | "wgpu<spirv>")
}

/// Waits for a read, its bytes copied out of the runtime's.
fn wait(read: PendingRead) -> Result<Vec<Vec<u8>>, LlmError> {
    island_runtime::readback::wait(read).map_err(|e| LlmError::Runtime(e.to_string()))
}

fn runtime(e: island_runtime::cell::CellError) -> LlmError {
    LlmError::Runtime(e.to_string())
}
