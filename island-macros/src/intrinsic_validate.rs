//! Checks of `#[intrinsic]` against its module: an emulation exists, and every row of
//! `lowerings(…)` and every backend-named function match.

use crate::intrinsic_parse::{Args, implementor};
use island_vocab::Backend;
use syn::{Ident, ItemFn};

/// The module's `emulate`, or the error that it has none.
pub fn emulation<'a>(intrinsic: &str, module: &Ident, functions: &'a [ItemFn]) -> syn::Result<&'a ItemFn> {
    functions.iter().find(|f| f.sig.ident == "emulate").ok_or_else(|| {
        syn::Error::new_spanned(
            module,
            format!(
                "intrinsic `{intrinsic}` has no emulation: add `#[cube] pub fn emulate(…)` to the module. The CPU runs \
                 it for every backend, and it is what the proofs hold the native lowerings to"
            ),
        )
    })
}

/// One error per row of `lowerings(…)` without a function, per backend-named function without
/// a row, and for a `native` function no row falls back to.
pub fn lowerings(args: &Args, functions: &[ItemFn]) -> Vec<syn::Error> {
    let intrinsic = args.name.value();
    let mut errors: Vec<syn::Error> = Vec::new();
    for row in &args.lowerings {
        if implementor(functions, &row.backend).is_none() {
            errors.push(syn::Error::new(
                row.backend.span(),
                format!(
                    "intrinsic `{intrinsic}` declares a `{0}` lowering but its module has neither `fn {0}(…)` nor `fn native(…)`",
                    row.backend
                ),
            ));
        }
    }
    for f in functions {
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
    errors
}
