//! Metadata values: the thirteen GGUF value types, read with every length checked against the
//! bytes left.

use super::cursor::Cursor;
use super::error::GgufError;

/// A GGUF metadata value type, from its id by a match (an unknown id is an error, never a
/// value of this enum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    pub fn from_id(id: u32) -> Option<ValueType> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// Bytes of one value of a fixed-size type; `None` for strings and arrays.
    pub fn size(self) -> Option<u64> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    pub fn name(self) -> &'static str {
        use ValueType::*;
        match self {
            U8 => "u8",
            I8 => "i8",
            U16 => "u16",
            I16 => "i16",
            U32 => "u32",
            I32 => "i32",
            F32 => "f32",
            Bool => "bool",
            String => "string",
            Array => "array",
            U64 => "u64",
            I64 => "i64",
            F64 => "f64",
        }
    }
}

/// One metadata value, borrowing the file's bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(&'a str),
    /// An array of strings (each checked UTF-8).
    Strings(Vec<&'a str>),
    /// An array of fixed-size values: their type and little-endian bytes (booleans checked).
    Scalars {
        ty: ValueType,
        bytes: &'a [u8],
    },
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value<'_> {
    /// The type's name, for errors (`array of i32`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::U8(_) => "u8",
            Value::I8(_) => "i8",
            Value::U16(_) => "u16",
            Value::I16(_) => "i16",
            Value::U32(_) => "u32",
            Value::I32(_) => "i32",
            Value::F32(_) => "f32",
            Value::Bool(_) => "bool",
            Value::String(_) => "string",
            Value::Strings(_) => "an array of strings",
            Value::Scalars { .. } => "an array of numbers",
            Value::U64(_) => "u64",
            Value::I64(_) => "i64",
            Value::F64(_) => "f64",
        }
    }
}

/// Reads the value of `key` of type `ty` at the cursor.
pub(super) fn read<'a>(c: &mut Cursor<'a>, key: &str, ty: ValueType) -> Result<Value<'a>, GgufError> {
    let what = || format!("the value of `{key}`");
    let bool_of = |byte: u8, offset: usize| match byte {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(GgufError::Bool { key: key.into(), offset, byte }),
    };
    Ok(match ty {
        ValueType::U8 => Value::U8(c.u8(what)?),
        ValueType::I8 => Value::I8(c.u8(what)? as i8),
        ValueType::U16 => Value::U16(u16::from_le_bytes(two(c.take(2, what)?))),
        ValueType::I16 => Value::I16(i16::from_le_bytes(two(c.take(2, what)?))),
        ValueType::U32 => Value::U32(c.u32(what)?),
        ValueType::I32 => Value::I32(c.u32(what)? as i32),
        ValueType::F32 => Value::F32(f32::from_bits(c.u32(what)?)),
        ValueType::Bool => {
            let offset = c.offset();
            Value::Bool(bool_of(c.u8(what)?, offset)?)
        }
        ValueType::String => Value::String(c.string(what)?),
        ValueType::U64 => Value::U64(c.u64(what)?),
        ValueType::I64 => Value::I64(c.u64(what)? as i64),
        ValueType::F64 => Value::F64(f64::from_bits(c.u64(what)?)),
        ValueType::Array => {
            let ty_at = c.offset();
            let id = c.u32(|| format!("the element type of `{key}`"))?;
            let elem =
                ValueType::from_id(id).ok_or_else(|| GgufError::ValueType { key: key.into(), offset: ty_at, id })?;
            if elem == ValueType::Array {
                return Err(GgufError::NestedArray { key: key.into(), offset: ty_at });
            }
            let at = c.offset();
            let len = c.u64(|| format!("the length of `{key}`"))?;
            let count = || format!("the length of the array `{key}`");
            match elem.size() {
                Some(size) => {
                    c.bound(len, size, at, count)?;
                    let start = c.offset();
                    let bytes = c.take(len * size, what)?;
                    if elem == ValueType::Bool {
                        for (i, &b) in bytes.iter().enumerate() {
                            bool_of(b, start + i)?;
                        }
                    }
                    Value::Scalars { ty: elem, bytes }
                }
                None => {
                    // Each string is at least its 8-byte length: the capacity is at most the
                    // bytes left / 8 references.
                    c.bound(len, 8, at, count)?;
                    let mut strings = Vec::with_capacity(len as usize);
                    for i in 0..len {
                        strings.push(c.string(|| format!("string {i} of `{key}`"))?);
                    }
                    Value::Strings(strings)
                }
            }
        }
    })
}

fn two(b: &[u8]) -> [u8; 2] {
    [b[0], b[1]]
}
