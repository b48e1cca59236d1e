//! Capabilities an arm's guard can ask about, and the guard itself.
//!
//! A guard is a conjunction of [`Atom`]s written after the arm's backends:
//! `cuda if sm >= 61 && dp4a => …`. The macro checks the capability names and builds the atoms
//! as constants, so a guard is plain data the registry can show and the selection can evaluate.

use serde::Serialize;
use std::fmt;

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

    /// The element type a guard keyword names.
    pub fn from_keyword(word: &str) -> Option<Elem> {
        [Elem::I8, Elem::U8, Elem::I32, Elem::F16, Elem::BF16, Elem::F32]
            .into_iter()
            .find(|e| e.keyword() == word)
    }
}

/// A tile shape of a cooperative matrix multiply-accumulate: `acc[m×n] += a[m×k] · b[k×n]`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Mma {
    pub a: Elem,
    pub b: Elem,
    pub acc: Elem,
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl fmt::Display for Mma {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cmma({}, {}, {}, {}, {}, {})",
            self.a.keyword(),
            self.b.keyword(),
            self.acc.keyword(),
            self.m,
            self.n,
            self.k
        )
    }
}

/// A comparison in a numeric guard atom.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    /// The operator as written.
    pub const fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    /// `lhs <op> rhs`.
    pub const fn holds(self, lhs: u32, rhs: u32) -> bool {
        match self {
            Cmp::Eq => lhs == rhs,
            Cmp::Ne => lhs != rhs,
            Cmp::Lt => lhs < rhs,
            Cmp::Le => lhs <= rhs,
            Cmp::Gt => lhs > rhs,
            Cmp::Ge => lhs >= rhs,
        }
    }
}

/// One condition of a guard.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
pub enum Atom {
    /// CUDA compute capability × 10 (`sm >= 61`); 0 on other backends.
    Sm(Cmp, u32),
    /// Plane (warp, wavefront, subgroup, SIMD-group) width in lanes (`plane == 32`).
    Plane(Cmp, u32),
    /// A native packed 4×i8 dot product with i32 accumulate (`dp4a`).
    Dp4a,
    /// A native cooperative matrix multiply-accumulate of this shape (`cmma(f16, f16, f32, 16, 16, 16)`).
    Cmma(Mma),
}

impl Atom {
    /// The capability names a guard may use, for error messages and docs.
    pub const NAMES: &'static [&'static str] = &["sm", "plane", "dp4a", "cmma"];

    /// Whether `profile` satisfies this condition.
    pub fn holds(&self, profile: &crate::Profile) -> bool {
        match *self {
            Atom::Sm(cmp, v) => cmp.holds(profile.sm, v),
            Atom::Plane(cmp, v) => cmp.holds(profile.plane, v),
            Atom::Dp4a => profile.dp4a,
            Atom::Cmma(shape) => profile.mma.contains(&shape),
        }
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Sm(cmp, v) => write!(f, "sm {} {v}", cmp.symbol()),
            Atom::Plane(cmp, v) => write!(f, "plane {} {v}", cmp.symbol()),
            Atom::Dp4a => f.write_str("dp4a"),
            Atom::Cmma(shape) => write!(f, "{shape}"),
        }
    }
}

/// A guard: all atoms must hold. An empty guard always holds.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
pub struct Guard(pub &'static [Atom]);

impl Guard {
    /// The guard that always holds.
    pub const NONE: Guard = Guard(&[]);

    /// Whether `profile` satisfies every atom.
    pub fn holds(&self, profile: &crate::Profile) -> bool {
        self.0.iter().all(|a| a.holds(profile))
    }

    /// The first atom `profile` does not satisfy.
    pub fn first_unmet(&self, profile: &crate::Profile) -> Option<&'static Atom> {
        self.0.iter().find(|a| !a.holds(profile))
    }

    /// Whether the guard is empty.
    pub const fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, atom) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" && ")?;
            }
            write!(f, "{atom}")?;
        }
        Ok(())
    }
}
