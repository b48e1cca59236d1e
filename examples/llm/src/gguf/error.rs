//! Why a GGUF file is refused, and why a metadata value cannot be used: each names the byte
//! offset, the key or the tensor.

/// A GGUF file that does not parse: a count, length, type id, alignment, shape or offset that
/// the file cannot back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GgufError {
    #[error("not a GGUF file: it starts with {found:02x?}, not `GGUF`")]
    Magic { found: Vec<u8> },
    #[error("GGUF version {found}: this reader reads versions 2 and 3")]
    Version { found: u32 },
    #[error("{what} at byte {offset} needs {need} bytes; {left} are left in the file")]
    Truncated { what: String, offset: usize, need: u64, left: usize },
    #[error("{what} at byte {offset} is {count}; the {left} bytes after it hold at most {most}")]
    Count { what: String, offset: usize, count: u64, left: usize, most: u64 },
    #[error("{what} at byte {offset} is not UTF-8")]
    Utf8 { what: String, offset: usize },
    #[error("metadata key `{key}`: value type {id} at byte {offset} is not a GGUF value type")]
    ValueType { key: String, offset: usize, id: u32 },
    #[error("metadata key `{key}`: an array of arrays at byte {offset} (not read)")]
    NestedArray { key: String, offset: usize },
    #[error("metadata key `{key}`: a bool at byte {offset} is {byte}, not 0 or 1")]
    Bool { key: String, offset: usize, byte: u8 },
    #[error("metadata key `{key}` appears twice")]
    DuplicateKey { key: String },
    #[error("`general.alignment` {why}")]
    Alignment { why: String },
    #[error("tensor `{name}`: {dims} dimensions at byte {offset}; 1 to 4 are allowed")]
    Dims { name: String, offset: usize, dims: u32 },
    #[error("tensor `{name}`: dimension {index} at byte {offset} is 0")]
    ZeroDimension { name: String, offset: usize, index: usize },
    #[error("tensor `{name}`: type id {id} at byte {offset} is not a ggml type this reader knows")]
    TensorType { name: String, offset: usize, id: u32 },
    #[error("tensor `{name}`: rows of {row} {ty} values are not whole blocks of {block}")]
    Blocks { name: String, ty: &'static str, row: u64, block: u64 },
    #[error("tensor `{name}`: shape {shape:?} of {ty} overflows a 64-bit size")]
    Overflow { name: String, ty: &'static str, shape: Vec<u64> },
    #[error("tensor `{name}` appears twice")]
    DuplicateTensor { name: String },
    #[error("tensor `{name}`: data offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned { name: String, offset: u64, alignment: u64 },
    #[error("tensor `{name}`: {bytes} bytes at data offset {offset} reach past the {data} bytes of tensor data")]
    Outside { name: String, offset: u64, bytes: u64, data: u64 },
}

/// A metadata value the engine asks for that is absent, of another type or out of range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("the GGUF metadata key `{key}` is missing")]
    Missing { key: String },
    #[error("the GGUF metadata key `{key}` holds {found}, not {want}")]
    Type { key: String, want: &'static str, found: &'static str },
    #[error("the GGUF metadata key `{key}` holds {value}, out of range for {want}")]
    Range { key: String, value: String, want: &'static str },
}
