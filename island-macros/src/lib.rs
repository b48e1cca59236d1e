//! Macros of the islands SDK.
//!
//! - `#[islands]`, written above `#[cube]`, rewrites every `island! { … }` in the function into
//!   a comptime `match` on the function's target tag, registers each accelerated arm, and lifts
//!   islands with a proof signature into proof kernels.
//! - `island!` on its own (outside a function marked `#[islands]`) is an error.
//!
//! Pipeline: `parse` (tokens → `ast`), `validate` (checks across arms), `expand` (tokens out),
//! driven per function by `kernel`.

mod ast;
mod expand;
mod kernel;
mod parse;
mod validate;

use proc_macro::TokenStream;

/// Marks a `#[cube]` function whose body holds islands. Write it above `#[cube]`.
///
/// Options: `tag = name` names the tag parameter; `expect_mismatch` marks a negative fixture
/// whose every arm must fail its proof.
#[proc_macro_attribute]
pub fn islands(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(attr.into(), item.into()).into()
}

/// A per-backend block inside a kernel. Only meaningful inside a function marked `#[islands]`,
/// which rewrites it; anywhere else it is an error.
#[proc_macro]
pub fn island(_input: TokenStream) -> TokenStream {
    outside_error()
}

/// What `#[cube]` turns `island!` into when no `#[islands]` above it rewrote it first.
#[doc(hidden)]
#[proc_macro]
pub fn __expand_island(_input: TokenStream) -> TokenStream {
    outside_error()
}

fn outside_error() -> TokenStream {
    let msg = "`island!` must be inside a function marked `#[islands]`, written above `#[cube]`: \
               the attribute turns it into a comptime match on the kernel's target tag";
    quote::quote!(::core::compile_error!(#msg)).into()
}
