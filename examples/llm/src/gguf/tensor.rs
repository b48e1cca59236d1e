//! The tensor directory's entries: ggml tensor types and their block sizes, and a shape's
//! element count and byte size in checked arithmetic.

use super::error::GgufError;

/// A ggml tensor type, from its id by a match: an id this reader does not know is an error,
/// never a value of this enum. Block sizes and bytes per block follow ggml's type traits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    Q8K,
    IQ2XXS,
    IQ2XS,
    IQ3XXS,
    IQ1S,
    IQ4NL,
    IQ3S,
    IQ2S,
    IQ4XS,
    I8,
    I16,
    I32,
    I64,
    F64,
    IQ1M,
    BF16,
    TQ1_0,
    TQ2_0,
    MXFP4,
}

impl TensorType {
    pub fn from_id(id: u32) -> Option<TensorType> {
        use TensorType::*;
        Some(match id {
            0 => F32,
            1 => F16,
            2 => Q4_0,
            3 => Q4_1,
            6 => Q5_0,
            7 => Q5_1,
            8 => Q8_0,
            9 => Q8_1,
            10 => Q2K,
            11 => Q3K,
            12 => Q4K,
            13 => Q5K,
            14 => Q6K,
            15 => Q8K,
            16 => IQ2XXS,
            17 => IQ2XS,
            18 => IQ3XXS,
            19 => IQ1S,
            20 => IQ4NL,
            21 => IQ3S,
            22 => IQ2S,
            23 => IQ4XS,
            24 => I8,
            25 => I16,
            26 => I32,
            27 => I64,
            28 => F64,
            29 => IQ1M,
            30 => BF16,
            34 => TQ1_0,
            35 => TQ2_0,
            39 => MXFP4,
            _ => return None,
        })
    }

    /// Values per block and bytes per block.
    pub fn layout(self) -> (u64, u64) {
        use TensorType::*;
        match self {
            F32 | I32 => (1, 4),
            F16 | BF16 | I16 => (1, 2),
            I8 => (1, 1),
            I64 | F64 => (1, 8),
            Q4_0 | IQ4NL => (32, 18),
            Q4_1 => (32, 20),
            Q5_0 => (32, 22),
            Q5_1 => (32, 24),
            Q8_0 => (32, 34),
            Q8_1 => (32, 36),
            MXFP4 => (32, 17),
            Q2K => (256, 84),
            Q3K | IQ3S => (256, 110),
            Q4K => (256, 144),
            Q5K => (256, 176),
            Q6K => (256, 210),
            Q8K => (256, 292),
            IQ2XXS | TQ2_0 => (256, 66),
            IQ2XS => (256, 74),
            IQ3XXS => (256, 98),
            IQ1S => (256, 50),
            IQ2S => (256, 82),
            IQ4XS => (256, 136),
            IQ1M => (256, 56),
            TQ1_0 => (256, 54),
        }
    }

    pub fn name(self) -> &'static str {
        use TensorType::*;
        match self {
            F32 => "F32",
            F16 => "F16",
            Q4_0 => "Q4_0",
            Q4_1 => "Q4_1",
            Q5_0 => "Q5_0",
            Q5_1 => "Q5_1",
            Q8_0 => "Q8_0",
            Q8_1 => "Q8_1",
            Q2K => "Q2_K",
            Q3K => "Q3_K",
            Q4K => "Q4_K",
            Q5K => "Q5_K",
            Q6K => "Q6_K",
            Q8K => "Q8_K",
            IQ2XXS => "IQ2_XXS",
            IQ2XS => "IQ2_XS",
            IQ3XXS => "IQ3_XXS",
            IQ1S => "IQ1_S",
            IQ4NL => "IQ4_NL",
            IQ3S => "IQ3_S",
            IQ2S => "IQ2_S",
            IQ4XS => "IQ4_XS",
            I8 => "I8",
            I16 => "I16",
            I32 => "I32",
            I64 => "I64",
            F64 => "F64",
            IQ1M => "IQ1_M",
            BF16 => "BF16",
            TQ1_0 => "TQ1_0",
            TQ2_0 => "TQ2_0",
            MXFP4 => "MXFP4",
        }
    }

    /// The bytes of a tensor of `shape` (innermost dimension first): rows of whole blocks,
    /// element count and size in checked arithmetic.
    pub fn bytes(self, name: &str, shape: &[u64]) -> Result<u64, GgufError> {
        let (block, size) = self.layout();
        let row = shape.first().copied().unwrap_or(0);
        if !row.is_multiple_of(block) {
            return Err(GgufError::Blocks { name: name.into(), ty: self.name(), row, block });
        }
        let overflow = || GgufError::Overflow { name: name.into(), ty: self.name(), shape: shape.to_vec() };
        // ggml counts elements and bytes in int64.
        let elements = shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .filter(|&n| n <= i64::MAX as u64)
            .ok_or_else(overflow)?;
        let bytes = (elements / block).checked_mul(size).filter(|&b| b <= i64::MAX as u64).ok_or_else(overflow)?;
        Ok(bytes)
    }
}

/// One entry of the tensor directory, its data checked to lie inside the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<'a> {
    pub name: &'a str,
    pub ty: TensorType,
    /// Dimensions, innermost first (ggml's `ne`): 1 to 4 of them, none 0.
    pub shape: Vec<u64>,
    /// The data's offset from the start of the tensor data, a multiple of the alignment.
    pub offset: u64,
    pub data: &'a [u8],
}
