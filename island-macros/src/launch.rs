//! The launch paths of a `#[cube(launch)]` kernel marked `#[islands]`: `launch`, which fills the
//! tag from the client, and `launch_with`, which takes any tag (and their `_unchecked` twins).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Attribute, FnArg, Ident, ItemFn, Pat, Type};

/// How the function is launched, read off its `#[cube(…)]`.
pub struct CubeAttr {
    pub launch: bool,
    pub launch_unchecked: bool,
}

/// The function's `#[cube(…)]`, if it has one.
pub fn cube_attr(attrs: &[Attribute]) -> Option<CubeAttr> {
    let attr = attrs.iter().find(|a| a.path().segments.last().is_some_and(|s| s.ident == "cube"))?;
    let mut cube = CubeAttr { launch: false, launch_unchecked: false };
    if let syn::Meta::List(list) = &attr.meta {
        for token in list.tokens.clone() {
            if let proc_macro2::TokenTree::Ident(i) = token {
                cube.launch |= i == "launch";
                cube.launch_unchecked |= i == "launch_unchecked";
            }
        }
    }
    Some(cube)
}

/// Launch kernels: the CubeCL kernel is renamed `islands_kernel_<name>` (no leading `__`, which
/// WGSL reserves), and `mod <name>`
/// re-exports it with two launch paths in front: `launch` fills the tag from the client,
/// `launch_with` takes any tag (to force an arm).
pub fn paths(func: &mut ItemFn, cube: &CubeAttr, tag: Option<&Ident>) -> TokenStream {
    let rt = crate::paths::runtime();
    let cubecl = crate::paths::cubecl();
    let name = func.sig.ident.clone();
    let inner = format_ident!("islands_kernel_{}", name);
    func.sig.ident = inner.clone();
    let vis = &func.vis;
    let generics = &func.sig.generics;
    let (_, ty_generics, where_clause) = generics.split_for_impl();
    let turbofish = ty_generics.as_turbofish();

    let mut params = Vec::new();
    let mut call = Vec::new();
    let mut call_with = Vec::new();
    for arg in &func.sig.inputs {
        let FnArg::Typed(pt) = arg else { continue };
        let Pat::Ident(pi) = &*pt.pat else { continue };
        let ident = &pi.ident;
        let is_tag = tag.is_some_and(|t| t == ident);
        let comptime = pt.attrs.iter().any(|a| a.path().is_ident("comptime"));
        if is_tag {
            call.push(quote!(#rt::Target::for_client(__client)));
            call_with.push(quote!(#ident));
            continue;
        }
        let ty = if comptime {
            let ty = &pt.ty;
            quote!(#ty)
        } else {
            runtime_arg(&pt.ty)
        };
        params.push(quote!(#ident: #ty));
        call.push(quote!(#ident));
        call_with.push(quote!(#ident));
    }
    let tag_ident = tag.cloned().unwrap_or_else(|| Ident::new("target", Span::call_site()));
    let doc_auto = format!(
        "Launches `{name}` with the tag of `client`'s device: each island takes the arm of that \
         device where its guard holds, and `default` otherwise."
    );
    let doc_with = format!("Launches `{name}` with an explicit tag, e.g. one that forces an arm.");
    let checked = cube.launch.then(|| {
        quote! {
            #[doc = #doc_auto]
            #[allow(clippy::too_many_arguments)]
            pub fn launch #generics (
                __client: &#cubecl::prelude::Client,
                __cube_count: #cubecl::prelude::CubeCount,
                __cube_dim: #cubecl::prelude::CubeDim,
                #(#params,)*
            ) #where_clause {
                super::#inner::launch #turbofish (__client, __cube_count, __cube_dim, #(#call),*)
            }

            #[doc = #doc_with]
            #[allow(clippy::too_many_arguments)]
            pub fn launch_with #generics (
                __client: &#cubecl::prelude::Client,
                __cube_count: #cubecl::prelude::CubeCount,
                __cube_dim: #cubecl::prelude::CubeDim,
                #(#params,)*
                #tag_ident: #rt::Target,
            ) #where_clause {
                super::#inner::launch #turbofish (__client, __cube_count, __cube_dim, #(#call_with),*)
            }
        }
    });
    let unchecked = cube.launch_unchecked.then(|| {
        quote! {
            #[doc = #doc_auto]
            ///
            /// # Safety
            /// As for CubeCL's `launch_unchecked`: no out-of-bounds access, no endless loop.
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn launch_unchecked #generics (
                __client: &#cubecl::prelude::Client,
                __cube_count: #cubecl::prelude::CubeCount,
                __cube_dim: #cubecl::prelude::CubeDim,
                #(#params,)*
            ) #where_clause {
                unsafe { super::#inner::launch_unchecked #turbofish (__client, __cube_count, __cube_dim, #(#call),*) }
            }

            #[doc = #doc_with]
            ///
            /// # Safety
            /// As for CubeCL's `launch_unchecked`: no out-of-bounds access, no endless loop.
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn launch_unchecked_with #generics (
                __client: &#cubecl::prelude::Client,
                __cube_count: #cubecl::prelude::CubeCount,
                __cube_dim: #cubecl::prelude::CubeDim,
                #(#params,)*
                #tag_ident: #rt::Target,
            ) #where_clause {
                unsafe { super::#inner::launch_unchecked #turbofish (__client, __cube_count, __cube_dim, #(#call_with),*) }
            }
        }
    });
    let doc = format!("The kernel `{name}` and its launch paths (see `launch` and `launch_with`).");
    quote! {
        #[doc = #doc]
        #[allow(unused_imports)]
        #vis mod #name {
            use super::*;
            pub use super::#inner::*;
            #checked
            #unchecked
        }
    }
}

/// `RuntimeArg<T>` for a runtime parameter of type `&T`, `&mut T` or `T`.
fn runtime_arg(ty: &Type) -> TokenStream {
    let cubecl = crate::paths::cubecl();
    let inner = match ty {
        Type::Reference(r) => &*r.elem,
        other => other,
    };
    quote!(#cubecl::RuntimeArg<#inner>)
}
