//! The forward pass on one CubeCL client: weights resident once in their quantized form, a KV
//! cache, one token a step.

use crate::cells;
use crate::error::LlmError;
use crate::kernels::{AttnShape, MatvecShape};
use crate::quant::{BLOCK, QuantMatrix};
use crate::rope::rope_tables;
use crate::weights::{Config, Model};
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_runtime::Target;

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

/// The activations and caches of one sequence.
struct Scratch {
    x: Handle,
    h: Handle,
    xq: Handle,
    xd: Handle,
    qkv: Handle,
    /// The attention state: the query, then each layer's key cache, then each layer's value
    /// cache (`crate::kernels::rope_store`).
    state: Handle,
    s: Handle,
    att: Handle,
    gate_up: Handle,
    a: Handle,
    logits: Handle,
}

/// The model on a device, ready to run a sequence of up to `context` positions.
pub struct Engine {
    client: Client,
    target: Target,
    config: Config,
    context: usize,
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
}

fn f32s(client: &Client, v: &[f32]) -> Handle {
    client.create_from_slice(f32::as_bytes(v))
}

impl Engine {
    /// Uploads `model` to `client`'s device for sequences of up to `context` positions. `target`
    /// is the islands' tag (`None`: the device's, under the launch policy).
    pub fn new(client: &Client, model: &Model, context: usize, target: Option<Target>) -> Result<Engine, LlmError> {
        // Which candidate each cell runs is read at the first step: a wrong setting stops here.
        island_runtime::dispatch::settings().map_err(Clone::clone)?;
        let c = model.config;
        if context == 0 || context > c.context {
            return Err(LlmError::Setting(format!(
                "a context of {context} positions: the model allows 1 to {}",
                c.context
            )));
        }
        // The attention state's bytes, `(dim + 2·layers·context·kv_dim)·4`, must fit a usize.
        let kv_values = c.layers.checked_mul(context).and_then(|n| n.checked_mul(c.kv_dim()));
        if kv_values.and_then(|n| n.checked_mul(2)?.checked_add(c.dim)?.checked_mul(4)).is_none() {
            return Err(LlmError::Setting(format!("a KV cache of {context} positions overflows the address space")));
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
        let scratch = Scratch {
            x: client.empty(c.dim * 4),
            h: client.empty(c.dim * 4),
            xq: client.empty(widest),
            xd: client.empty(widest / BLOCK * 4),
            qkv: client.empty((c.dim + 2 * c.kv_dim()) * 4),
            state: client.empty((c.dim + 2 * kv_values) * 4),
            s: client.empty(c.heads * context * 4),
            att: client.empty(c.dim * 4),
            gate_up: client.empty(2 * c.ffn * 4),
            a: client.empty(c.ffn * 4),
            logits: client.empty(c.vocab * 4),
        };
        Ok(Engine {
            client: client.clone(),
            target,
            config: c,
            context,
            embedding: DeviceMatrix::new(client, &model.embedding, false),
            layers,
            output_norm: f32s(client, &model.output_norm),
            cos: f32s(client, &cos),
            sin: f32s(client, &sin),
            scratch,
            ffn_params: client.create_from_slice(u32::as_bytes(&[c.ffn as u32])),
            pos: 0,
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

    /// Runs `token` at the next position; with `logits`, returns the logits of the next token.
    pub fn step(&mut self, token: u32, logits: bool) -> Result<Option<Vec<f32>>, LlmError> {
        let c = self.config;
        if token as usize >= c.vocab {
            return Err(LlmError::Setting(format!("token {token} is outside the vocabulary of {}", c.vocab)));
        }
        if self.pos >= self.context {
            return Err(LlmError::Setting(format!("the sequence is full: {} positions", self.context)));
        }
        let (client, t, sc) = (&self.client, self.target, &self.scratch);
        let kv = c.kv_dim();
        let attn = AttnShape { heads: c.heads, kv_heads: c.kv_heads, context: self.context };
        let cache = c.layers * self.context * kv;
        let e = &self.embedding;
        cells::embed::embed(client, c.vocab, c.dim, [&e.words, &e.scales, &sc.x], token, t).map_err(runtime)?;
        let n = self.pos + 1;
        for (l, layer) in self.layers.iter().enumerate() {
            // The layer's caches in the state: keys from `keys`, values from `values`.
            let keys = c.dim + l * self.context * kv;
            let values = keys + cache;
            self.norm(&sc.x, &layer.attn_norm, &sc.h)?;
            self.matvec(&layer.qkv, &sc.h, c.dim, &sc.qkv)?;
            let slots = [self.pos, keys + self.pos * kv, values + self.pos * kv];
            cells::rope::rope(client, attn, [&sc.qkv, &sc.state, &self.cos, &self.sin], slots, t).map_err(runtime)?;
            cells::attention::scores(client, attn, [&sc.state, &sc.s], n, keys, t).map_err(runtime)?;
            cells::attention::softmax(client, attn, &sc.s, n, t).map_err(runtime)?;
            cells::attention::attend(client, attn, [&sc.s, &sc.state, &sc.att], n, values, t).map_err(runtime)?;
            self.matvec(&layer.out, &sc.att, c.dim, &sc.x)?;
            self.norm(&sc.x, &layer.ffn_norm, &sc.h)?;
            self.matvec(&layer.gate_up, &sc.h, c.dim, &sc.gate_up)?;
            cells::swiglu::swiglu(client, c.ffn, &sc.gate_up, &sc.a, &self.ffn_params, t).map_err(runtime)?;
            self.matvec(&layer.down, &sc.a, c.ffn, &sc.x)?;
        }
        self.pos += 1;
        if !logits {
            return Ok(None);
        }
        self.norm(&sc.x, &self.output_norm, &sc.h)?;
        self.matvec(&self.embedding, &sc.h, c.dim, &sc.logits)?;
        let bytes =
            island_runtime::readback::read(client, sc.logits.clone()).map_err(|e| LlmError::Runtime(e.to_string()))?;
        Ok(Some(f32::from_bytes(&bytes).to_vec()))
    }

    /// RMSNorm of `x` with `w` into `y`, with the candidate of the RMSNorm cell the device's
    /// record selects.
    fn norm(&self, x: &Handle, w: &Handle, y: &Handle) -> Result<(), LlmError> {
        let c = self.config;
        cells::rmsnorm::rmsnorm(&self.client, c.dim, c.eps, [x, w, y], self.target).map_err(runtime)
    }

    /// `y = m·q8_1(x)` (or `y += …`) over the first `cols` values of `x`, with the candidate of
    /// the matvec cell the device's record selects (`crate::cells::matvec`).
    fn matvec(&self, m: &DeviceMatrix, x: &Handle, cols: usize, y: &Handle) -> Result<(), LlmError> {
        let shape = MatvecShape { blocks: cols / BLOCK, ..m.shape };
        let bufs = [&m.words, &m.scales, &m.mins, x, &self.scratch.xq, &self.scratch.xd, y];
        cells::matvec::matvec(&self.client, shape, bufs, &m.params, self.target).map_err(runtime)
    }
}

fn runtime(e: island_runtime::cell::CellError) -> LlmError {
    LlmError::Runtime(e.to_string())
}
