//! Macros of the islands SDK.
//!
//! - `#[islands]`, written above `#[cube]`, rewrites every `island! { … }` in the function into
//!   a comptime `match` on the function's target tag, registers each accelerated arm, and lifts
//!   islands with a proof signature into proof kernels.
//! - `island!` on its own (outside a function marked `#[islands]`) is an error.
//!
//! Pipeline: `parse` (tokens → `ast`), `validate` (checks across arms), `expand` (tokens out),
//! driven per function by `kernel`, which finds the tag (`tag`) and adds launch paths (`launch`).
//! `#[intrinsic]` likewise: `intrinsic_parse`, `intrinsic_validate`, `intrinsic_expand`, driven
//! by `intrinsic`.

mod ast;
mod expand;
mod intrinsic;
mod intrinsic_expand;
mod intrinsic_parse;
mod intrinsic_validate;
mod kernel;
mod launch;
mod names;
mod parse;
mod paths;
mod scope;
mod tag;
mod validate;

use proc_macro::TokenStream;

/// Marks a `#[cube]` function whose body holds islands. Write it above `#[cube]`.
///
/// Options: `tag = name` names the tag parameter; `expect_mismatch` marks a negative fixture
/// whose every arm must fail its proof; `expect_native_mismatch` one whose arms must pass their
/// CPU proof and fail their device conformance (a wrong native lowering);
/// `expect_default_mismatch` a canary whose `default` a contracting compiler changes (its
/// device `default` must differ from the CPU's where the backend contracts).
#[proc_macro_attribute]
pub fn islands(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(attr.into(), item.into()).into()
}

/// A packaged intrinsic: on an inline module holding `#[cube] fn emulate(…)` and, per native
/// lowering, `#[cube] fn <backend>(…)` (or one `fn native(…)` shared by the backends without
/// their own), it adds `call(…, target)` and registers the intrinsic. Options: `name = "…"`,
/// `summary = "…"`, `check = path::to::check_function` (or a list `[a, b]`),
/// `lowerings(cuda => "instruction", vulkan if dp4a => "…")`.
#[proc_macro_attribute]
pub fn intrinsic(attr: TokenStream, item: TokenStream) -> TokenStream {
    intrinsic::expand(attr.into(), item.into()).into()
}

/// The islands of a function marked `#[islands]`, in source order: `&'static [&'static Site]`.
/// With `Target::explain`, it answers which arm each island takes on a target, and why:
/// `target.explain(sites_of!(row_sum)[0])` (`examples/src/rows.rs`).
#[proc_macro]
pub fn sites_of(input: TokenStream) -> TokenStream {
    match syn::parse::<syn::Path>(input) {
        Ok(path) => names::sites_path(&path).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// A per-backend block inside a kernel. Only meaningful inside a function marked `#[islands]`,
/// which rewrites it; anywhere else it is an error.
#[proc_macro]
pub fn island(_input: TokenStream) -> TokenStream {
    outside_error()
}

/// What `#[cube]` turns `island!` into when no `#[islands]` above it rewrote it first: the same
/// error, pointed at the island's first token (CubeCL passes `scope, <island tokens>`).
#[doc(hidden)]
#[proc_macro]
pub fn __expand_island(input: TokenStream) -> TokenStream {
    let span = proc_macro2::TokenStream::from(input)
        .into_iter()
        .skip_while(|t| !matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ','))
        .nth(1)
        .map_or_else(proc_macro2::Span::call_site, |t| t.span());
    syn::Error::new(span, OUTSIDE).to_compile_error().into()
}

const OUTSIDE: &str = "`island!` must be inside a function marked `#[islands]`, written above \
                       `#[cube]`: the attribute turns it into a comptime match on the kernel's target tag";

fn outside_error() -> TokenStream {
    syn::Error::new(proc_macro2::Span::call_site(), OUTSIDE).to_compile_error().into()
}

#[cfg(test)]
mod tests;
