//! Capabilities an arm's guard can ask about, and the guard itself.
//!
//! A guard is a conjunction of [`Atom`]s written after the arm's backends:
//! `cuda if sm >= 61 && dp4a => …`. The macro checks the capability names and builds the atoms
//! as constants, so a guard is plain data the registry can show and the selection can evaluate.

use crate::mma::Mma;
use crate::profile::Profile;
use serde::Serialize;
use std::fmt;

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
    /// Every comparison, in the order the docs list them.
    pub const ALL: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge];

    /// The comparison an operator names.
    pub fn from_symbol(symbol: &str) -> Option<Cmp> {
        Cmp::ALL.into_iter().find(|c| c.symbol() == symbol)
    }

    /// The variant's name, as generated code spells it (`Cmp::Ge`).
    pub const fn variant(self) -> &'static str {
        match self {
            Cmp::Eq => "Eq",
            Cmp::Ne => "Ne",
            Cmp::Lt => "Lt",
            Cmp::Le => "Le",
            Cmp::Gt => "Gt",
            Cmp::Ge => "Ge",
        }
    }

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

/// The capabilities a guard may name, each with how it is written.
pub const CAPABILITIES: [Capability; 4] = [Capability::Sm, Capability::Plane, Capability::Dp4a, Capability::Cmma];

/// A capability a guard may name; [`Atom`] is one condition on it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    /// `sm <cmp> N`.
    Sm,
    /// `plane <cmp> N`.
    Plane,
    /// `dp4a`, a flag.
    Dp4a,
    /// `cmma(a, b, acc, m, n, k)`, a tile shape.
    Cmma,
}

impl Capability {
    /// The name a guard uses.
    pub const fn keyword(self) -> &'static str {
        match self {
            Capability::Sm => "sm",
            Capability::Plane => "plane",
            Capability::Dp4a => "dp4a",
            Capability::Cmma => "cmma",
        }
    }

    /// How an atom on it is written (`sm >= N`), for error messages and docs.
    pub const fn syntax(self) -> &'static str {
        match self {
            Capability::Sm => "sm >= N",
            Capability::Plane => "plane == N",
            Capability::Dp4a => "dp4a",
            Capability::Cmma => "cmma(a, b, acc, m, n, k)",
        }
    }

    /// The capability a guard name names.
    pub fn from_keyword(word: &str) -> Option<Capability> {
        CAPABILITIES.into_iter().find(|c| c.keyword() == word)
    }
}

impl Atom {
    /// The capability this condition is on.
    pub const fn capability(&self) -> Capability {
        match self {
            Atom::Sm(..) => Capability::Sm,
            Atom::Plane(..) => Capability::Plane,
            Atom::Dp4a => Capability::Dp4a,
            Atom::Cmma(_) => Capability::Cmma,
        }
    }

    /// Whether `profile` satisfies this condition.
    pub fn holds(&self, profile: &Profile) -> bool {
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
    pub fn holds(&self, profile: &Profile) -> bool {
        self.0.iter().all(|a| a.holds(profile))
    }

    /// The first atom `profile` does not satisfy.
    pub fn first_unmet(&self, profile: &Profile) -> Option<&'static Atom> {
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
