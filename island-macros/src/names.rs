//! The names of the hidden items `#[islands]` places beside a function, in one place: the
//! expansion defines them, `sites_of!` and `#[intrinsic(check = …)]` refer to them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Path};

/// The `Site` static of island `index` of `function`.
pub fn site(function: &Ident, index: usize) -> Ident {
    format_ident!("__ISLANDS_SITE_{}_{}", function.to_string().to_uppercase(), index)
}

/// The list of every island of `function`: `&[&Site]`, with the function's visibility.
pub fn sites(function: &Ident) -> Ident {
    format_ident!("__ISLANDS_SITES_{}", function.to_string().to_uppercase(), span = function.span())
}

/// The path of the list of `function`'s islands, for a path to the function.
pub fn sites_path(function: &Path) -> TokenStream {
    let mut path = function.clone();
    if let Some(last) = path.segments.last_mut() {
        last.ident = sites(&last.ident);
        last.arguments = syn::PathArguments::None;
    }
    quote!(#path)
}
