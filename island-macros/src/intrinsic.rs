//! `#[intrinsic(...)]` on a module: a packaged intrinsic. The module holds one `#[cube]`
//! function per backend with a native lowering (named after the backend) and `emulate`, which
//! runs everywhere else; the attribute adds `call`, which picks between them with the tag, and
//! registers the intrinsic in the table.

use crate::ast::BACKENDS;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{FnArg, Ident, Item, ItemFn, ItemMod, LitStr, Pat, Path, Token, parenthesized};

/// The attribute's arguments.
struct Args {
    name: LitStr,
    summary: LitStr,
    check: Path,
    lowerings: Vec<Row>,
}

struct Row {
    backend: Ident,
    capability: Option<Ident>,
    instruction: LitStr,
}

impl Parse for Row {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let backend: Ident = input.parse()?;
        if !BACKENDS.iter().any(|(k, _)| backend == k) {
            let names: Vec<&str> = BACKENDS.iter().map(|(k, _)| *k).collect();
            return Err(syn::Error::new(
                backend.span(),
                format!("unknown backend `{backend}`; expected one of {}", names.join(", ")),
            ));
        }
        let capability = if input.peek(Token![if]) {
            input.parse::<Token![if]>()?;
            let cap: Ident = input.parse()?;
            if cap != "dp4a" {
                return Err(syn::Error::new(cap.span(), "a lowering row's capability is `dp4a` or none"));
            }
            Some(cap)
        } else {
            None
        };
        input.parse::<Token![=>]>()?;
        Ok(Row { backend, capability, instruction: input.parse()? })
    }
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let (mut name, mut summary, mut check, mut lowerings) = (None, None, None, None);
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            match key.to_string().as_str() {
                "name" => {
                    input.parse::<Token![=]>()?;
                    name = Some(input.parse::<LitStr>()?);
                }
                "summary" => {
                    input.parse::<Token![=]>()?;
                    summary = Some(input.parse::<LitStr>()?);
                }
                "check" => {
                    input.parse::<Token![=]>()?;
                    check = Some(input.parse::<Path>()?);
                }
                "lowerings" => {
                    let content;
                    parenthesized!(content in input);
                    lowerings = Some(Punctuated::<Row, Token![,]>::parse_terminated(&content)?.into_iter().collect());
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("unknown intrinsic option `{other}`; expected name, summary, check or lowerings(…)"),
                    ));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let missing = |what: &str| syn::Error::new(Span::call_site(), format!("#[intrinsic] needs `{what}`"));
        Ok(Args {
            name: name.ok_or_else(|| missing("name = \"…\""))?,
            summary: summary.ok_or_else(|| missing("summary = \"…\""))?,
            check: check.ok_or_else(|| missing("check = path::to::check_function"))?,
            lowerings: lowerings.unwrap_or_default(),
        })
    }
}

/// The attribute's entry point.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand_inner(attr, item.clone()) {
        Ok(tokens) => tokens,
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#e #item)
        }
    }
}

fn expand_inner(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let rt = crate::paths::runtime();
    let args: Args = syn::parse2(attr)?;
    let mut module: ItemMod = syn::parse2(item)?;
    let Some((_, items)) = &mut module.content else {
        return Err(syn::Error::new_spanned(&module.ident, "#[intrinsic] needs an inline module: `mod name { … }`"));
    };
    let function = |name: &str| {
        items.iter().find_map(|i| match i {
            Item::Fn(f) if f.sig.ident == name => Some(f.clone()),
            _ => None,
        })
    };
    let intrinsic = args.name.value();
    let Some(emulate) = function("emulate") else {
        return Err(syn::Error::new_spanned(
            &module.ident,
            format!(
                "intrinsic `{intrinsic}` has no emulation: add `#[cube] pub fn emulate(…)` to the module. The CPU runs \
                 it for every backend, and it is what the proofs hold the native lowerings to"
            ),
        ));
    };
    let mut errors: Vec<syn::Error> = Vec::new();
    for row in &args.lowerings {
        if function(&row.backend.to_string()).is_none() {
            errors.push(syn::Error::new(
                row.backend.span(),
                format!("intrinsic `{intrinsic}` declares a `{0}` lowering but its module has no `fn {0}(…)`", row.backend),
            ));
        }
    }
    for (keyword, _) in BACKENDS {
        if let Some(f) = function(keyword)
            && !args.lowerings.iter().any(|r| r.backend == keyword)
        {
            errors.push(syn::Error::new_spanned(
                &f.sig.ident,
                format!("`fn {keyword}` is not declared in `lowerings(…)`: add `{keyword} => \"<instruction>\"` or rename it"),
            ));
        }
    }
    if let Some(first) = errors.pop() {
        let mut all = first;
        for e in errors {
            all.combine(e);
        }
        return Err(all);
    }

    let call = dispatcher(&emulate, &args)?;
    items.push(syn::parse2(call)?);

    let rows = args.lowerings.iter().map(|r| {
        let (backend, instruction) = (&r.backend, &r.instruction);
        match &r.capability {
            Some(cap) => quote!(#backend if #cap => #instruction),
            None => quote!(#backend => #instruction),
        }
    });
    let (name, summary, check) = (&args.name, &args.summary, &args.check);
    let unique = format_ident!(
        "INTRINSIC_NAMED_{}_IS_DEFINED_ONCE",
        intrinsic.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect::<String>(),
        span = name.span()
    );
    Ok(quote! {
        #module

        // Two intrinsics of one name in one module collide here, at compile time; across crates
        // the registry's uniqueness check reports them.
        #[doc(hidden)]
        #[allow(dead_code)]
        const #unique: () = ();

        #rt::register_intrinsic! {
            name: #name,
            summary: #summary,
            check: #check,
            lowerings: [#(#rows),*],
        }
    })
}

/// `pub fn call(<emulate's parameters>, #[comptime] target: Target) -> <emulate's return>`.
fn dispatcher(emulate: &ItemFn, args: &Args) -> syn::Result<TokenStream> {
    let rt = crate::paths::runtime();
    let params: Vec<&FnArg> = emulate.sig.inputs.iter().collect();
    let output = &emulate.sig.output;
    let generics = &emulate.sig.generics;
    let names: Vec<Ident> = params
        .iter()
        .map(|p| match p {
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(pi) => Ok(pi.ident.clone()),
                other => Err(syn::Error::new_spanned(other, "intrinsic parameters must be plain names")),
            },
            FnArg::Receiver(r) => Err(syn::Error::new_spanned(r, "an intrinsic is a free function")),
        })
        .collect::<syn::Result<_>>()?;
    let name = &args.name;
    let mut body = quote! {{
        comptime!(#rt::intrinsic::note_emulated(#name, &target));
        emulate(#(#names),*)
    }};
    for row in args.lowerings.iter().rev() {
        let backend = &row.backend;
        let variant = Ident::new(
            BACKENDS.iter().find(|(k, _)| backend == k).map(|(_, v)| *v).expect("checked when parsed"),
            Span::call_site(),
        );
        body = quote! {
            if comptime!(target.native_on(#rt::Backend::#variant)) {
                #backend(#(#names),*)
            } else {
                #body
            }
        };
    }
    let doc = format!(
        "`{}`: the native lowering where the arm's device has one ({}), the emulation otherwise.",
        args.name.value(),
        args.lowerings.iter().map(|r| r.backend.to_string()).collect::<Vec<_>>().join(", ")
    );
    Ok(quote! {
        #[doc = #doc]
        #[cube]
        pub fn call #generics (#(#params,)* #[comptime] target: #rt::Target) #output {
            #body
        }
    })
}
