//! Code generation for `#[intrinsic]`: the `call` that picks between the emulation and the native
//! lowerings with the tag, and the intrinsic's registration in the table.
//!
//! Every function of the module receives, by name, the parameters it declares; `call` takes
//! the emulation's parameters, and the tag (`#[comptime] target: Target`) if `emulate` does not
//! take it already.

use crate::intrinsic_parse::{Args, SemanticsArg, implementor};
use island_vocab::Backend;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{FnArg, Ident, ItemFn, ItemMod, Pat};

/// The runtime's `Semantics` value. An intrinsic that declares none is device-defined: its
/// arms then need a record of the device before they run there.
fn semantics(this: Option<&SemanticsArg>) -> TokenStream {
    let rt = crate::paths::runtime();
    match this {
        None => quote!(#rt::Semantics::DeviceDefined("the intrinsic declares no semantic class")),
        Some(SemanticsArg { keyword, what: None }) if keyword == "defined" => quote!(#rt::Semantics::Defined),
        Some(SemanticsArg { keyword, what: Some(what) }) if keyword == "float_device_defined" => {
            quote!(#rt::Semantics::FloatDeviceDefined(#what))
        }
        Some(SemanticsArg { keyword, what: Some(what) }) if keyword == "synchronizing" => {
            quote!(#rt::Semantics::Synchronizing(#what))
        }
        Some(SemanticsArg { what, .. }) => quote!(#rt::Semantics::DeviceDefined(#what)),
    }
}

/// The module, with its `call` already added, and the registration of the intrinsic.
pub fn registration(module: &ItemMod, args: &Args) -> TokenStream {
    let rt = crate::paths::runtime();
    let intrinsic = args.name.value();
    let rows = args.lowerings.iter().map(|r| {
        let variant = Ident::new(r.which.variant(), Span::call_site());
        let atoms = r.guard.iter().map(crate::expand::atom);
        let instruction = &r.instruction;
        let sass = match &r.sass {
            Some(s) => quote!(::core::option::Option::Some(#s)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            #rt::intrinsic::Lowering {
                backend: #rt::Backend::#variant,
                requires: #rt::Guard(&[#(#atoms),*]),
                instruction: #instruction,
                sass: #sass,
            }
        }
    });
    let check_sites = args.checks.iter().map(|p| {
        let sites = crate::names::sites_path(p);
        quote!(#sites)
    });
    let check_path = args.checks.iter().map(|p| quote!(#p).to_string().replace(' ', "")).collect::<Vec<_>>().join(", ");
    let (name, summary) = (&args.name, &args.summary);
    let semantics = semantics(args.semantics.as_ref());
    let unique = format_ident!(
        "INTRINSIC_NAMED_{}_IS_DEFINED_ONCE",
        intrinsic
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
            .collect::<String>(),
        span = name.span()
    );
    quote! {
        #module

        // Two intrinsics of one name in one module collide here, at compile time; across crates
        // the registry's uniqueness check reports them.
        #[doc(hidden)]
        #[allow(dead_code)]
        const #unique: () = ();

        #rt::__private::inventory::submit! {
            #rt::intrinsic::Intrinsic {
                name: #name,
                krate: env!("CARGO_PKG_NAME"),
                summary: #summary,
                semantics: #semantics,
                lowerings: &[#(#rows),*],
                check: &[#(#check_sites),*],
                check_path: #check_path,
            }
        }
    }
}

/// A parameter's name, or an error for patterns an intrinsic cannot forward.
fn param_name(p: &FnArg) -> syn::Result<Ident> {
    match p {
        FnArg::Typed(pt) => match &*pt.pat {
            Pat::Ident(pi) => Ok(pi.ident.clone()),
            other => Err(syn::Error::new_spanned(other, "intrinsic parameters must be plain names")),
        },
        FnArg::Receiver(r) => Err(syn::Error::new_spanned(r, "an intrinsic is a free function")),
    }
}

/// `callee(<its parameters, by name>)`, with its type parameters named explicitly.
fn forward(callee: &ItemFn, available: &[Ident], generics: &[Ident]) -> syn::Result<TokenStream> {
    let ident = &callee.sig.ident;
    let mut args = Vec::new();
    for p in &callee.sig.inputs {
        let name = param_name(p)?;
        if !available.contains(&name) {
            return Err(syn::Error::new_spanned(
                p,
                format!(
                    "parameter `{name}` of `fn {ident}` is not a parameter of `emulate`: every function of an intrinsic \
                     takes, by name, a subset of the emulation's parameters (and the tag)"
                ),
            ));
        }
        args.push(name);
    }
    let types: Vec<&Ident> = callee.sig.generics.type_params().map(|t| &t.ident).collect();
    for t in &types {
        if !generics.contains(t) {
            return Err(syn::Error::new_spanned(
                t,
                format!("type parameter `{t}` of `fn {ident}` is not one of `emulate`'s"),
            ));
        }
    }
    let turbofish = (!types.is_empty()).then(|| quote!(::<#(#types),*>));
    Ok(quote!(#ident #turbofish (#(#args),*)))
}

/// `pub fn call(<emulate's parameters>[, #[comptime] target: Target]) -> <emulate's return>`.
pub fn dispatcher(emulate: &ItemFn, functions: &[ItemFn], args: &Args) -> syn::Result<TokenStream> {
    let rt = crate::paths::runtime();
    let mut params: Vec<FnArg> = emulate.sig.inputs.iter().cloned().collect();
    let tag = params.iter().find_map(|p| match p {
        FnArg::Typed(pt) if crate::ast::is_target_type(&pt.ty) => param_name(p).ok(),
        _ => None,
    });
    let tag = match tag {
        Some(t) => t,
        None => {
            let t = Ident::new("target", Span::call_site());
            params.push(syn::parse_quote!(#[comptime] #t: #rt::Target));
            t
        }
    };
    let available: Vec<Ident> = params.iter().map(param_name).collect::<syn::Result<_>>()?;
    let generics: Vec<Ident> = emulate.sig.generics.type_params().map(|t| t.ident.clone()).collect();
    let output = &emulate.sig.output;
    let sig_generics = &emulate.sig.generics;
    let name = &args.name;
    let emulated = forward(emulate, &available, &generics)?;
    let mut body = quote! {{
        comptime!(#rt::intrinsic::note_emulated(#name, &#tag));
        #emulated
    }};
    let semantics = semantics(args.semantics.as_ref());
    // The operand types an intrinsic's semantic class may depend on (float or not): its type
    // arguments as instantiated, and its parameters' types as written.
    let written = params.iter().filter_map(|p| match p {
        FnArg::Typed(pt) if !crate::ast::is_target_type(&pt.ty) => {
            let ty = &pt.ty;
            Some(quote!(stringify!(#ty)))
        }
        _ => None,
    });
    let operand_types =
        generics.iter().map(|t| quote!(::core::any::type_name::<#t>())).chain(written).collect::<Vec<_>>();
    let note_native = quote!(comptime!(#rt::semantics::note_native(#name, #semantics, &[#(#operand_types),*])););
    let mut seen: Vec<Backend> = Vec::new();
    let mut branches = Vec::new();
    for row in &args.lowerings {
        if seen.contains(&row.which) {
            continue;
        }
        seen.push(row.which);
        let Some(callee) = implementor(functions, &row.backend) else { continue };
        branches.push((Ident::new(row.which.variant(), Span::call_site()), forward(callee, &available, &generics)?));
    }
    for (variant, native) in branches.into_iter().rev() {
        body = quote! {
            if comptime!(#tag.native_on(#rt::Backend::#variant)) {
                #note_native
                #native
            } else {
                #body
            }
        };
    }
    let doc = format!(
        "`{}`: the native lowering where the arm's device has one ({}), the emulation otherwise.",
        args.name.value(),
        seen.iter().map(|b| b.keyword()).collect::<Vec<_>>().join(", ")
    );
    Ok(quote! {
        #[doc = #doc]
        #[cube]
        #[allow(clippy::too_many_arguments)]
        pub fn call #sig_generics (#(#params),*) #output {
            #body
        }
    })
}
