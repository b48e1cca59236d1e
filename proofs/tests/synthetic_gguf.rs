//! A small GGUF model the corruption trial writes itself: the engine's structure (header,
//! metadata of every GGUF value type, a tensor directory of two llama layers, aligned data) at a
//! 64-wide embedding and a 9-token vocabulary, about 45 KB, with the offset of every field a
//! corruption targets.

use std::ops::Range;

/// What a recorded field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    TensorCount,
    KeyCount,
    /// A u64 length before a string's bytes (a key, a value, an array element, a tensor name).
    StringLength,
    ValueType,
    ElementType,
    ArrayLength,
    Alignment,
    /// A byte of a bool value or of a bool array.
    Bool,
    DimCount,
    /// A u64 dimension; `first` (the row) of a quantized tensor must hold whole blocks.
    Dim {
        first: bool,
        quantized: bool,
    },
    TensorType,
    Offset,
}

/// The file, its four sections, every recorded field and the byte ranges of the metadata keys
/// and tensor names.
pub struct Synthetic {
    pub bytes: Vec<u8>,
    pub sections: [(&'static str, Range<usize>); 4],
    pub fields: Vec<(Field, usize)>,
    pub keys: Vec<Range<usize>>,
    pub names: Vec<Range<usize>>,
    pub alignment: u64,
}

/// A metadata value as written.
enum V {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(&'static str),
    U64(u64),
    I64(i64),
    F64(f64),
    /// Element type id and elements.
    Array(u32, Vec<V>),
}

impl V {
    fn id(&self) -> u32 {
        match self {
            V::U8(_) => 0,
            V::I8(_) => 1,
            V::U16(_) => 2,
            V::I16(_) => 3,
            V::U32(_) => 4,
            V::I32(_) => 5,
            V::F32(_) => 6,
            V::Bool(_) => 7,
            V::Str(_) => 8,
            V::Array(..) => 9,
            V::U64(_) => 10,
            V::I64(_) => 11,
            V::F64(_) => 12,
        }
    }
}

#[derive(Default)]
struct Writer {
    b: Vec<u8>,
    fields: Vec<(Field, usize)>,
}

impl Writer {
    fn u32(&mut self, field: Option<Field>, v: u32) {
        field.into_iter().for_each(|f| self.fields.push((f, self.b.len())));
        self.b.extend(v.to_le_bytes());
    }
    fn u64(&mut self, field: Option<Field>, v: u64) {
        field.into_iter().for_each(|f| self.fields.push((f, self.b.len())));
        self.b.extend(v.to_le_bytes());
    }
    fn str(&mut self, s: &str) -> Range<usize> {
        self.u64(Some(Field::StringLength), s.len() as u64);
        self.b.extend(s.as_bytes());
        self.b.len() - s.len()..self.b.len()
    }
    fn value(&mut self, v: &V) {
        match v {
            V::U8(x) => self.b.push(*x),
            V::I8(x) => self.b.push(*x as u8),
            V::U16(x) => self.b.extend(x.to_le_bytes()),
            V::I16(x) => self.b.extend(x.to_le_bytes()),
            V::U32(x) => self.b.extend(x.to_le_bytes()),
            V::I32(x) => self.b.extend(x.to_le_bytes()),
            V::F32(x) => self.b.extend(x.to_le_bytes()),
            V::Bool(x) => {
                self.fields.push((Field::Bool, self.b.len()));
                self.b.push(*x as u8)
            }
            V::Str(s) => drop(self.str(s)),
            V::U64(x) => self.b.extend(x.to_le_bytes()),
            V::I64(x) => self.b.extend(x.to_le_bytes()),
            V::F64(x) => self.b.extend(x.to_le_bytes()),
            V::Array(elem, items) => {
                self.u32(Some(Field::ElementType), *elem);
                self.u64(Some(Field::ArrayLength), items.len() as u64);
                items.iter().for_each(|i| self.value(i));
            }
        }
    }
}

/// The vocabulary: three control tokens, then byte-level BPE tokens and their merges.
const TOKENS: [&str; 9] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "a", "b", "Ġ", "ab", "Ġa", "Ġab"];
const MERGES: [&str; 3] = ["a b", "Ġ a", "Ġa b"];
const DIM: u64 = 64;
const LAYERS: usize = 2;
const ALIGNMENT: u64 = 32;

/// ggml type ids: F32, Q4_1, Q8_0.
const F32: u32 = 0;
const Q4_1: u32 = 3;
const Q8_0: u32 = 8;

fn metadata() -> Vec<(&'static str, V)> {
    let strings = |s: &[&'static str]| V::Array(8, s.iter().map(|&t| V::Str(t)).collect());
    vec![
        ("general.architecture", V::Str("llama")),
        ("general.alignment", V::U32(ALIGNMENT as u32)),
        ("general.name", V::Str("synthetic llama")),
        ("llama.block_count", V::U64(LAYERS as u64)),
        ("llama.context_length", V::U32(64)),
        ("llama.embedding_length", V::U32(DIM as u32)),
        ("llama.feed_forward_length", V::U32(DIM as u32)),
        ("llama.attention.head_count", V::U32(1)),
        ("llama.attention.head_count_kv", V::U32(1)),
        ("llama.rope.dimension_count", V::U32(64)),
        ("llama.rope.freq_base", V::F32(10000.0)),
        ("llama.attention.layer_norm_rms_epsilon", V::F32(1e-5)),
        ("tokenizer.ggml.model", V::Str("gpt2")),
        ("tokenizer.ggml.pre", V::Str("smollm")),
        ("tokenizer.ggml.tokens", strings(&TOKENS)),
        ("tokenizer.ggml.token_type", V::Array(5, [3, 3, 3, 1, 1, 1, 1, 1, 1].map(V::I32).into())),
        ("tokenizer.ggml.merges", strings(&MERGES)),
        ("tokenizer.ggml.bos_token_id", V::U32(1)),
        ("tokenizer.ggml.eos_token_id", V::U32(2)),
        ("tokenizer.ggml.add_bos_token", V::Bool(false)),
        // Every other value type, which the reader must step over (pairs of keys of one length,
        // for the duplicate-key corruption).
        ("extra.u8", V::U8(7)),
        ("extra.i8", V::I8(-7)),
        ("extra.u16", V::U16(700)),
        ("extra.i16", V::I16(-700)),
        ("extra.i32", V::I32(-70_000)),
        ("extra.u64", V::U64(7 << 40)),
        ("extra.i64", V::I64(-7 << 40)),
        ("extra.f64", V::F64(0.7)),
        ("extra.bool", V::Bool(true)),
        ("extra.u8s", V::Array(0, [1, 2, 3].map(V::U8).into())),
        ("extra.f32s", V::Array(6, [0.5, -1.5].map(V::F32).into())),
        ("extra.bools", V::Array(7, [true, false, true].map(V::Bool).into())),
        ("extra.u64s", V::Array(10, [1, u64::MAX].map(V::U64).into())),
        ("extra.none", V::Array(8, Vec::new())),
    ]
}

/// The tensors: name, type, shape (innermost first).
fn tensors() -> Vec<(String, u32, Vec<u64>)> {
    let mut t = vec![
        ("token_embd.weight".to_string(), Q8_0, vec![DIM, TOKENS.len() as u64]),
        ("output_norm.weight".to_string(), F32, vec![DIM]),
    ];
    for l in 0..LAYERS {
        let name = |s: &str| format!("blk.{l}.{s}.weight");
        t.push((name("attn_norm"), F32, vec![DIM]));
        for m in ["attn_q", "attn_k", "attn_v", "attn_output"] {
            t.push((name(m), Q4_1, vec![DIM, DIM]));
        }
        t.push((name("ffn_norm"), F32, vec![DIM]));
        for m in ["ffn_gate", "ffn_up", "ffn_down"] {
            t.push((name(m), Q4_1, vec![DIM, DIM]));
        }
    }
    t
}

/// The bytes of a tensor: f32 ones for vectors; quantized blocks with a scale of 1/16, a
/// minimum of −1/2 (Q4_1) and values from `next`.
fn data(ty: u32, shape: &[u64], next: &mut impl FnMut() -> u8) -> Vec<u8> {
    let elements: u64 = shape.iter().product();
    let mut out = Vec::new();
    match ty {
        F32 => (0..elements).for_each(|_| out.extend(1.0f32.to_le_bytes())),
        _ => {
            for _ in 0..elements / 32 {
                out.extend(0x2c00u16.to_le_bytes());
                if ty == Q4_1 {
                    out.extend(0xb800u16.to_le_bytes());
                }
                (0..if ty == Q4_1 { 16 } else { 32 }).for_each(|_| out.push(next()));
            }
        }
    }
    out
}

fn pad(w: &mut Writer) {
    while !(w.b.len() as u64).is_multiple_of(ALIGNMENT) {
        w.b.push(0);
    }
}

/// The model file, its values from `seed`.
pub fn write(seed: u64) -> Synthetic {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 56) as u8
    };
    let (meta, tensors) = (metadata(), tensors());
    let mut w = Writer::default();
    w.b.extend(b"GGUF");
    w.u32(None, 3);
    w.u64(Some(Field::TensorCount), tensors.len() as u64);
    w.u64(Some(Field::KeyCount), meta.len() as u64);
    let header = 0..w.b.len();
    let mut keys = Vec::new();
    for (key, v) in &meta {
        keys.push(w.str(key));
        w.u32(Some(Field::ValueType), v.id());
        if *key == "general.alignment" {
            w.fields.push((Field::Alignment, w.b.len()));
        }
        w.value(v);
    }
    let metadata = header.end..w.b.len();
    let (mut names, mut blobs, mut offset) = (Vec::new(), Vec::new(), 0u64);
    for (name, ty, shape) in &tensors {
        names.push(w.str(name));
        w.u32(Some(Field::DimCount), shape.len() as u32);
        for (i, &d) in shape.iter().enumerate() {
            w.u64(Some(Field::Dim { first: i == 0, quantized: *ty != F32 }), d);
        }
        w.u32(Some(Field::TensorType), *ty);
        w.u64(Some(Field::Offset), offset);
        let blob = data(*ty, shape, &mut next);
        offset += (blob.len() as u64).div_ceil(ALIGNMENT) * ALIGNMENT;
        blobs.push(blob);
    }
    let directory = metadata.end..w.b.len();
    pad(&mut w);
    let start = w.b.len();
    let last = blobs.len() - 1;
    for (i, blob) in blobs.into_iter().enumerate() {
        w.b.extend(blob);
        // No padding after the last tensor: every cut of the file reaches into its data.
        if i < last {
            pad(&mut w);
        }
    }
    let sections = [("header", header), ("metadata", metadata), ("directory", directory), ("data", start..w.b.len())];
    Synthetic { bytes: w.b, sections, fields: w.fields, keys, names, alignment: ALIGNMENT }
}
