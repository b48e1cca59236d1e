//! Where an expansion finds the SDK: through `island-runtime` when the crate depends on it, or
//! through the `islands` facade, which re-exports the runtime at its root.
//!
//! Expansions write `#rt::Target`, `#rt::__private::cubecl::…` rather than `::island_runtime`
//! and `::cubecl`, so a crate that depends only on `islands` expands correctly.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

/// The path of the runtime's root in the crate being compiled.
///
/// A package expanding its own macros names itself (`::island_runtime`, `::islands`): that
/// resolves in its doctests and integration tests, where the macros are used. A crate naming
/// neither package gets `::island_runtime`, and the compiler's error names the missing crate.
pub fn runtime() -> TokenStream {
    let found = |package: &str| match crate_name(package) {
        Ok(FoundCrate::Name(name)) => Some(name),
        Ok(FoundCrate::Itself) => Some(package.replace('-', "_")),
        Err(_) => None,
    };
    let name = found("island-runtime").or_else(|| found("islands")).unwrap_or_else(|| "island_runtime".into());
    let ident = Ident::new(&name, Span::call_site());
    quote!(::#ident)
}

/// The path of `cubecl` as the runtime re-exports it (the crate need not depend on `cubecl`).
pub fn cubecl() -> TokenStream {
    let rt = runtime();
    quote!(#rt::__private::cubecl)
}
