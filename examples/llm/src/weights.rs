//! The model read from its GGUF file: hyperparameters, tokenizer tables and weights, each
//! checked against what the engine runs before anything reaches a device.

use crate::error::LlmError;
use crate::gguf::{Gguf, MetaError, Tensor, TensorType};
use crate::quant::{QuantMatrix, QuantType};

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

impl Model {
    /// Parses a GGUF file of the llama architecture with Q4_1 or Q8_0 matrices. The file is read
    /// by the checked reader ([`crate::gguf`]); every hyperparameter is then checked against the
    /// tensors before it sizes anything.
    pub fn from_gguf(bytes: &[u8]) -> Result<Model, LlmError> {
        let gguf = Gguf::parse(bytes)?;
        let arch = gguf.str("general.architecture")?;
        if arch != "llama" {
            return Err(LlmError::Unsupported { what: "`general.architecture` = llama".into(), found: arch.into() });
        }
        let config = Config {
            layers: gguf.usize("llama.block_count")?,
            dim: gguf.usize("llama.embedding_length")?,
            ffn: gguf.usize("llama.feed_forward_length")?,
            heads: gguf.usize("llama.attention.head_count")?,
            kv_heads: gguf.usize("llama.attention.head_count_kv")?,
            head_dim: gguf.usize("llama.rope.dimension_count")?,
            vocab: 0,
            rope_base: gguf.f32("llama.rope.freq_base")?,
            eps: gguf.f32("llama.attention.layer_norm_rms_epsilon")?,
            context: gguf.usize("llama.context_length")?,
        };
        if config.heads == 0 || config.kv_heads == 0 || !config.heads.is_multiple_of(config.kv_heads) {
            return Err(LlmError::Unsupported {
                what: "a query head count that is a multiple of the KV head count".into(),
                found: format!("{} and {}", config.heads, config.kv_heads),
            });
        }
        if config.head_dim.checked_mul(config.heads) != Some(config.dim) || config.head_dim != 64 {
            return Err(LlmError::Unsupported {
                what: "heads of 64 that tile the embedding".into(),
                found: format!("{} heads of {} for an embedding of {}", config.heads, config.head_dim, config.dim),
            });
        }
        // Nine tensors a layer: a block count the directory cannot hold sizes nothing.
        if config.layers == 0 || config.layers > gguf.tensors().len() / 9 {
            return Err(LlmError::Unsupported {
                what: "1 or more layers of nine tensors each".into(),
                found: format!("{} layers and {} tensors", config.layers, gguf.tensors().len()),
            });
        }
        for (key, x) in
            [("llama.rope.freq_base", config.rope_base), ("llama.attention.layer_norm_rms_epsilon", config.eps)]
        {
            if !(x.is_finite() && x > 0.0) {
                return Err(LlmError::Metadata { key: key.into(), why: format!("{x} is not finite and positive") });
            }
        }
        let vocab = read_vocab(&gguf)?;
        let config = Config { vocab: vocab.tokens.len(), ..config };

        let tensor = |name: &str| -> Result<&Tensor, LlmError> {
            gguf.tensor(name).ok_or_else(|| LlmError::Tensor { name: name.into(), why: "missing".into() })
        };
        let matrix = |name: &str, rows: usize, cols: usize| -> Result<QuantMatrix, LlmError> {
            let t = tensor(name)?;
            let bad = |why: String| LlmError::Tensor { name: name.into(), why };
            if t.shape != [cols as u64, rows as u64] {
                return Err(bad(format!("shape {:?}, expected [{cols}, {rows}]", t.shape)));
            }
            let ty = match t.ty {
                TensorType::Q8_0 => QuantType::Q8_0,
                TensorType::Q4_1 => QuantType::Q4_1,
                other => return Err(bad(format!("type {}; this engine runs Q8_0 and Q4_1", other.name()))),
            };
            QuantMatrix::from_gguf(ty, rows, cols, t.data)
                .map_err(|source| LlmError::Quant { name: name.into(), source })
        };
        let vector = |name: &str, len: usize| -> Result<Vec<f32>, LlmError> {
            let t = tensor(name)?;
            if t.ty != TensorType::F32 || t.shape != [len as u64] {
                return Err(LlmError::Tensor {
                    name: name.into(),
                    why: format!("{} {:?}, expected F32 [{len}]", t.ty.name(), t.shape),
                });
            }
            Ok(t.data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
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
        if gguf.tensor("output.weight").is_some() {
            return Err(LlmError::Unsupported {
                what: "tied embeddings".into(),
                found: "an `output.weight` tensor".into(),
            });
        }
        let mut layers = Vec::new();
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

fn read_vocab(gguf: &Gguf) -> Result<Vocab, LlmError> {
    let model = gguf.str("tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(LlmError::Unsupported { what: "a byte-level BPE vocabulary (`gpt2`)".into(), found: model.into() });
    }
    let owned =
        |key: &str| -> Result<Vec<String>, LlmError> { Ok(gguf.strings(key)?.iter().map(|&s| s.to_owned()).collect()) };
    let tokens = owned("tokenizer.ggml.tokens")?;
    let token_types = gguf.i32s("tokenizer.ggml.token_type")?;
    if token_types.len() != tokens.len() {
        return Err(LlmError::Metadata {
            key: "tokenizer.ggml.token_type".into(),
            why: "not one type per token".into(),
        });
    }
    // Token ids the engine feeds or stops at must name a token.
    let id = |key: &str| -> Result<u32, LlmError> {
        let id = gguf.u32(key)?;
        if id as usize >= tokens.len() {
            return Err(LlmError::Metadata {
                key: key.into(),
                why: format!("{id} is outside the {} tokens", tokens.len()),
            });
        }
        Ok(id)
    };
    let add_bos = match gguf.bool("tokenizer.ggml.add_bos_token") {
        Err(MetaError::Missing { .. }) => false,
        other => other?,
    };
    Ok(Vocab {
        merges: owned("tokenizer.ggml.merges")?,
        pre: gguf.str("tokenizer.ggml.pre")?.to_owned(),
        eos: id("tokenizer.ggml.eos_token_id")?,
        bos: id("tokenizer.ggml.bos_token_id")?,
        add_bos,
        tokens,
        token_types,
    })
}
