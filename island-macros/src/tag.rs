//! The tag parameter of a function marked `#[islands]`: found, checked, or added to a kernel.

use crate::ast::TagParam;
use proc_macro2::Span;
use quote::quote;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat};

/// Finds the tag parameter: the one `tag = …` names, else one of type `Target`, else one
/// named `target`. A launch kernel without one gets `#[comptime] target: Target` appended.
/// `Err` when the tag is written wrongly (already reported): islands then take `default`.
pub fn param(
    func: &mut ItemFn,
    explicit: Option<Ident>,
    is_kernel: bool,
    errors: &mut Vec<syn::Error>,
) -> Result<Option<TagParam>, ()> {
    let rt = crate::paths::runtime();
    let params: Vec<(Ident, &syn::PatType)> = func
        .sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(pi) => Some((pi.ident.clone(), pt)),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect();
    let found = match &explicit {
        Some(name) => match params.iter().find(|(n, _)| n == name) {
            Some(p) => Some(p),
            None => {
                errors
                    .push(syn::Error::new(name.span(), format!("`tag = {name}` names no parameter of this function")));
                return Err(());
            }
        },
        None => params
            .iter()
            .find(|(_, pt)| crate::ast::is_target_type(&pt.ty))
            .or_else(|| params.iter().find(|(n, _)| n == "target")),
    };
    if let Some((name, pt)) = found {
        let name = name.clone();
        let ty = &pt.ty;
        if !crate::ast::is_target_type(ty) {
            errors.push(syn::Error::new(
                ty.span(),
                format!(
                    "the tag parameter `{name}` must have type `island_runtime::Target`, found `{}`",
                    quote!(#ty).to_string().replace(' ', "")
                ),
            ));
            return Err(());
        }
        if !pt.attrs.iter().any(|a| a.path().is_ident("comptime")) {
            errors.push(syn::Error::new(
                pt.span(),
                format!("the tag parameter `{name}` must be marked `#[comptime]`: islands are selected while the kernel is expanded"),
            ));
            // Recover as if it were, so CubeCL reports nothing more about it.
            mark_comptime(func, &name);
        }
        return Ok(Some(TagParam { name }));
    }
    if is_kernel {
        let name = Ident::new("target", Span::call_site());
        func.sig.inputs.push(syn::parse_quote!(#[comptime] #name: #rt::Target));
        return Ok(Some(TagParam { name }));
    }
    Ok(None)
}

fn mark_comptime(func: &mut ItemFn, name: &Ident) {
    for arg in func.sig.inputs.iter_mut() {
        if let FnArg::Typed(pt) = arg
            && matches!(&*pt.pat, Pat::Ident(pi) if &pi.ident == name)
        {
            pt.attrs.push(syn::parse_quote!(#[comptime]));
        }
    }
}
