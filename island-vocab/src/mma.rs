//! Tile shapes of cooperative matrix multiply-accumulate.

use crate::elem::Elem;
use serde::Serialize;
use std::fmt;

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

impl Mma {
    /// A shape, for constant tables.
    pub const fn new(a: Elem, b: Elem, acc: Elem, m: u32, n: u32, k: u32) -> Mma {
        Mma { a, b, acc, m, n, k }
    }
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
