//! What an island's arms read from the function around them: a proof lifts the island into a
//! kernel of its own that binds only the proof signature's inputs, so an arm reading any other
//! local of the function would not compile there. Said at the name, naming `proof(…)`.

use crate::ast::{Island, ProofSig};
use std::collections::BTreeSet;
use syn::visit_mut::VisitMut;
use syn::{Expr, ItemFn, PatIdent};

/// Every name `func` binds: parameters, `let`s, loop variables, closure and match bindings
/// (constants and unit variants, written in upper case, are not locals).
pub fn locals(func: &ItemFn) -> BTreeSet<String> {
    // syn's read-only visitor is a feature this crate does not enable; the mutating one walks a
    // copy.
    let mut func = func.clone();
    let mut names = Bindings::default();
    for input in &mut func.sig.inputs {
        if let syn::FnArg::Typed(pt) = input {
            names.visit_pat_mut(&mut pt.pat);
        }
    }
    names.visit_block_mut(&mut func.block);
    names.0
}

#[derive(Default)]
struct Bindings(BTreeSet<String>);

impl VisitMut for Bindings {
    fn visit_pat_ident_mut(&mut self, p: &mut PatIdent) {
        let name = p.ident.to_string();
        if name.starts_with(|c: char| c.is_lowercase() || c == '_') {
            self.0.insert(name);
        }
        syn::visit_mut::visit_pat_ident_mut(self, p);
    }
}

/// Single-name paths an expression reads (`y`, not `plane::sum` or `UNIT_POS::…`).
#[derive(Default)]
struct Reads(Vec<syn::Ident>);

impl VisitMut for Reads {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Path(p) = e
            && p.qself.is_none()
            && p.path.leading_colon.is_none()
            && let Some(ident) = p.path.get_ident()
        {
            self.0.push(ident.clone());
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// One error per name an arm (or `default`) reads from the function's locals that the proof
/// signature does not declare; `tag` (the kernel's tag) is always in scope.
pub fn undeclared_reads(
    island: &Island,
    sig: &ProofSig,
    locals: &BTreeSet<String>,
    tag: Option<&str>,
    errors: &mut Vec<syn::Error>,
) {
    let declared: BTreeSet<String> = sig.params.iter().map(|p| p.name.to_string()).collect();
    let mut reported = BTreeSet::new();
    for arm in &island.arms {
        let mut body = arm.body.clone();
        let mut own = Bindings::default();
        own.visit_expr_mut(&mut body);
        let mut reads = Reads::default();
        reads.visit_expr_mut(&mut body);
        for ident in reads.0 {
            let name = ident.to_string();
            if locals.contains(&name)
                && !declared.contains(&name)
                && !own.0.contains(&name)
                && Some(name.as_str()) != tag
                && reported.insert(name.clone())
            {
                errors.push(syn::Error::new(
                    ident.span(),
                    format!(
                        "`{name}` is not a proof input: the proof runs the island in a kernel of its own that sees only what \
                         `proof(…)` declares; add `{name}: T` (a value per lane), `{name}: &[T; N]` (a slice per cube) or \
                         `{name}: T = …` (a constant) to it"
                    ),
                ));
            }
        }
    }
}
