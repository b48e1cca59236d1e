//! Counts the accelerated arms written in source files, independently of the macro, to check
//! that the registry holds every one of them.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::path::Path;

/// Accelerated arms of every `island!` in the `.rs` files under `dir`, nested ones included.
pub fn count_arms(dir: &Path) -> Result<usize, String> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let entries = std::fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let tokens: TokenStream =
                    text.parse().map_err(|e| format!("{}: {e}", path.display()))?;
                total += count_in(tokens);
            }
        }
    }
    Ok(total)
}

/// Arms in every `island! { … }` of a token stream.
pub fn count_in(tokens: TokenStream) -> usize {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut total = 0;
    for (i, tt) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = tt {
            let is_island = i >= 2
                && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '!')
                && matches!(&tokens[i - 2], TokenTree::Ident(id) if id == "island");
            if is_island && g.delimiter() != Delimiter::None {
                total += accelerated_arms(g.stream());
            }
            total += count_in(g.stream());
        }
    }
    total
}

/// Top-level `=>` of an island body, minus the `default =>` one(s).
fn accelerated_arms(body: TokenStream) -> usize {
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    let mut arms = 0;
    for i in 0..tokens.len() {
        let arrow = matches!(&tokens[i], TokenTree::Punct(p) if p.as_char() == '=')
            && matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '>');
        if arrow {
            let is_default = i >= 1 && matches!(&tokens[i - 1], TokenTree::Ident(id) if id == "default");
            if !is_default {
                arms += 1;
            }
        }
    }
    arms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nested_and_skips_default() {
        let src = "fn f() { let x = island! { cuda | hip if sm >= 61 => a(island!{ vulkan => 1, default => 2 }), metal => { b }, default => c }; }";
        assert_eq!(count_in(src.parse().unwrap()), 3);
    }
}
