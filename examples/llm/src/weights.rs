//! The model read from its GGUF file: hyperparameters, tokenizer tables and weights, each
//! checked against what the engine runs before anything reaches a device.

use crate::error::LlmError;
use crate::quant::{QuantMatrix, QuantType};
use ggus::{GGmlType, GGuf, GGufMetaMapExt};

/// The hyperparameters the forward pass needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub layers: usize,
    pub dim: usize,
    pub ffn: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub vocab: usize,
    pub rope_base: f32,
    pub eps: f32,
    pub context: usize,
}

impl Config {
    /// Values of one position's keys (or values) across the KV heads.
    pub fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}

/// One transformer block's weights.
#[derive(Clone, Debug)]
pub struct Layer {
    pub attn_norm: Vec<f32>,
    /// q, k and v stacked: `dim + 2·kv_dim` rows.
    pub qkv: QuantMatrix,
    pub out: QuantMatrix,
    pub ffn_norm: Vec<f32>,
    /// gate and up stacked: `2·ffn` rows.
    pub gate_up: QuantMatrix,
    pub down: QuantMatrix,
}

/// The tokenizer's tables as the GGUF stores them.
#[derive(Clone, Debug)]
pub struct Vocab {
    pub tokens: Vec<String>,
    pub token_types: Vec<i32>,
    pub merges: Vec<String>,
    pub pre: String,
    pub eos: u32,
    pub add_bos: bool,
    pub bos: u32,
}

/// The whole model on the host.
#[derive(Clone, Debug)]
pub struct Model {
    pub config: Config,
    pub vocab: Vocab,
    /// Q8_0, `vocab × dim`: the embedding table, and the output matrix (tied).
    pub embedding: QuantMatrix,
    pub layers: Vec<Layer>,
    pub output_norm: Vec<f32>,
}

fn meta<T>(r: Result<T, ggus::GGufMetaError>, key: &str) -> Result<T, LlmError> {
    r.map_err(|e| LlmError::Metadata { key: key.into(), why: format!("{e:?}") })
}

impl Model {
    /// Parses a GGUF file of the llama architecture with Q4_1 or Q8_0 matrices.
    pub fn from_gguf(bytes: &[u8]) -> Result<Model, LlmError> {
        let gguf = GGuf::new(bytes).map_err(|e| LlmError::Gguf(e.to_string()))?;
        let arch = meta(gguf.general_architecture(), "general.architecture")?;
        if arch != "llama" {
            return Err(LlmError::Unsupported { what: "`general.architecture` = llama".into(), found: arch.into() });
        }
        let usize_of = |key: &str| meta(gguf.get_usize(key), key);
        let f32_of = |key: &str| meta(gguf.get_f32(key), key);
        let config = Config {
            layers: usize_of("llama.block_count")?,
            dim: usize_of("llama.embedding_length")?,
            ffn: usize_of("llama.feed_forward_length")?,
            heads: usize_of("llama.attention.head_count")?,
            kv_heads: usize_of("llama.attention.head_count_kv")?,
            head_dim: usize_of("llama.rope.dimension_count")?,
            vocab: 0,
            rope_base: f32_of("llama.rope.freq_base")?,
            eps: f32_of("llama.attention.layer_norm_rms_epsilon")?,
            context: usize_of("llama.context_length")?,
        };
        if config.heads == 0 || config.kv_heads == 0 || !config.heads.is_multiple_of(config.kv_heads) {
            return Err(LlmError::Unsupported {
                what: "a query head count that is a multiple of the KV head count".into(),
                found: format!("{} and {}", config.heads, config.kv_heads),
            });
        }
        if config.head_dim * config.heads != config.dim || config.head_dim != 64 {
            return Err(LlmError::Unsupported {
                what: "heads of 64 that tile the embedding".into(),
                found: format!("{} heads of {} for an embedding of {}", config.heads, config.head_dim, config.dim),
            });
        }
        let vocab = read_vocab(&gguf)?;
        let config = Config { vocab: vocab.tokens.len(), ..config };

        let tensor = |name: &str| -> Result<(GGmlType, Vec<usize>, &[u8]), LlmError> {
            let t = gguf
                .tensors
                .get(name)
                .ok_or_else(|| LlmError::Tensor { name: name.into(), why: "missing".into() })?
                .to_info();
            let data = gguf
                .data
                .get(t.offset()..t.offset() + t.nbytes())
                .ok_or_else(|| LlmError::Tensor { name: name.into(), why: "its data lies outside the file".into() })?;
            Ok((t.ty(), t.shape().iter().map(|&d| d as usize).collect(), data))
        };
        let matrix = |name: &str, rows: usize, cols: usize| -> Result<QuantMatrix, LlmError> {
            let (ty, shape, data) = tensor(name)?;
            let bad = |why: String| LlmError::Tensor { name: name.into(), why };
            if shape != [cols, rows] {
                return Err(bad(format!("shape {shape:?}, expected [{cols}, {rows}]")));
            }
            let ty = match ty {
                GGmlType::Q8_0 => QuantType::Q8_0,
                GGmlType::Q4_1 => QuantType::Q4_1,
                other => return Err(bad(format!("type {other:?}; this engine runs Q8_0 and Q4_1"))),
            };
            QuantMatrix::from_gguf(ty, rows, cols, data).map_err(|source| LlmError::Quant { name: name.into(), source })
        };
        let vector = |name: &str, len: usize| -> Result<Vec<f32>, LlmError> {
            let (ty, shape, data) = tensor(name)?;
            if ty != GGmlType::F32 || shape != [len] {
                return Err(LlmError::Tensor {
                    name: name.into(),
                    why: format!("{ty:?} {shape:?}, expected F32 [{len}]"),
                });
            }
            Ok(data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        };
        let stack = |name: &str, parts: &[&QuantMatrix]| {
            QuantMatrix::stack(parts).map_err(|source| LlmError::Quant { name: name.into(), source })
        };

        let (d, kv) = (config.dim, config.kv_dim());
        let embedding = matrix("token_embd.weight", config.vocab, d)?;
        if embedding.ty != QuantType::Q8_0 {
            return Err(LlmError::Tensor {
                name: "token_embd.weight".into(),
                why: "this engine needs Q8_0 embeddings".into(),
            });
        }
        if gguf.tensors.contains_key("output.weight") {
            return Err(LlmError::Unsupported {
                what: "tied embeddings".into(),
                found: "an `output.weight` tensor".into(),
            });
        }
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let name = |t: &str| format!("blk.{l}.{t}.weight");
            let (q, k, v) =
                (matrix(&name("attn_q"), d, d)?, matrix(&name("attn_k"), kv, d)?, matrix(&name("attn_v"), kv, d)?);
            let (gate, up) = (matrix(&name("ffn_gate"), config.ffn, d)?, matrix(&name("ffn_up"), config.ffn, d)?);
            layers.push(Layer {
                attn_norm: vector(&name("attn_norm"), d)?,
                qkv: stack(&name("attn_qkv"), &[&q, &k, &v])?,
                out: matrix(&name("attn_output"), d, d)?,
                ffn_norm: vector(&name("ffn_norm"), d)?,
                gate_up: stack(&name("ffn_gate_up"), &[&gate, &up])?,
                down: matrix(&name("ffn_down"), d, config.ffn)?,
            });
        }
        Ok(Model { config, vocab, embedding, layers, output_norm: vector("output_norm.weight", d)? })
    }
}

fn read_vocab(gguf: &GGuf) -> Result<Vocab, LlmError> {
    let strings = |key: &str| -> Result<Vec<String>, LlmError> {
        meta(gguf.get_str_arr(key), key)?
            .map(|s| s.map(str::to_owned).map_err(|e| LlmError::Metadata { key: key.into(), why: format!("{e:?}") }))
            .collect()
    };
    let model = meta(gguf.tokenizer_ggml_model(), "tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(LlmError::Unsupported { what: "a byte-level BPE vocabulary (`gpt2`)".into(), found: model.into() });
    }
    let tokens = strings("tokenizer.ggml.tokens")?;
    let token_types = meta(gguf.get_i32_arr("tokenizer.ggml.token_type"), "tokenizer.ggml.token_type")?
        .collect::<Result<Vec<i32>, _>>()
        .map_err(|e| LlmError::Metadata { key: "tokenizer.ggml.token_type".into(), why: format!("{e:?}") })?;
    if token_types.len() != tokens.len() {
        return Err(LlmError::Metadata {
            key: "tokenizer.ggml.token_type".into(),
            why: "not one type per token".into(),
        });
    }
    let id = |key: &str| meta(gguf.get_u32(key), key);
    Ok(Vocab {
        merges: strings("tokenizer.ggml.merges")?,
        pre: meta(gguf.get_str("tokenizer.ggml.pre"), "tokenizer.ggml.pre")?.to_owned(),
        eos: id("tokenizer.ggml.eos_token_id")?,
        bos: id("tokenizer.ggml.bos_token_id")?,
        add_bos: gguf.get_bool("tokenizer.ggml.add_bos_token").unwrap_or(false),
        tokens,
        token_types,
    })
}
