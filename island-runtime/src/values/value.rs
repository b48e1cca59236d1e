//! Scalar types a proof can generate, compare and print, with their edge values.

use half::{bf16, f16};
use serde::Serialize;
use std::fmt;

/// The element type of a proof input or output.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueKind {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

impl ValueKind {
    /// CubeCL's element type of the same kind (what a runtime's properties say it supports).
    pub fn elem_type(self) -> cubecl_ir::ElemType {
        use cubecl_ir::{ElemType, FloatKind, IntKind, UIntKind};
        match self {
            ValueKind::I8 => ElemType::Int(IntKind::I8),
            ValueKind::U8 => ElemType::UInt(UIntKind::U8),
            ValueKind::I16 => ElemType::Int(IntKind::I16),
            ValueKind::U16 => ElemType::UInt(UIntKind::U16),
            ValueKind::I32 => ElemType::Int(IntKind::I32),
            ValueKind::U32 => ElemType::UInt(UIntKind::U32),
            ValueKind::I64 => ElemType::Int(IntKind::I64),
            ValueKind::U64 => ElemType::UInt(UIntKind::U64),
            ValueKind::F16 => ElemType::Float(FloatKind::F16),
            ValueKind::BF16 => ElemType::Float(FloatKind::BF16),
            ValueKind::F32 => ElemType::Float(FloatKind::F32),
            ValueKind::F64 => ElemType::Float(FloatKind::F64),
        }
    }
}

/// A type an island's proof signature may name (`proof(a: i32) -> f32`): a scalar, or a
/// vector of `WIDTH` scalars (`Vector<i32, Const<4>>`), generated and compared scalar by scalar.
pub trait ProofValue {
    const KIND: ValueKind;
    /// Scalars per value.
    const WIDTH: usize = 1;
}

impl<T: ProofValue + cubecl::prelude::Scalar, const N: usize> ProofValue
    for cubecl::prelude::Vector<T, cubecl::prelude::Const<N>>
{
    const KIND: ValueKind = T::KIND;
    const WIDTH: usize = N;
}

macro_rules! proof_value {
    ($($ty:ty => $kind:ident),* $(,)?) => {
        $(impl ProofValue for $ty { const KIND: ValueKind = ValueKind::$kind; })*
    };
}

proof_value!(
    i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64,
    f16 => F16, bf16 => BF16, f32 => F32, f64 => F64,
);

impl ValueKind {
    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            ValueKind::I8 | ValueKind::U8 => 1,
            ValueKind::I16 | ValueKind::U16 | ValueKind::F16 | ValueKind::BF16 => 2,
            ValueKind::I32 | ValueKind::U32 | ValueKind::F32 => 4,
            ValueKind::I64 | ValueKind::U64 | ValueKind::F64 => 8,
        }
    }

    /// Whether the kind is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, ValueKind::F16 | ValueKind::BF16 | ValueKind::F32 | ValueKind::F64)
    }

    /// The type's name as Rust spells it.
    pub const fn name(self) -> &'static str {
        match self {
            ValueKind::I8 => "i8",
            ValueKind::U8 => "u8",
            ValueKind::I16 => "i16",
            ValueKind::U16 => "u16",
            ValueKind::I32 => "i32",
            ValueKind::U32 => "u32",
            ValueKind::I64 => "i64",
            ValueKind::U64 => "u64",
            ValueKind::F16 => "f16",
            ValueKind::BF16 => "bf16",
            ValueKind::F32 => "f32",
            ValueKind::F64 => "f64",
        }
    }

    /// The layout of a float kind: exponent bits and mantissa bits. `None` for integers.
    pub(crate) const fn float_format(self) -> Option<(u32, u32)> {
        match self {
            ValueKind::F16 => Some((5, 10)),
            ValueKind::BF16 => Some((8, 7)),
            ValueKind::F32 => Some((8, 23)),
            ValueKind::F64 => Some((11, 52)),
            _ => None,
        }
    }

    /// `bytes` (values of this kind) with every float's sign cleared: the magnitudes whose
    /// accumulation bounds an [`crate::values::contract::Contract::Accumulation`]. Integers are left as they are.
    pub fn magnitudes(self, bytes: &[u8]) -> Vec<u8> {
        let Some((e, m)) = self.float_format() else { return bytes.to_vec() };
        let size = self.size();
        let mut out = bytes.to_vec();
        for i in 0..bytes.len() / size {
            let bits = self.bits_at(bytes, i) & !(1u64 << (e + m));
            out[i * size..(i + 1) * size].copy_from_slice(&bits.to_le_bytes()[..size]);
        }
        out
    }

    /// The unit roundoff of a float kind (2^-24 for f32); 0 for integers.
    pub fn unit_roundoff(self) -> f64 {
        self.float_format().map_or(0.0, |(_, m)| 2f64.powi(-(m as i32) - 1))
    }

    /// Whether raw bits are a finite value (every integer is).
    pub fn is_finite(self, bits: u64) -> bool {
        match self.float_format() {
            None => true,
            Some((e, m)) => (bits >> m) & ((1 << e) - 1) != (1 << e) - 1,
        }
    }

    /// The element at `index` of `bytes`, as raw bits.
    pub fn bits_at(self, bytes: &[u8], index: usize) -> u64 {
        let size = self.size();
        let mut le = [0u8; 8];
        le[..size].copy_from_slice(&bytes[index * size..(index + 1) * size]);
        u64::from_le_bytes(le)
    }

    /// Whether raw bits are a NaN of this kind.
    pub fn is_nan(self, bits: u64) -> bool {
        match self {
            ValueKind::F16 => f16::from_bits(bits as u16).is_nan(),
            ValueKind::BF16 => bf16::from_bits(bits as u16).is_nan(),
            ValueKind::F32 => f32::from_bits(bits as u32).is_nan(),
            ValueKind::F64 => f64::from_bits(bits).is_nan(),
            _ => false,
        }
    }

    /// The value as a float, for ULP and tolerance contracts (integers convert exactly up to
    /// 2^53).
    pub fn as_f64(self, bits: u64) -> f64 {
        match self {
            ValueKind::I8 => bits as u8 as i8 as f64,
            ValueKind::U8 => bits as u8 as f64,
            ValueKind::I16 => bits as u16 as i16 as f64,
            ValueKind::U16 => bits as u16 as f64,
            ValueKind::I32 => bits as u32 as i32 as f64,
            ValueKind::U32 => bits as u32 as f64,
            ValueKind::I64 => bits as i64 as f64,
            ValueKind::U64 => bits as f64,
            ValueKind::F16 => f16::from_bits(bits as u16).to_f64(),
            ValueKind::BF16 => bf16::from_bits(bits as u16).to_f64(),
            ValueKind::F32 => f32::from_bits(bits as u32) as f64,
            ValueKind::F64 => f64::from_bits(bits),
        }
    }

    /// Distance in units in the last place between two finite floats of this kind (0 for
    /// equal bits; `u64::MAX` across NaN or between a NaN and a number).
    pub fn ulp_distance(self, a: u64, b: u64) -> u64 {
        if self.is_nan(a) || self.is_nan(b) {
            return if self.is_nan(a) && self.is_nan(b) { 0 } else { u64::MAX };
        }
        let size_bits = self.size() * 8;
        let sign = 1u64 << (size_bits - 1);
        // Map sign-magnitude bits onto a monotonic integer line.
        let key = |x: u64| -> i128 { if x & sign != 0 { -((x & !sign) as i128) } else { x as i128 } };
        (key(a) - key(b)).unsigned_abs() as u64
    }

    /// `bits` printed as hex of the type's width, then the value.
    pub fn show(self, bits: u64) -> String {
        let hex = format!("0x{:0width$x}", bits, width = self.size() * 2);
        let value = match self {
            ValueKind::F16 | ValueKind::BF16 | ValueKind::F32 | ValueKind::F64 => {
                let v = self.as_f64(bits);
                if v.is_nan() { "NaN".to_string() } else { format!("{v:e}") }
            }
            _ => format!("{}", self.as_f64(bits)),
        };
        format!("{hex} ({value})")
    }
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub(crate) fn mask(size: usize) -> u64 {
    if size == 8 { u64::MAX } else { (1u64 << (size * 8)) - 1 }
}
