//! Code generation for one island: the comptime `match` that replaces it, and the items placed
//! beside the function (its site, its registrations, its lifted proof kernel).

use crate::ast::*;
use island_vocab::{Atom, Expect};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{Expr, Ident};

/// Where an island sits and how its function is configured.
pub struct Context<'a> {
    /// The function holding the island.
    pub function: &'a Ident,
    /// Its index among the function's islands, in source order.
    pub index: usize,
    /// The function's tag parameter.
    pub tag: &'a Ident,
    /// What the island's proofs must conclude (`#[islands(expect_mismatch)]`, …).
    pub expect: Expect,
}

/// The module holding an island's proof kernel: `__islands_<fn>_<n>`.
pub fn module_name(cx: &Context) -> Ident {
    format_ident!("__islands_{}_{}", cx.function, cx.index)
}

/// The island's [`Site`](island_runtime::Site) static, beside the function (so that
/// `module_path!()` is the function's module).
pub fn site_name(cx: &Context) -> Ident {
    crate::names::site(cx.function, cx.index)
}

/// The comptime `match` that replaces `island! { … }`: the tag picks one arm while the kernel
/// is expanded, so no other arm is lowered.
pub fn selection(island: &Island, cx: &Context) -> Expr {
    let site = site_name(cx);
    let tag = cx.tag;
    let mut arms = Vec::new();
    let mut index = 0usize;
    let mut default = None;
    for arm in &island.arms {
        let body = &arm.body;
        if arm.is_default() {
            default = Some(body);
        } else {
            arms.push(quote! { #index => #body, });
            index += 1;
        }
    }
    let default = default.expect("validated: an island has exactly one default arm");
    syn::parse_quote_spanned! {island.span=>
        match #tag.select(&#site) {
            #(#arms)*
            _ => #default,
        }
    }
}

/// The items beside the function: the site, the registrations, and
/// `mod __islands_<fn>_<n>` with the lifted proof kernel.
pub fn items(island: &Island, cx: &Context, select: &Expr) -> TokenStream {
    let rt = crate::paths::runtime();
    let cubecl = crate::paths::cubecl();
    let module = module_name(cx);
    let site = site_name(cx);
    let function = cx.function.to_string();
    let id = format!("::{}#{}", cx.function, cx.index);
    let specs = island.arms.iter().filter(|a| !a.is_default()).map(arm_spec);
    let proof = match &island.proof {
        Some(sig) => lifted(sig, cx, select),
        None => TokenStream::new(),
    };
    let expect = Ident::new(cx.expect.variant(), Span::call_site());
    let expect = quote!(#rt::Expect::#expect);
    let proof_spec = match &island.proof {
        Some(_) => quote!(#rt::lifted::ProofSpec::Lifted(&#module::LIFTED)),
        None => quote!(#rt::lifted::ProofSpec::Unprovable(
            "the island declares no proof signature (`proof(…) -> T;`), so it cannot be lifted into a proof kernel"
        )),
    };
    let registrations = island.arms.iter().filter(|a| !a.is_default()).enumerate().map(|(i, arm)| {
        let line = quote_spanned!(arm.span=> line!());
        let column = quote_spanned!(arm.span=> column!());
        quote! {
            #rt::__private::inventory::submit! {
                #rt::ArmEntry {
                    krate: env!("CARGO_PKG_NAME"),
                    function: concat!(module_path!(), "::", #function),
                    site: &#site,
                    arm: #i,
                    file: file!(),
                    line: #line,
                    column: #column,
                    proof: #proof_spec,
                    expect: #expect,
                }
            }
        }
    });
    let module_items = (!proof.is_empty()).then(|| {
        quote! {
            #[doc(hidden)]
            #[allow(non_snake_case, non_upper_case_globals, unused_imports, unused_mut, unused_variables, unused_braces, clippy::all)]
            mod #module {
                use super::*;
                use #cubecl::{self as cubecl, prelude::{cube, ABSOLUTE_POS, CUBE_POS}};
                #proof
            }
        }
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        static #site: #rt::Site = #rt::Site {
            id: concat!(module_path!(), #id),
            arms: &[#(#specs),*],
        };

        #(#registrations)*
        #module_items
    }
}

fn arm_spec(arm: &Arm) -> TokenStream {
    let rt = crate::paths::runtime();
    let label = arm.label();
    let Pattern::Backends(keys) = &arm.pattern else { unreachable!("only accelerated arms have specs") };
    let backends = keys.iter().map(|k| {
        let v = Ident::new(k.backend.variant(), Span::call_site());
        quote!(#rt::Backend::#v)
    });
    let atoms = arm.guard.iter().map(atom);
    quote! {
        #rt::ArmSpec {
            label: #label,
            backends: &[#(#backends),*],
            guard: #rt::Guard(&[#(#atoms),*]),
        }
    }
}

/// The tokens of a guard atom, as a constant of the runtime's vocabulary.
pub fn atom(atom: &Atom) -> TokenStream {
    let rt = crate::paths::runtime();
    let ident = |name: &str| Ident::new(name, Span::call_site());
    match *atom {
        Atom::Sm(cmp, v) => {
            let c = ident(cmp.variant());
            quote!(#rt::Atom::Sm(#rt::Cmp::#c, #v))
        }
        Atom::Plane(cmp, v) => {
            let c = ident(cmp.variant());
            quote!(#rt::Atom::Plane(#rt::Cmp::#c, #v))
        }
        Atom::Dp4a => quote!(#rt::Atom::Dp4a),
        Atom::Cmma(shape) => {
            let (a, b, acc) = (ident(shape.a.variant()), ident(shape.b.variant()), ident(shape.acc.variant()));
            let (m, n, k) = (shape.m, shape.n, shape.k);
            quote!(#rt::Atom::Cmma(#rt::Mma { a: #rt::Elem::#a, b: #rt::Elem::#b, acc: #rt::Elem::#acc, m: #m, n: #n, k: #k }))
        }
    }
}

/// The lifted proof kernel: each lane loads the declared inputs, evaluates the island, stores
/// its value.
fn lifted(sig: &ProofSig, cx: &Context, select: &Expr) -> TokenStream {
    let rt = crate::paths::runtime();
    let cubecl = crate::paths::cubecl();
    let tag = cx.tag;
    let mut params = Vec::new();
    let mut loads = Vec::new();
    let mut descs = Vec::new();
    for p in &sig.params {
        let name = &p.name;
        let buffer = format_ident!("__in_{}", name);
        let label = name.to_string();
        match &p.shape {
            ParamShape::Lane(ty) => {
                params.push(quote!(#buffer: &[#ty]));
                loads.push(quote!(let #name: #ty = #buffer[ABSOLUTE_POS];));
                descs.push(quote! {
                    #rt::lifted::Param {
                        name: #label,
                        kind: <#ty as #rt::ProofValue>::KIND,
                        width: <#ty as #rt::ProofValue>::WIDTH,
                        shape: #rt::lifted::Shape::Lane,
                        mutable: false,
                    }
                });
            }
            ParamShape::Const { ty, value } => {
                loads.push(quote!(let #name: #ty = #value;));
            }
            ParamShape::TensorMap { of, tile } => {
                let of = of.to_string();
                params.push(quote!(#buffer: &[u32]));
                // `island_runtime::tensor_map::MAP_WORDS`: a map is 128 bytes, fixed by the hardware.
                let words = 32usize;
                loads.push(quote!(let #name = &#buffer[CUBE_POS * #words..CUBE_POS * #words + #words];));
                descs.push(quote! {
                    #rt::lifted::Param {
                        name: #label,
                        kind: <u32 as #rt::ProofValue>::KIND,
                        width: 1,
                        shape: #rt::lifted::Shape::TensorMap { of: #of, tile: #tile },
                        mutable: false,
                    }
                });
            }
            ParamShape::Cube { elem, len, mutable } => {
                // A literal stays a literal in the kernel; an expression is evaluated while the
                // kernel is expanded (`comptime!`), so both give the kernel the same constant.
                let (len_usize, len_u32) = match len {
                    syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                        let n = i.base10_parse::<u32>().unwrap_or_default();
                        let n_usize = n as usize;
                        (quote!(#n_usize), quote!(#n))
                    }
                    expr => (
                        quote!(comptime!((#expr) as usize)),
                        quote!({
                            const LEN: u32 = (#expr) as u32;
                            assert!(LEN > 0, "a per-cube proof input holds at least one value");
                            LEN
                        }),
                    ),
                };
                if *mutable {
                    params.push(quote!(#buffer: &mut [#elem]));
                    loads.push(
                        quote!(let #name = &mut #buffer[CUBE_POS * #len_usize..CUBE_POS * #len_usize + #len_usize];),
                    );
                } else {
                    params.push(quote!(#buffer: &[#elem]));
                    loads
                        .push(quote!(let #name = &#buffer[CUBE_POS * #len_usize..CUBE_POS * #len_usize + #len_usize];));
                }
                descs.push(quote! {
                    #rt::lifted::Param {
                        name: #label,
                        kind: <#elem as #rt::ProofValue>::KIND,
                        width: <#elem as #rt::ProofValue>::WIDTH,
                        shape: #rt::lifted::Shape::Cube(#len_u32),
                        mutable: #mutable,
                    }
                });
            }
        }
    }
    let (out_param, store, out_kind, out_width) = match &sig.output {
        Some(ty) => (
            quote!(__out: &mut [#ty],),
            quote!(let __value: #ty = #select; __out[ABSOLUTE_POS] = __value;),
            quote!(::core::option::Option::Some(<#ty as #rt::ProofValue>::KIND)),
            quote!(<#ty as #rt::ProofValue>::WIDTH),
        ),
        None => (quote!(), quote!(#select;), quote!(::core::option::Option::None), quote!(1)),
    };
    // `dont_care`: one more output, the lane's mask bit, written after the island's value.
    let (mask_param, mask_store, dont_care) = match &sig.dont_care {
        Some((_, condition)) => {
            let text = quote!(#condition).to_string();
            let deciding: Vec<String> = sig
                .params
                .iter()
                .map(|p| p.name.to_string())
                .filter(|name| mentions(quote!(#condition), name))
                .collect();
            (
                quote!(__dont_care: &mut [u32],),
                quote! {
                    let mut __dont_care_lane = 0u32;
                    if #condition {
                        __dont_care_lane = 1u32;
                    }
                    __dont_care[ABSOLUTE_POS] = __dont_care_lane;
                },
                quote!(::core::option::Option::Some(#rt::lifted::DontCare { condition: #text, inputs: &[#(#deciding),*] })),
            )
        }
        None => (quote!(), quote!(), quote!(::core::option::Option::None)),
    };
    let buffers = descs.len() + usize::from(sig.output.is_some()) + usize::from(sig.dont_care.is_some());
    let args = (0..buffers).map(|i| quote!(args.buffer(#i)));
    let cube_dim = match &sig.cube_dim {
        None => quote!(64u32),
        Some((syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(lit), .. }), _)) => {
            let n = lit.base10_parse::<u32>().unwrap_or_default();
            quote!(#n)
        }
        Some((value, _)) => quote!({
            const CUBE_DIM: u32 = (#value) as u32;
            assert!(CUBE_DIM >= 1 && CUBE_DIM <= 1024, "cube_dim must be between 1 and 1024");
            CUBE_DIM
        }),
    };
    let lanes = sig.lanes.unwrap_or(0);
    let contract = match &sig.contract {
        None => quote!(#rt::Contract::Exact),
        Some(ContractSpec::Ulp { ulps, reason, .. }) => {
            quote!(#rt::Contract::Ulp { ulps: #ulps, reason: #reason })
        }
        Some(ContractSpec::Accumulation { terms, reason, .. }) => {
            quote!(#rt::Contract::Accumulation { terms: #terms, reason: #reason })
        }
    };
    let exact_where = match &sig.contract {
        Some(
            ContractSpec::Ulp { exact_where: Some(path), .. }
            | ContractSpec::Accumulation { exact_where: Some(path), .. },
        ) => {
            quote!(::core::option::Option::Some(#path as fn(&#rt::Profile) -> ::core::option::Option<&'static str>))
        }
        _ => quote!(::core::option::Option::None),
    };
    let define_args = (0..buffers).map(|i| quote!(args.buffer(#i)));
    quote! {
        #[cube(launch, create_dummy_kernel)]
        pub fn kernel(#(#params,)* #out_param #mask_param #[comptime] #tag: #rt::Target) {
            #(#loads)*
            #store
            #mask_store
        }

        pub static LIFTED: #rt::lifted::Lifted = #rt::lifted::Lifted {
            params: &[#(#descs),*],
            output: #out_kind,
            output_width: #out_width,
            cube_dim: #cube_dim,
            lanes: #lanes,
            contract: #contract,
            exact_where: #exact_where,
            dont_care: #dont_care,
            launch: launch_lifted,
            define: define_lifted,
        };

        fn launch_lifted(args: &#rt::lifted::LaunchArgs<'_>) {
            kernel::launch(args.client, args.cube_count(), args.cube_dim(), #(#args,)* args.target());
        }

        fn define_lifted(
            args: &#rt::lifted::LaunchArgs<'_>,
            device: #rt::__private::Arc<#cubecl::prelude::DeviceProperties>,
            target: #rt::__private::Arc<#cubecl::prelude::TargetProperties>,
        ) -> #rt::lifted::Definition {
            let kernel = kernel::create_dummy_kernel(device, target, args.cube_count(), args.cube_dim(), #(#define_args,)* args.target());
            #rt::lifted::define(&kernel)
        }
    }
}

/// Whether `tokens` name the identifier `name` anywhere (a proof input the `dont_care`
/// condition reads).
fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), name),
        _ => false,
    })
}
