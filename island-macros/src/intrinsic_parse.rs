//! Parsing `#[intrinsic(…)]`: its arguments (`name`, `summary`, `check`, `semantics`,
//! `lowerings(…)`) and the functions of its module.

use island_vocab::Atom;
use island_vocab::Backend;
use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, Item, ItemFn, LitStr, Path, Token, bracketed, parenthesized};

/// The attribute's arguments.
pub struct Args {
    pub name: LitStr,
    pub summary: LitStr,
    pub checks: Vec<Path>,
    pub lowerings: Vec<Row>,
    pub semantics: Option<SemanticsArg>,
}

/// `semantics = defined`, `float_device_defined("…")`, `device_defined("…")` or
/// `synchronizing("…")`.
pub struct SemanticsArg {
    pub keyword: Ident,
    pub what: Option<LitStr>,
}

impl Parse for SemanticsArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let keyword: Ident = input.parse()?;
        let what = match keyword.to_string().as_str() {
            "defined" => None,
            "float_device_defined" | "device_defined" | "synchronizing" => {
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
pub const SEMANTICS: &str =
    "defined, float_device_defined(\"what the device decides\"), device_defined(\"…\") or synchronizing(\"…\")";

/// `vulkan if dp4a => "OpSDot"`, or `cuda if dp4a => "__dp4a(" sass "IDP.4A"`.
pub struct Row {
    /// The keyword as written, for spans and function names.
    pub backend: Ident,
    pub which: Backend,
    pub guard: Vec<Atom>,
    pub instruction: LitStr,
    /// The machine instruction (an opcode prefix of NVIDIA's SASS) the instruction must become.
    pub sass: Option<LitStr>,
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

/// The functions of an intrinsic's module.
pub fn functions_of(items: &[Item]) -> Vec<ItemFn> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Fn(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

/// The name of the function whose native code a row's backend runs: its own, else `native`.
pub fn implementor<'a>(functions: &'a [ItemFn], backend: &Ident) -> Option<&'a ItemFn> {
    let by_name = |name: &str| functions.iter().find(|f| f.sig.ident == name);
    by_name(&backend.to_string()).or_else(|| by_name("native"))
}
