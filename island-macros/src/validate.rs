//! Checks across the arms of one island. Every problem is reported, each at its own token.

use crate::ast::*;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;

/// Validates `island`, pushing one error per problem.
pub fn island(island: &Island, errors: &mut Vec<syn::Error>) {
    let defaults: Vec<&Arm> = island.arms.iter().filter(|a| a.is_default()).collect();
    match defaults.as_slice() {
        [] if island.arms.is_empty() => errors.push(syn::Error::new(
            island.span,
            "empty island: write at least its `default => …` arm, the normative code every accelerated arm \
             is proven against",
        )),
        [] => errors.push(syn::Error::new(
            island.span,
            "island! requires a `default => …` arm: it is the normative arm, the one the CPU runs \
             and every accelerated arm is proven against",
        )),
        [_] => {}
        [_, extra @ ..] => {
            for arm in extra {
                errors.push(syn::Error::new(arm.span, "island! has a second `default` arm; only one is allowed"));
            }
        }
    }

    let mut seen_default = false;
    for (i, arm) in island.arms.iter().enumerate() {
        if seen_default && !arm.is_default() {
            errors.push(syn::Error::new(
                arm.span,
                "this arm is unreachable: it comes after `default`, which takes every backend; \
                 move `default` to the end",
            ));
        }
        match &arm.pattern {
            Pattern::Default(span) => {
                if let Some(guard) = arm.guard_span {
                    errors.push(syn::Error::new(guard, "`default` cannot have a guard: it must always apply"));
                }
                let _ = span;
                seen_default = true;
                if let Some(at) = emulation_use(arm.body.to_token_stream()) {
                    errors.push(syn::Error::new(
                        at,
                        "`default` may not call an emulation: every arm is proven against `default` by running its \
                         emulation, so code the two share cancels out of the proof, bugs included; write `default` \
                         independently (island_intrinsics::portable has such helpers)",
                    ));
                }
            }
            Pattern::Backends(keys) => {
                for (k, key) in keys.iter().enumerate() {
                    if keys[..k].iter().any(|other| other.ident == key.ident) {
                        errors.push(syn::Error::new(
                            key.ident.span(),
                            format!("backend `{}` is listed twice in this arm", key.ident),
                        ));
                    }
                }
                check_against_earlier(island, i, keys, arm, errors);
            }
        }
    }

    if let Some(sig) = &island.proof {
        for (i, p) in sig.params.iter().enumerate() {
            if sig.params[..i].iter().any(|q| q.name == p.name) {
                errors.push(syn::Error::new(p.name.span(), format!("proof input `{}` is declared twice", p.name)));
            }
        }
        for p in &sig.params {
            if let ParamShape::TensorMap { of, .. } = &p.shape {
                match sig.params.iter().find(|q| q.name == *of).map(|q| &q.shape) {
                    Some(ParamShape::Cube { .. }) => {}
                    Some(_) => errors.push(syn::Error::new(
                        of.span(),
                        format!("`tensor_map` maps a per-cube slice input (`{of}: &[T; N]`); `{of}` is not one"),
                    )),
                    None => errors.push(syn::Error::new(
                        of.span(),
                        format!("`tensor_map` maps an input of this proof signature; there is no `{of}`"),
                    )),
                }
            }
        }
        let writes = sig.params.iter().any(|p| matches!(p.shape, ParamShape::Cube { mutable: true, .. }));
        if sig.output.is_none() && !writes {
            errors.push(syn::Error::new(
                sig.span,
                "a proof signature needs something to compare: a value (`-> T`) or a `&mut [T; N]` input",
            ));
        }
        if let (Some((key, _)), None) = (&sig.dont_care, &sig.output) {
            errors.push(syn::Error::new(
                key.span(),
                "`dont_care` names lanes of the island's value, and this proof signature has none: add `-> T`",
            ));
        }
    }
}

/// An arm whose every backend is already taken by an earlier arm without a guard can never
/// be selected; an arm with the same backend and the same guard as an earlier one is a
/// duplicate.
fn check_against_earlier(island: &Island, i: usize, keys: &[BackendKey], arm: &Arm, errors: &mut Vec<syn::Error>) {
    let earlier = &island.arms[..i];
    for key in keys {
        if let Some(dup) = earlier.iter().find(|e| covers(e, key) && e.guard_text() == arm.guard_text()) {
            let _ = dup;
            errors.push(syn::Error::new(
                key.ident.span(),
                if arm.guard.is_empty() {
                    format!("backend `{}` already has an arm; the same backend cannot appear twice", key.ident)
                } else {
                    format!(
                        "backend `{}` already has an arm with the guard `{}`; the same backend cannot appear twice with one guard",
                        key.ident,
                        arm.guard_text()
                    )
                },
            ));
            return;
        }
    }
    let shadowed = keys.iter().all(|key| earlier.iter().any(|e| covers(e, key) && e.guard.is_empty()));
    if shadowed {
        errors.push(syn::Error::new(
            arm.span,
            format!("this arm is unreachable: an earlier arm without a guard already takes `{}`", arm.label()),
        ));
    }
}

fn covers(arm: &Arm, key: &BackendKey) -> bool {
    match &arm.pattern {
        Pattern::Backends(keys) => keys.iter().any(|k| k.ident == key.ident),
        Pattern::Default(_) => false,
    }
}

/// The first identifier of `tokens` that names an emulation: an intrinsic's `emulate`, or the
/// runtime's `emulation` module.
fn emulation_use(tokens: TokenStream) -> Option<Span> {
    for tree in tokens {
        match tree {
            TokenTree::Ident(i) if i == "emulate" || i == "emulation" => return Some(i.span()),
            TokenTree::Group(g) => {
                if let Some(at) = emulation_use(g.stream()) {
                    return Some(at);
                }
            }
            _ => {}
        }
    }
    None
}
