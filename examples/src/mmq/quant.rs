//! The weight quant types the MMQ takes, and the block size they share.

/// Values per quantization block.
pub const BLOCK: usize = 32;

/// A weight quant type the kernel takes.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Quant {
    /// 32 signed bytes and an f16 scale per block.
    Q8_0,
    /// 32 unsigned nibbles (byte `j` holds values `j` and `j + 16`), an f16 scale and an f16
    /// minimum per block: `w = d·q + m`.
    Q4_1,
}

impl Quant {
    pub const fn name(self) -> &'static str {
        match self {
            Quant::Q8_0 => "q8_0",
            Quant::Q4_1 => "q4_1",
        }
    }

    /// Bytes of one GGUF block.
    pub const fn gguf_block_bytes(self) -> usize {
        match self {
            Quant::Q8_0 => 34,
            Quant::Q4_1 => 20,
        }
    }

    /// Bytes of quants per block.
    pub const fn quant_bytes(self) -> usize {
        match self {
            Quant::Q8_0 => 32,
            Quant::Q4_1 => 16,
        }
    }
}
