//! A typed view of `island!` and of the function holding it.

use island_vocab::{Atom, Backend};
use proc_macro2::Span;
use syn::{Expr, Ident, LitStr, Type};

/// The backend keywords, as error messages list them (`cuda, hip, …`).
pub fn backend_list() -> String {
    Backend::ALL.map(Backend::keyword).join(", ")
}

/// Whether `ty` is the tag type, `Target` (by any path).
pub fn is_target_type(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => {
            p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Target" && s.arguments.is_empty())
        }
        _ => false,
    }
}

/// The keyword of the normative arm.
pub const DEFAULT: &str = "default";

/// One `island! { … }`.
pub struct Island {
    /// The `island` path of the invocation: where whole-island errors point.
    pub span: Span,
    pub proof: Option<ProofSig>,
    pub arms: Vec<Arm>,
}

/// `proof(a: i32, t: &[i8; 256]) -> i32, cube_dim = 64, contract = ulp(1, "…");`
pub struct ProofSig {
    pub span: Span,
    pub params: Vec<ProofParam>,
    pub output: Option<Type>,
    pub cube_dim: Option<(Expr, Span)>,
    pub lanes: Option<u32>,
    pub contract: Option<ContractSpec>,
    /// `dont_care = <bool expr>`: the lanes whose value the island leaves undefined, as a
    /// function of the proof inputs (and the unit's position); `dont_care` itself spans errors.
    pub dont_care: Option<(Ident, Expr)>,
}

pub struct ProofParam {
    pub name: Ident,
    pub shape: ParamShape,
}

#[allow(clippy::large_enum_variant)] // a handful per island, parsed once
pub enum ParamShape {
    /// `x: T`: one value per lane.
    Lane(Type),
    /// `x: &[T; N]` or `x: &mut [T; N]`: a slice of N values per cube. N is an integer literal
    /// or a constant expression (`tile_len(CONFIG)`), evaluated where the island is registered.
    Cube { elem: Type, len: Expr, mutable: bool },
    /// `x: T = expr`: a constant the island reads (a stride, a tile count), not generated.
    Const { ty: Type, value: Expr },
    /// `map: tensor_map(src, TILE)`: per cube, the tensor map of that cube's slice of the per-cube
    /// input `src`, laid out by `TILE` (an `island_runtime::tensor_map::TmaTile`); the island
    /// sees it as `&[u32]`.
    TensorMap { of: Ident, tile: Expr },
}

pub enum ContractSpec {
    Ulp { ulps: u32, reason: LitStr, exact_where: Option<syn::Path> },
    Accumulation { terms: u32, reason: LitStr, exact_where: Option<syn::Path> },
}

/// One arm: `cuda | hip if plane == 32 => body`.
pub struct Arm {
    pub pattern: Pattern,
    pub guard: Vec<Atom>,
    /// `if` token, for errors about the guard as a whole.
    pub guard_span: Option<Span>,
    pub body: Expr,
    /// The arm's first token.
    pub span: Span,
}

pub enum Pattern {
    Default(Span),
    Backends(Vec<BackendKey>),
}

#[derive(Clone)]
pub struct BackendKey {
    pub ident: Ident,
    pub backend: Backend,
}

impl Arm {
    pub fn is_default(&self) -> bool {
        matches!(self.pattern, Pattern::Default(_))
    }

    /// The pattern as written, e.g. `cuda | hip`.
    pub fn label(&self) -> String {
        match &self.pattern {
            Pattern::Default(_) => DEFAULT.into(),
            Pattern::Backends(keys) => keys.iter().map(|k| k.ident.to_string()).collect::<Vec<_>>().join(" | "),
        }
    }

    /// The guard as written, normalised (`sm >= 61 && dp4a`).
    pub fn guard_text(&self) -> String {
        self.guard.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(" && ")
    }
}

/// The tag parameter of a function with islands.
pub struct TagParam {
    pub name: Ident,
}
