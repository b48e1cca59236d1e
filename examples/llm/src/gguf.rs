//! A checked GGUF reader: header, metadata, tensor directory and the tensor data's place, each
//! count, length, type id, alignment, shape and offset checked before it is used.
//!
//! Why not the `ggus` crate, which this engine used before: on a truncated or corrupt file it
//! panics (it slices the data section by the directory's extent without checking that the file
//! holds it), reads a tensor type id into a `repr(u32)` enum by an unaligned pointer read (an
//! unknown id is undefined behaviour), asserts that rows are whole blocks, and preallocates
//! maps of the header's counts unchecked. Checking a file before handing it to `ggus` would
//! mean parsing it twice; this reader is small and reads only what the engine needs.
//!
//! The checks: magic and version (2 or 3); every count (metadata keys, tensors, array elements,
//! string bytes) against the bytes left, before anything is allocated for it; value and tensor
//! type ids by a match (unknown ids are errors); arrays of arrays refused; booleans 0 or 1; strings UTF-8; keys and
//! tensor names unique; `general.alignment` a `u32` power of two; 1 to 4 dimensions, none 0;
//! rows of whole blocks; element counts and byte sizes in checked 64-bit arithmetic (at most
//! `i64::MAX`, as ggml counts them); every tensor offset a multiple of the alignment and every
//! tensor's data inside the file.

mod cursor;
pub mod error;
pub mod tensor;
pub mod value;

use cursor::Cursor;
pub use error::{GgufError, MetaError};
use std::collections::HashMap;
use std::ops::Range;
pub use tensor::{Tensor, TensorType};
pub use value::{Value, ValueType};

/// The alignment of the tensor data when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// Bytes of the smallest metadata entry: the key's length, the value type, a one-byte value.
const MIN_ENTRY: u64 = 8 + 4 + 1;
/// Bytes of the smallest directory entry: the name's length, the dimension count, one
/// dimension, the type id and the offset.
const MIN_TENSOR: u64 = 8 + 4 + 8 + 4 + 8;

/// Where the file's parts lie, in bytes from its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sections {
    /// Magic, version and the two counts.
    pub header: Range<usize>,
    pub metadata: Range<usize>,
    /// The tensor directory.
    pub directory: Range<usize>,
    /// From the aligned start of the tensor data to the end of the file.
    pub data: Range<usize>,
}

/// A parsed GGUF file, borrowing its bytes.
#[derive(Clone, Debug)]
pub struct Gguf<'a> {
    pub version: u32,
    pub alignment: u64,
    pub sections: Sections,
    metadata: Vec<(&'a str, Value<'a>)>,
    keys: HashMap<&'a str, usize>,
    tensors: Vec<Tensor<'a>>,
    names: HashMap<&'a str, usize>,
}

impl<'a> Gguf<'a> {
    /// Parses `bytes`, refusing anything the file cannot back (see the module's checks).
    pub fn parse(bytes: &'a [u8]) -> Result<Gguf<'a>, GgufError> {
        let mut c = Cursor::new(bytes);
        let magic = c.take(4, || "the magic `GGUF`".into()).map_err(|_| GgufError::Magic { found: bytes.to_vec() })?;
        if magic != b"GGUF" {
            return Err(GgufError::Magic { found: magic.to_vec() });
        }
        let version = c.u32(|| "the version".into())?;
        if !(2..=3).contains(&version) {
            return Err(GgufError::Version { found: version });
        }
        let tensors_at = c.offset();
        let tensor_count = c.u64(|| "the tensor count".into())?;
        let keys_at = c.offset();
        let key_count = c.u64(|| "the metadata key count".into())?;
        c.bound(key_count, MIN_ENTRY, keys_at, || "the metadata key count".into())?;

        let header = 0..c.offset();
        let mut gguf = Gguf {
            version,
            alignment: DEFAULT_ALIGNMENT,
            sections: Sections {
                header: header.clone(),
                metadata: header.clone(),
                directory: header.clone(),
                data: header,
            },
            metadata: Vec::new(),
            keys: HashMap::new(),
            tensors: Vec::new(),
            names: HashMap::new(),
        };
        for i in 0..key_count {
            let key = c.string(|| format!("metadata key {i}"))?;
            let at = c.offset();
            let id = c.u32(|| format!("the value type of `{key}`"))?;
            let ty = ValueType::from_id(id).ok_or_else(|| GgufError::ValueType { key: key.into(), offset: at, id })?;
            let value = value::read(&mut c, key, ty)?;
            if key == "general.alignment" {
                gguf.alignment = match value {
                    Value::U32(a) if a.is_power_of_two() => a.into(),
                    Value::U32(a) => return Err(GgufError::Alignment { why: format!("is {a}, not a power of two") }),
                    ref other => {
                        return Err(GgufError::Alignment { why: format!("is {}, not u32", other.type_name()) });
                    }
                };
            }
            if gguf.keys.insert(key, gguf.metadata.len()).is_some() {
                return Err(GgufError::DuplicateKey { key: key.into() });
            }
            gguf.metadata.push((key, value));
        }

        gguf.sections.metadata = gguf.sections.header.end..c.offset();
        c.bound(tensor_count, MIN_TENSOR, tensors_at, || "the tensor count".into())?;
        let mut directory = Vec::new();
        for i in 0..tensor_count {
            let name = c.string(|| format!("the name of tensor {i}"))?;
            let at = c.offset();
            let dims = c.u32(|| format!("the dimension count of `{name}`"))?;
            if !(1..=4).contains(&dims) {
                return Err(GgufError::Dims { name: name.into(), offset: at, dims });
            }
            let mut shape = Vec::with_capacity(dims as usize);
            for index in 0..dims as usize {
                let offset = c.offset();
                let d = c.u64(|| format!("dimension {index} of `{name}`"))?;
                if d == 0 {
                    return Err(GgufError::ZeroDimension { name: name.into(), offset, index });
                }
                shape.push(d);
            }
            let at = c.offset();
            let id = c.u32(|| format!("the type of `{name}`"))?;
            let ty =
                TensorType::from_id(id).ok_or_else(|| GgufError::TensorType { name: name.into(), offset: at, id })?;
            let size = ty.bytes(name, &shape)?;
            let offset = c.u64(|| format!("the data offset of `{name}`"))?;
            if !offset.is_multiple_of(gguf.alignment) {
                return Err(GgufError::Misaligned { name: name.into(), offset, alignment: gguf.alignment });
            }
            if gguf.names.insert(name, directory.len()).is_some() {
                return Err(GgufError::DuplicateTensor { name: name.into() });
            }
            directory.push((name, ty, shape, offset, size));
        }

        // The tensor data starts at the next multiple of the alignment.
        gguf.sections.directory = gguf.sections.metadata.end..c.offset();
        let end = c.offset() as u64;
        let start = end.div_ceil(gguf.alignment).saturating_mul(gguf.alignment);
        let data_len = (bytes.len() as u64).saturating_sub(start);
        if !directory.is_empty() && start > bytes.len() as u64 {
            return Err(GgufError::Truncated {
                what: "the padding before the tensor data".into(),
                offset: c.offset(),
                need: start - end,
                left: c.left(),
            });
        }
        gguf.sections.data = (start.min(bytes.len() as u64) as usize)..bytes.len();
        for (name, ty, shape, offset, size) in directory {
            let outside = || GgufError::Outside { name: name.into(), offset, bytes: size, data: data_len };
            let first = start.checked_add(offset).ok_or_else(outside)?;
            let last = first.checked_add(size).filter(|&l| l <= bytes.len() as u64).ok_or_else(outside)?;
            // Both fit the file's length, a usize.
            let data = &bytes[first as usize..last as usize];
            gguf.tensors.push(Tensor { name, ty, shape, offset, data });
        }
        Ok(gguf)
    }

    /// The metadata in file order.
    pub fn metadata(&self) -> &[(&'a str, Value<'a>)] {
        &self.metadata
    }

    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.keys.get(key).map(|&i| &self.metadata[i].1)
    }

    /// The tensors in directory order.
    pub fn tensors(&self) -> &[Tensor<'a>] {
        &self.tensors
    }

    pub fn tensor(&self, name: &str) -> Option<&Tensor<'a>> {
        self.names.get(name).map(|&i| &self.tensors[i])
    }

    fn value(&self, key: &str) -> Result<&Value<'a>, MetaError> {
        self.get(key).ok_or_else(|| MetaError::Missing { key: key.into() })
    }

    fn wrong(&self, key: &str, want: &'static str, found: &Value) -> MetaError {
        MetaError::Type { key: key.into(), want, found: found.type_name() }
    }

    /// An integer of any width and sign, as a `usize`.
    pub fn usize(&self, key: &str) -> Result<usize, MetaError> {
        let v = self.value(key)?;
        let n: i128 = match *v {
            Value::U8(n) => n.into(),
            Value::I8(n) => n.into(),
            Value::U16(n) => n.into(),
            Value::I16(n) => n.into(),
            Value::U32(n) => n.into(),
            Value::I32(n) => n.into(),
            Value::U64(n) => n.into(),
            Value::I64(n) => n.into(),
            _ => return Err(self.wrong(key, "an integer", v)),
        };
        usize::try_from(n).map_err(|_| MetaError::Range { key: key.into(), value: n.to_string(), want: "usize" })
    }

    /// An integer of any width and sign, as a `u32`.
    pub fn u32(&self, key: &str) -> Result<u32, MetaError> {
        let n = self.usize(key)?;
        u32::try_from(n).map_err(|_| MetaError::Range { key: key.into(), value: n.to_string(), want: "u32" })
    }

    pub fn f32(&self, key: &str) -> Result<f32, MetaError> {
        match *self.value(key)? {
            Value::F32(x) => Ok(x),
            ref v => Err(self.wrong(key, "f32", v)),
        }
    }

    pub fn bool(&self, key: &str) -> Result<bool, MetaError> {
        match *self.value(key)? {
            Value::Bool(b) => Ok(b),
            ref v => Err(self.wrong(key, "bool", v)),
        }
    }

    pub fn str(&self, key: &str) -> Result<&'a str, MetaError> {
        match *self.value(key)? {
            Value::String(s) => Ok(s),
            ref v => Err(self.wrong(key, "string", v)),
        }
    }

    pub fn strings(&self, key: &str) -> Result<&[&'a str], MetaError> {
        match self.value(key)? {
            Value::Strings(s) => Ok(s),
            v => Err(self.wrong(key, "an array of strings", v)),
        }
    }

    pub fn i32s(&self, key: &str) -> Result<Vec<i32>, MetaError> {
        match *self.value(key)? {
            Value::Scalars { ty: ValueType::I32, bytes } => {
                Ok(bytes.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
            }
            ref v => Err(self.wrong(key, "an array of i32", v)),
        }
    }
}
