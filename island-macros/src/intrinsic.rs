//! `#[intrinsic(…)]` on a module: the driver. It parses the attribute (`intrinsic_parse`), checks
//! the module against it (`intrinsic_validate`), and emits `call` and the registration
//! (`intrinsic_expand`); after an error, a `call` that runs the emulation.

use crate::intrinsic_expand::{dispatcher, registration};
use crate::intrinsic_parse::{Args, functions_of};
use crate::intrinsic_validate as validate;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Item, ItemMod, LitStr};

/// The attribute's entry point.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand_inner(attr, item.clone()) {
        Ok(tokens) => tokens,
        Err(e) => {
            let e = e.to_compile_error();
            let item = with_emulated_call(item);
            quote!(#e #item)
        }
    }
}

/// The module as written plus a `call` that always runs the emulation, when it has one: after
/// an error in the attribute, the intrinsic's callers then compile and report nothing more.
fn with_emulated_call(item: TokenStream) -> TokenStream {
    let Ok(mut module) = syn::parse2::<ItemMod>(item.clone()) else { return item };
    let Some((_, items)) = &mut module.content else { return item };
    let functions = functions_of(items);
    let Some(emulate) = functions.iter().find(|f| f.sig.ident == "emulate") else { return item };
    let args = Args {
        name: LitStr::new("?", Span::call_site()),
        summary: LitStr::new("", Span::call_site()),
        checks: Vec::new(),
        lowerings: Vec::new(),
        semantics: None,
    };
    match dispatcher(emulate, &functions, &args).and_then(syn::parse2::<Item>) {
        Ok(call) => {
            items.push(call);
            quote!(#module)
        }
        Err(_) => item,
    }
}

fn expand_inner(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args: Args = syn::parse2(attr)?;
    let mut module: ItemMod = syn::parse2(item)?;
    let Some((_, items)) = &mut module.content else {
        return Err(syn::Error::new_spanned(&module.ident, "#[intrinsic] needs an inline module: `mod name { … }`"));
    };
    let functions = functions_of(items);
    let emulate = validate::emulation(&args.name.value(), &module.ident, &functions)?;
    let mut errors = validate::lowerings(&args, &functions);
    // `call` is added even when rows are wrong, so its callers report nothing more.
    let call = dispatcher(emulate, &functions, &args);
    if let Some(first) = errors.pop() {
        let mut all = first;
        for e in errors {
            all.combine(e);
        }
        if let Ok(call) = call {
            items.push(syn::parse2(call)?);
        }
        let e = all.to_compile_error();
        return Ok(quote!(#e #module));
    }
    let call = call?;
    items.push(syn::parse2(call)?);
    Ok(registration(&module, &args))
}
