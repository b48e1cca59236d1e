//! `#[intrinsic(...)]` on a module: a packaged intrinsic. The module holds `emulate`, which
//! runs wherever there is no native lowering (the CPU included), and the native lowerings: a
//! `#[cube]` function named after each backend of `lowerings(…)`, or one `native` function for
//! every backend without its own. The attribute adds `call`, which picks between them with the
//! tag, and registers the intrinsic in the table.
//!
//! Every function of the module receives, by name, the parameters it declares; `call` takes
//! the emulation's parameters, and the tag (`#[comptime] target: Target`) if `emulate` does not
//! take it already.

use island_vocab::Atom;
use island_vocab::Backend;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{FnArg, Ident, Item, ItemFn, ItemMod, LitStr, Pat, Path, Token, bracketed, parenthesized};

/// The attribute's arguments.
struct Args {
    name: LitStr,
    summary: LitStr,
    checks: Vec<Path>,
    lowerings: Vec<Row>,
    semantics: Option<SemanticsArg>,
}

/// `semantics = defined`, `float_device_defined("…")` or `device_defined("…")`.
struct SemanticsArg {
    keyword: Ident,
    what: Option<LitStr>,
}

impl Parse for SemanticsArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let keyword: Ident = input.parse()?;
        let what = match keyword.to_string().as_str() {
            "defined" => None,
            "float_device_defined" | "device_defined" => {
                let content;
                parenthesized!(content in input);
                Some(content.parse::<LitStr>()?)
            }
            other => {
                return Err(syn::Error::new(
                    keyword.span(),
                    format!("unknown semantic class `{other}`; expected {SEMANTICS}"),
                ));
            }
        };
        Ok(SemanticsArg { keyword, what })
    }
}

/// The classes `semantics = …` accepts.
pub const SEMANTICS: &str = "defined, float_device_defined(\"what the device decides\") or device_defined(\"…\")";

impl SemanticsArg {
    /// The runtime's `Semantics` value. An intrinsic that declares none is device-defined: its
    /// arms then need a record of the device before they run there.
    fn tokens(this: Option<&SemanticsArg>) -> TokenStream {
        let rt = crate::paths::runtime();
        match this {
            None => quote!(#rt::Semantics::DeviceDefined("the intrinsic declares no semantic class")),
            Some(SemanticsArg { keyword, what: None }) if keyword == "defined" => quote!(#rt::Semantics::Defined),
            Some(SemanticsArg { keyword, what: Some(what) }) if keyword == "float_device_defined" => {
                quote!(#rt::Semantics::FloatDeviceDefined(#what))
            }
            Some(SemanticsArg { what, .. }) => quote!(#rt::Semantics::DeviceDefined(#what)),
        }
    }
}

/// `vulkan if dp4a => "OpSDot"`, or `cuda if dp4a => "__dp4a(" sass "IDP.4A"`.
struct Row {
    /// The keyword as written, for spans and function names.
    backend: Ident,
    which: Backend,
    guard: Vec<Atom>,
    instruction: LitStr,
    /// The machine instruction (an opcode prefix of NVIDIA's SASS) the instruction must become.
    sass: Option<LitStr>,
}

impl Parse for Row {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let backend: Ident = input.parse()?;
        let Some(found) = Backend::from_keyword(&backend.to_string()) else {
            return Err(syn::Error::new(
                backend.span(),
                format!("unknown backend `{backend}`; expected one of {}", crate::ast::backend_list()),
            ));
        };
        let guard = if input.peek(Token![if]) {
            input.parse::<Token![if]>()?;
            crate::parse::guard(input)?
        } else {
            Vec::new()
        };
        input.parse::<Token![=>]>()?;
        let instruction = input.parse()?;
        let sass = if input.peek(Ident) && input.fork().parse::<Ident>()? == "sass" {
            let keyword: Ident = input.parse()?;
            if found != Backend::Cuda {
                return Err(syn::Error::new(
                    keyword.span(),
                    "`sass` names NVIDIA machine code: only a `cuda` row can have it",
                ));
            }
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Row { backend, which: found, guard, instruction, sass })
    }
}

/// The options `#[intrinsic(…)]` accepts.
pub const OPTIONS: &str = "name = \"…\", summary = \"…\", check = path (or [path, …]), semantics = … and lowerings(…)";

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let (mut name, mut summary, mut checks, mut lowerings, mut semantics) = (None, None, None, None, None);
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
                    checks = Some(if input.peek(syn::token::Bracket) {
                        let content;
                        bracketed!(content in input);
                        Punctuated::<Path, Token![,]>::parse_terminated(&content)?.into_iter().collect()
                    } else {
                        vec![input.parse::<Path>()?]
                    });
                }
                "semantics" => {
                    input.parse::<Token![=]>()?;
                    semantics = Some(input.parse::<SemanticsArg>()?);
                }
                "lowerings" => {
                    let content;
                    parenthesized!(content in input);
                    lowerings = Some(Punctuated::<Row, Token![,]>::parse_terminated(&content)?.into_iter().collect());
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("unknown intrinsic option `{other}`; expected {OPTIONS}"),
                    ));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let missing = |what: &str| syn::Error::new(Span::call_site(), format!("#[intrinsic] needs `{what}`"));
        let checks: Vec<Path> = checks.ok_or_else(|| missing("check = path::to::check_function"))?;
        if checks.is_empty() {
            return Err(missing("check = path::to::check_function"));
        }
        Ok(Args {
            name: name.ok_or_else(|| missing("name = \"…\""))?,
            summary: summary.ok_or_else(|| missing("summary = \"…\""))?,
            checks,
            lowerings: lowerings.unwrap_or_default(),
            semantics,
        })
    }
}

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

/// The functions of an intrinsic's module.
fn functions_of(items: &[Item]) -> Vec<ItemFn> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Fn(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

/// The name of the function whose native code a row's backend runs: its own, else `native`.
fn implementor<'a>(functions: &'a [ItemFn], backend: &Ident) -> Option<&'a ItemFn> {
    let by_name = |name: &str| functions.iter().find(|f| f.sig.ident == name);
    by_name(&backend.to_string()).or_else(|| by_name("native"))
}

fn expand_inner(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let rt = crate::paths::runtime();
    let args: Args = syn::parse2(attr)?;
    let mut module: ItemMod = syn::parse2(item)?;
    let Some((_, items)) = &mut module.content else {
        return Err(syn::Error::new_spanned(&module.ident, "#[intrinsic] needs an inline module: `mod name { … }`"));
    };
    let functions = functions_of(items);
    let intrinsic = args.name.value();
    let Some(emulate) = functions.iter().find(|f| f.sig.ident == "emulate") else {
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
        if implementor(&functions, &row.backend).is_none() {
            errors.push(syn::Error::new(
                row.backend.span(),
                format!(
                    "intrinsic `{intrinsic}` declares a `{0}` lowering but its module has neither `fn {0}(…)` nor `fn native(…)`",
                    row.backend
                ),
            ));
        }
    }
    for f in &functions {
        let name = f.sig.ident.to_string();
        let declared = args.lowerings.iter().any(|r| r.backend == name);
        if Backend::from_keyword(&name).is_some() && !declared {
            errors.push(syn::Error::new_spanned(
                &f.sig.ident,
                format!(
                    "`fn {name}` is not declared in `lowerings(…)`: add `{name} => \"<instruction>\"` or rename it"
                ),
            ));
        }
        if name == "native" && args.lowerings.iter().all(|r| functions.iter().any(|g| r.backend == g.sig.ident)) {
            errors.push(syn::Error::new_spanned(
                &f.sig.ident,
                "`fn native` serves no backend: every row of `lowerings(…)` has its own function",
            ));
        }
    }
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
    let semantics = SemanticsArg::tokens(args.semantics.as_ref());
    let unique = format_ident!(
        "INTRINSIC_NAMED_{}_IS_DEFINED_ONCE",
        intrinsic
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
            .collect::<String>(),
        span = name.span()
    );
    Ok(quote! {
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
    })
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
fn dispatcher(emulate: &ItemFn, functions: &[ItemFn], args: &Args) -> syn::Result<TokenStream> {
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
    let semantics = SemanticsArg::tokens(args.semantics.as_ref());
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
