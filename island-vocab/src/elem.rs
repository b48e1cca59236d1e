//! Element kinds of cooperative-matrix tiles, as guards name them.

use serde::Serialize;

/// An element type of a matrix-multiply-accumulate tile.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Elem {
    I8,
    U8,
    I32,
    F16,
    BF16,
    F32,
}

impl Elem {
    /// Every element kind, in the order guards and docs list them.
    pub const ALL: [Elem; 6] = [Elem::I8, Elem::U8, Elem::I32, Elem::F16, Elem::BF16, Elem::F32];

    /// The keyword used in a guard (`cmma(i8, i8, i32, 16, 16, 16)`).
    pub const fn keyword(self) -> &'static str {
        match self {
            Elem::I8 => "i8",
            Elem::U8 => "u8",
            Elem::I32 => "i32",
            Elem::F16 => "f16",
            Elem::BF16 => "bf16",
            Elem::F32 => "f32",
        }
    }

    /// The element kind a guard keyword names.
    pub fn from_keyword(word: &str) -> Option<Elem> {
        Elem::ALL.into_iter().find(|e| e.keyword() == word)
    }

    /// The variant's name, as generated code spells it (`Elem::I8`).
    pub const fn variant(self) -> &'static str {
        match self {
            Elem::I8 => "I8",
            Elem::U8 => "U8",
            Elem::I32 => "I32",
            Elem::F16 => "F16",
            Elem::BF16 => "BF16",
            Elem::F32 => "F32",
        }
    }
}
