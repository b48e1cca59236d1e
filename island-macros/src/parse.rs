//! Parsing `island! { … }` into [`Island`]. Only the shape of each piece is checked here;
//! checks across arms live in `validate`.

use crate::ast::*;
use island_vocab::{Atom, Backend, Capability, Cmp, Elem, Expect, Mma};
use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitInt, LitStr, Token, Type, braced, parenthesized};

/// Parses the tokens inside `island!{…}`; `span` is the invocation's path.
pub fn island(span: Span, tokens: TokenStream) -> syn::Result<Island> {
    let parser = move |input: ParseStream| parse_island(span, input);
    parser.parse2(tokens)
}

fn parse_island(span: Span, input: ParseStream) -> syn::Result<Island> {
    let proof = if input.peek(Ident) && input.peek2(syn::token::Paren) && input.fork().parse::<Ident>()? == "proof" {
        Some(parse_proof(input)?)
    } else {
        None
    };
    let mut arms = Vec::new();
    while !input.is_empty() {
        arms.push(parse_arm(input)?);
    }
    Ok(Island { span, proof, arms })
}

fn parse_proof(input: ParseStream) -> syn::Result<ProofSig> {
    let kw: Ident = input.parse()?;
    let content;
    parenthesized!(content in input);
    let params = content.parse_terminated(parse_param, Token![,])?.into_iter().collect();
    let output = if input.peek(Token![->]) {
        input.parse::<Token![->]>()?;
        Some(input.parse::<Type>()?)
    } else {
        None
    };
    let mut sig =
        ProofSig { span: kw.span(), params, output, cube_dim: None, lanes: None, contract: None, dont_care: None };
    while input.peek(Token![,]) {
        input.parse::<Token![,]>()?;
        let key: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        match key.to_string().as_str() {
            "cube_dim" => {
                // A literal or a constant expression (`CONFIG.units()`); a literal is checked
                // here, an expression where the island is registered.
                let value: Expr = input.parse()?;
                if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(lit), .. }) = &value {
                    let n: u32 = lit.base10_parse()?;
                    if n == 0 || n > 1024 {
                        return Err(syn::Error::new(lit.span(), "cube_dim must be between 1 and 1024"));
                    }
                }
                let span = value.span();
                sig.cube_dim = Some((value, span));
            }
            "lanes" => {
                let lit: LitInt = input.parse()?;
                sig.lanes = Some(lit.base10_parse()?);
            }
            "contract" => sig.contract = Some(parse_contract(input)?),
            "dont_care" => sig.dont_care = Some((key, input.parse()?)),
            other => {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown proof option `{other}`; expected `cube_dim = N`, `lanes = N`, `contract = …` or `dont_care = <condition>`"
                    ),
                ));
            }
        }
    }
    input
        .parse::<Token![;]>()
        .map_err(|e| syn::Error::new(e.span(), "expected `;` after the proof signature `proof(…) -> T`"))?;
    Ok(sig)
}

fn parse_param(input: ParseStream) -> syn::Result<ProofParam> {
    let name: Ident = input.parse()?;
    input.parse::<Token![:]>()?;
    if input.peek(Ident) && input.peek2(syn::token::Paren) && input.fork().parse::<Ident>()? == "tensor_map" {
        input.parse::<Ident>()?;
        let content;
        parenthesized!(content in input);
        let of: Ident = content.parse()?;
        content.parse::<Token![,]>().map_err(|e| {
            syn::Error::new(e.span(), "expected `tensor_map(input, TILE)`: the per-cube input it maps, then its layout")
        })?;
        let tile: Expr = content.parse()?;
        if !content.is_empty() {
            return Err(content.error("expected `)`: `tensor_map(input, TILE)` takes two arguments"));
        }
        return Ok(ProofParam { name, shape: ParamShape::TensorMap { of, tile } });
    }
    let ty: Type = input.parse()?;
    let shape = match ty {
        Type::Reference(r) => match *r.elem {
            Type::Array(arr) => {
                // A literal is checked here; a constant expression when the island's registration
                // is evaluated (a constant of zero fails to compile there).
                if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) = &arr.len
                    && i.base10_parse::<u32>()? == 0
                {
                    return Err(syn::Error::new(
                        i.span(),
                        "a per-cube input holds at least one value: its length is 0",
                    ));
                }
                ParamShape::Cube { elem: *arr.elem, len: arr.len, mutable: r.mutability.is_some() }
            }
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "a proof input is a scalar `x: T`, a per-cube slice `x: &[T; N]` / `x: &mut [T; N]`, a constant `x: T = expr` or a tensor map `x: tensor_map(input, TILE)`",
                ));
            }
        },
        ty if input.peek(Token![=]) => {
            input.parse::<Token![=]>()?;
            ParamShape::Const { ty, value: input.parse()? }
        }
        ty => ParamShape::Lane(ty),
    };
    Ok(ProofParam { name, shape })
}

fn parse_contract(input: ParseStream) -> syn::Result<ContractSpec> {
    let kind: Ident = input.parse()?;
    let content;
    parenthesized!(content in input);
    let number = |content: ParseStream| -> syn::Result<(LitInt, LitStr, Option<syn::Path>)> {
        let n: LitInt = content.parse()?;
        content.parse::<Token![,]>()?;
        let reason: LitStr = content.parse()?;
        // `, exact_where = path`: a `fn(&Profile) -> Option<&'static str>` naming the profiles
        // whose arithmetic the arm's intrinsics model exactly.
        let mut exact_where = None;
        if content.peek(Token![,]) {
            content.parse::<Token![,]>()?;
            let key: Ident = content.parse()?;
            if key != "exact_where" {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown contract option `{key}`; expected `exact_where = path`"),
                ));
            }
            content.parse::<Token![=]>()?;
            exact_where = Some(content.parse()?);
        }
        Ok((n, reason, exact_where))
    };
    let spec = match kind.to_string().as_str() {
        "ulp" => {
            let (ulps, reason, exact_where) = number(&content)?;
            ContractSpec::Ulp { ulps: ulps.base10_parse()?, reason, exact_where }
        }
        "accumulation" => {
            let (terms, reason, exact_where) = number(&content)?;
            ContractSpec::Accumulation { terms: terms.base10_parse()?, reason, exact_where }
        }
        other => {
            return Err(syn::Error::new(
                kind.span(),
                format!("unknown contract `{other}`; expected `ulp(N, \"reason\")` or `accumulation(N, \"reason\")`"),
            ));
        }
    };
    let (ContractSpec::Ulp { reason, .. } | ContractSpec::Accumulation { reason, .. }) = &spec;
    if reason.value().trim().is_empty() {
        return Err(syn::Error::new(reason.span(), "a non-exact contract must give its reason"));
    }
    Ok(spec)
}

fn parse_arm(input: ParseStream) -> syn::Result<Arm> {
    let span = input.span();
    let pattern = parse_pattern(input)?;
    let (guard, guard_span) = if input.peek(Token![if]) {
        let tok: Token![if] = input.parse()?;
        (guard(input)?, Some(tok.span))
    } else {
        (Vec::new(), None)
    };
    input
        .parse::<Token![=>]>()
        .map_err(|e| syn::Error::new(e.span(), "expected `=>` after the arm's backends (`cuda | vulkan => …`)"))?;
    let body = if input.peek(syn::token::Brace) {
        let content;
        let brace = braced!(content in input);
        let stmts = content.call(syn::Block::parse_within)?;
        let block = syn::Block { brace_token: brace, stmts };
        let body = Expr::Block(syn::ExprBlock { attrs: vec![], label: None, block });
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        }
        body
    } else {
        let body: Expr = input.parse()?;
        if !input.is_empty() {
            input.parse::<Token![,]>().map_err(|e| syn::Error::new(e.span(), "expected `,` between island arms"))?;
        }
        body
    };
    Ok(Arm { pattern, guard, guard_span, body, span })
}

fn parse_pattern(input: ParseStream) -> syn::Result<Pattern> {
    let first = parse_key(input)?;
    if first == DEFAULT {
        if input.peek(Token![|]) {
            return Err(syn::Error::new(first.span(), "`default` cannot be combined with backends"));
        }
        return Ok(Pattern::Default(first.span()));
    }
    let mut keys = vec![backend_key(first)?];
    while input.peek(Token![|]) {
        input.parse::<Token![|]>()?;
        let next = parse_key(input)?;
        if next == DEFAULT {
            return Err(syn::Error::new(next.span(), "`default` cannot be combined with backends"));
        }
        keys.push(backend_key(next)?);
    }
    Ok(Pattern::Backends(keys))
}

fn parse_key(input: ParseStream) -> syn::Result<Ident> {
    // `default` is a reserved word in some positions; accept any identifier-like token.
    input.step(|cursor| match cursor.ident() {
        Some((ident, rest)) => Ok((ident, rest)),
        None => Err(cursor.error(expected_backend())),
    })
}

fn expected_backend() -> String {
    format!("expected a backend ({}) or `default`", backend_list())
}

fn backend_key(ident: Ident) -> syn::Result<BackendKey> {
    let name = ident.to_string();
    match Backend::from_keyword(&name) {
        Some(backend) => Ok(BackendKey { ident, backend }),
        None if name == "cpu" => Err(syn::Error::new(
            ident.span(),
            "`cpu` takes no arm: the CPU runtime always runs `default`, the arm every other one is proven \
             against; write the CPU's code as `default => …`",
        )),
        None => Err(syn::Error::new(
            ident.span(),
            format!("unknown backend `{name}`; expected one of {} or `default`", backend_list()),
        )),
    }
}

/// A guard: atoms joined by `&&` (after the `if`).
pub fn guard(input: ParseStream) -> syn::Result<Vec<Atom>> {
    let mut atoms = vec![parse_atom(input)?];
    while input.peek(Token![&&]) {
        input.parse::<Token![&&]>()?;
        atoms.push(parse_atom(input)?);
    }
    if input.peek(Token![||]) {
        return Err(input.error("guards are conjunctions (`&&`); write one arm per alternative instead of `||`"));
    }
    Ok(atoms)
}

/// The capabilities a guard may name, as error messages list them.
fn capability_list() -> String {
    island_vocab::CAPABILITIES.map(|c| c.syntax()).join(", ")
}

fn parse_atom(input: ParseStream) -> syn::Result<Atom> {
    let name: Ident = input.parse()?;
    let span = name.span();
    let Some(capability) = Capability::from_keyword(&name.to_string()) else {
        return Err(syn::Error::new(
            span,
            format!("unknown capability `{name}`; expected one of {}", capability_list()),
        ));
    };
    Ok(match capability {
        Capability::Sm | Capability::Plane => {
            let op = parse_cmp(input).ok_or_else(|| {
                syn::Error::new(span, format!("`{name}` needs a comparison, e.g. `{}`", capability.syntax()))
            })?;
            let lit: LitInt = input.parse()?;
            let value = lit.base10_parse()?;
            if capability == Capability::Sm { Atom::Sm(op, value) } else { Atom::Plane(op, value) }
        }
        Capability::Dp4a => {
            if parse_cmp(&input.fork()).is_some() {
                return Err(syn::Error::new(span, "`dp4a` is a flag and takes no comparison"));
            }
            Atom::Dp4a
        }
        Capability::Cmma => {
            let content;
            parenthesized!(content in input);
            let elem = |c: ParseStream| -> syn::Result<Elem> {
                let e: Ident = c.parse()?;
                let Some(elem) = Elem::from_keyword(&e.to_string()) else {
                    return Err(syn::Error::new(
                        e.span(),
                        format!(
                            "unknown element type `{e}`; expected one of {}",
                            Elem::ALL.map(Elem::keyword).join(", ")
                        ),
                    ));
                };
                c.parse::<Token![,]>()?;
                Ok(elem)
            };
            let a = elem(&content)?;
            let b = elem(&content)?;
            let acc = elem(&content)?;
            let dims: Vec<u32> = content
                .parse_terminated(|c: ParseStream| c.parse::<LitInt>()?.base10_parse::<u32>(), Token![,])?
                .into_iter()
                .collect();
            let [m, n, k] = dims[..] else {
                return Err(syn::Error::new(span, "`cmma(a, b, acc, m, n, k)` needs three dimensions"));
            };
            Atom::Cmma(Mma::new(a, b, acc, m, n, k))
        }
    })
}

/// A comparison operator, if one comes next (longest token first: `>=` before `>`).
fn parse_cmp(input: ParseStream) -> Option<Cmp> {
    macro_rules! try_op {
        ($($tok:tt)*) => {$(
            if input.peek(Token![$tok]) {
                input.parse::<Token![$tok]>().ok()?;
                return Cmp::from_symbol(stringify!($tok));
            }
        )*};
    }
    try_op!(== != >= <= > <);
    None
}

impl Parse for TagOption {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        match key.to_string().as_str() {
            "tag" => {
                input.parse::<Token![=]>()?;
                Ok(TagOption::Tag(input.parse()?))
            }
            word => match Expect::ALL.into_iter().find(|e| e.option() == Some(word)) {
                Some(expect) => Ok(TagOption::Expect(expect)),
                None => Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown #[islands] option `{word}`; expected `tag = name`, {}",
                        Expect::ALL
                            .iter()
                            .filter_map(|e| e.option())
                            .map(|o| format!("`{o}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
            },
        }
    }
}

/// One option of `#[islands(…)]`.
pub enum TagOption {
    /// `tag = name`: the function's tag parameter.
    Tag(Ident),
    /// `expect_mismatch` (a negative fixture: every arm's proof must fail),
    /// `expect_native_mismatch` (a wrong native lowering: every arm's CPU proof must hold and
    /// its device conformance must fail) or `expect_default_mismatch` (a canary `default` a
    /// contracting compiler changes: its device `default` must differ where the backend
    /// contracts).
    Expect(Expect),
}
