//! `#[islands]` on a function: the driver. It finds the tag (`tag`), rewrites every `island!`
//! in the body (`parse`, `validate`, `expand`), and emits the islands' items and, for launch
//! kernels, the launch paths (`launch`).

use crate::ast::{Island, TagParam};
use crate::parse::TagOption;
use crate::{expand, parse, validate};
use island_vocab::Expect;
use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Ident, ItemFn, Macro, Stmt, Token};

/// The attribute's entry point.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    // A wrong option is reported, and the function expanded without options: its islands
    // then report nothing more.
    let mut option_error = None;
    let options = match syn::parse::Parser::parse2(Punctuated::<TagOption, Token![,]>::parse_terminated, attr) {
        Ok(o) => o,
        Err(e) => {
            option_error = Some(e);
            Punctuated::new()
        }
    };
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return with_item(e.to_compile_error(), item),
    };
    let mut errors: Vec<syn::Error> = option_error.into_iter().collect();
    let out = function(options, func, &mut errors);
    let errors = errors.into_iter().map(|e| e.to_compile_error());
    quote! { #(#errors)* #out }
}

fn with_item(error: TokenStream, item: TokenStream) -> TokenStream {
    quote! { #error #item }
}

fn function(options: Punctuated<TagOption, Token![,]>, mut func: ItemFn, errors: &mut Vec<syn::Error>) -> TokenStream {
    let mut explicit_tag = None;
    let mut expect = Expect::Equal;
    for o in options {
        match o {
            TagOption::Tag(name) => explicit_tag = Some(name),
            TagOption::Expect(e) => expect = e,
        }
    }
    let Some(cube) = crate::launch::cube_attr(&func.attrs) else {
        errors.push(syn::Error::new(
            func.sig.ident.span(),
            "#[islands] must be placed above #[cube] (or #[cube(launch)]): it rewrites the body before CubeCL expands it",
        ));
        return quote!(#func);
    };
    let is_kernel = cube.launch || cube.launch_unchecked;
    let tag = crate::tag::param(&mut func, explicit_tag, is_kernel, errors);
    let tag_reported = tag.is_err();

    let mut visitor = Rewriter {
        function: func.sig.ident.clone(),
        tag: tag.unwrap_or(None),
        expect,
        count: 0,
        sites: Vec::new(),
        items: Vec::new(),
        errors: Vec::new(),
        locals: crate::scope::locals(&func),
        inside: false,
    };
    visitor.visit_block_mut(&mut func.block);
    if visitor.count > 0 && visitor.tag.is_none() && !tag_reported {
        errors.push(syn::Error::new(
            func.sig.ident.span(),
            format!(
                "`{}` has islands but no tag parameter: a #[cube] helper must take the kernel's tag, \
                 add `#[comptime] target: island_runtime::Target` and pass `target` from the caller",
                func.sig.ident
            ),
        ));
    }
    if let (false, Some(tag)) = (visitor.errors.is_empty(), &visitor.tag) {
        // An invalid island became its `default`, which may not read the tag the island read:
        // keep it read, so the error is not followed by an unused-variable warning.
        let name = &tag.name;
        func.block.stmts.insert(0, syn::parse_quote!(let _ = #name;));
    }
    errors.append(&mut visitor.errors);
    let mut items = visitor.items;
    // Every island of the function, for `sites_of!(function)` and `#[intrinsic(check = …)]`.
    let rt = crate::paths::runtime();
    let (list, vis, sites) = (crate::names::sites(&func.sig.ident), &func.vis, &visitor.sites);
    items.push(quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #vis static #list: &[&#rt::Site] = &[#(&#sites),*];
    });

    if is_kernel {
        let launch = crate::launch::paths(&mut func, &cube, visitor.tag.as_ref().map(|t| &t.name));
        quote! { #func #(#items)* #launch }
    } else {
        quote! { #func #(#items)* }
    }
}

/// What an invalid island becomes. With a `default` arm: that arm's body, so the kernel
/// type-checks as written and the error, emitted once beside the function, is the only one (an
/// error inside the body would be reported once per expansion CubeCL makes of it; a helper
/// whose tag only the island read gets an unused-variable warning). Without one
/// (no `default` to be found): the error as an expression, which takes
/// whatever type its context wants (`comptime!` makes CubeCL paste it verbatim); rustc shows it
/// once but counts each paste.
fn fallback(errors: &mut Vec<syn::Error>, error: syn::Error, default: Option<Expr>) -> Expr {
    match default {
        Some(body) => {
            errors.push(error);
            body
        }
        None => {
            let error = error.to_compile_error();
            syn::parse_quote!(comptime! { #error })
        }
    }
}

/// The body of the `default => …` arm of an island that does not parse, if that arm alone
/// does: the tokens after `default =>` up to the next `,` outside brackets.
fn recover_default(tokens: TokenStream) -> Option<Expr> {
    let tokens: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    let is_punct =
        |t: &proc_macro2::TokenTree, c: char| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == c);
    let start = (0..tokens.len().saturating_sub(2)).find(|&i| {
        matches!(&tokens[i], proc_macro2::TokenTree::Ident(id) if id == "default")
            && is_punct(&tokens[i + 1], '=')
            && is_punct(&tokens[i + 2], '>')
    })? + 3;
    let body: TokenStream = tokens[start..].iter().take_while(|t| !is_punct(t, ',')).cloned().collect();
    syn::parse2(body).ok()
}

/// Rewrites every `island!` of a body, innermost last, numbering them in source order.
struct Rewriter {
    function: Ident,
    tag: Option<TagParam>,
    expect: Expect,
    count: usize,
    /// The `Site` statics of the islands expanded so far.
    sites: Vec<Ident>,
    items: Vec<TokenStream>,
    errors: Vec<syn::Error>,
    /// Every name the function binds (parameters, `let`s, loop variables): an arm that reads one
    /// its proof signature does not declare cannot be lifted.
    locals: std::collections::BTreeSet<String>,
    /// Whether the visitor is inside an island's arm.
    inside: bool,
}

fn is_island(mac: &Macro) -> bool {
    mac.path.segments.last().is_some_and(|s| s.ident == "island")
}

impl Rewriter {
    /// Replaces one invocation with its selection `match` (or, when it is invalid, with its
    /// `default` arm so the rest of the kernel still type-checks).
    fn rewrite(&mut self, mac: &Macro) -> Expr {
        let index = self.count;
        self.count += 1;
        let span = mac.path.span();
        if self.inside {
            let default = parse::island(span, mac.tokens.clone())
                .ok()
                .and_then(|i| i.arms.into_iter().find(|a| a.is_default()).map(|a| a.body));
            let error = syn::Error::new(
                span,
                "an island cannot sit inside another island's arm: proving the outer arm forces that island alone, so \
                 the inner one would take `default` inside it and its own arms would go unproven there; compute the \
                 inner island before the outer one (`let v = island! { … };`) and use `v` in the arm",
            );
            return fallback(&mut self.errors, error, default);
        }
        let mut island: Island = match parse::island(span, mac.tokens.clone()) {
            Ok(i) => i,
            Err(e) => return fallback(&mut self.errors, e, recover_default(mac.tokens.clone())),
        };
        let mut problems = Vec::new();
        validate::island(&island, &mut problems);
        if let Some(sig) = &island.proof {
            let tag = self.tag.as_ref().map(|t| t.name.to_string());
            crate::scope::undeclared_reads(&island, sig, &self.locals, tag.as_deref(), &mut problems);
        }
        self.inside = true;
        for arm in &mut island.arms {
            self.visit_expr_mut(&mut arm.body);
        }
        self.inside = false;
        if !problems.is_empty() {
            let default = island.arms.iter().find(|a| a.is_default()).map(|a| a.body.clone());
            let rest = problems.split_off(1);
            let invalid = fallback(&mut self.errors, problems.remove(0), default);
            self.errors.extend(rest);
            return invalid;
        }
        let Some(tag) = &self.tag else {
            // Reported once for the function; `default` keeps the body well-typed.
            let default = island.arms.into_iter().find(|a| a.is_default()).map(|a| a.body);
            return default.expect("validated: an island has a default arm");
        };
        let cx = expand::Context { function: &self.function, index, tag: &tag.name, expect: self.expect };
        let select = expand::selection(&island, &cx);
        self.items.push(expand::items(&island, &cx, &select));
        self.sites.push(expand::site_name(&cx));
        select
    }
}

impl VisitMut for Rewriter {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        if let Expr::Macro(m) = expr
            && is_island(&m.mac)
        {
            *expr = self.rewrite(&m.mac.clone());
            return;
        }
        syn::visit_mut::visit_expr_mut(self, expr);
    }

    fn visit_stmt_mut(&mut self, stmt: &mut Stmt) {
        if let Stmt::Macro(m) = stmt
            && is_island(&m.mac)
        {
            let expr = self.rewrite(&m.mac.clone());
            *stmt = Stmt::Expr(expr, m.semi_token);
            return;
        }
        syn::visit_mut::visit_stmt_mut(self, stmt);
    }
}
