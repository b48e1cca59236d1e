//! Counts the accelerated arms and the intrinsics written in source files, independently of the
//! macros, to check that the registries hold every one of them; reads a crate's sources as
//! tokens (for the independence scan too).

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::path::{Path, PathBuf};

/// Accelerated arms of every `island!` in the `.rs` files under `dir`, nested ones included; an
/// `island!` in a `macro_rules!` body counts once per invocation of that macro in its file.
pub fn count_arms(dir: &Path) -> Result<usize, SourceError> {
    count_with(dir, count_file)
}

/// Intrinsics registered in the `.rs` files under `dir`: `#[intrinsic(…)]` attributes, by any
/// path (`#[islands::intrinsic(…)]`).
pub fn count_intrinsics(dir: &Path) -> Result<usize, SourceError> {
    count_with(dir, intrinsics_in)
}

fn count_with(dir: &Path, count_in: fn(TokenStream) -> usize) -> Result<usize, SourceError> {
    Ok(sources(dir)?.into_iter().map(|(_, tokens)| count_in(tokens)).sum())
}

/// A source file that could not be read or lexed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Lex { path: PathBuf, source: proc_macro2::LexError },
}

/// Every `.rs` file under `dir`, as tokens.
pub fn sources(dir: &Path) -> Result<Vec<(PathBuf, TokenStream)>, SourceError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let read = |source| SourceError::Read { path: path.clone(), source };
        for entry in std::fs::read_dir(&path).map_err(read)? {
            let path = entry.map_err(read)?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path)
                    .map_err(|source| SourceError::Read { path: path.clone(), source })?;
                let tokens = text.parse().map_err(|source| SourceError::Lex { path: path.clone(), source })?;
                out.push((path, tokens));
            }
        }
    }
    Ok(out)
}

/// Intrinsic registrations in a token stream.
pub fn intrinsics_in(tokens: TokenStream) -> usize {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut total = 0;
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket => {
                let is_attr = i >= 1 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '#');
                let path: Vec<String> = g
                    .stream()
                    .into_iter()
                    .take_while(|t| !matches!(t, TokenTree::Group(_)))
                    .filter_map(|t| match t {
                        TokenTree::Ident(id) => Some(id.to_string()),
                        _ => None,
                    })
                    .collect();
                let named = matches!(path.as_slice(), [last] | [_, last] if last == "intrinsic");
                total += usize::from(is_attr && named);
                total += intrinsics_in(g.stream());
            }
            TokenTree::Group(g) => total += intrinsics_in(g.stream()),
            _ => {}
        }
    }
    total
}

/// Arms in a file: its `island!`s outside macro bodies, plus, for each `macro_rules!` whose body
/// holds `island!`s, their arms times the macro's invocations in the file.
pub fn count_file(tokens: TokenStream) -> usize {
    let mut macros = Vec::new();
    macros_in(tokens.clone(), &mut macros);
    count_in(tokens.clone()) + macros.iter().map(|(name, arms)| arms * invocations(tokens.clone(), name)).sum::<usize>()
}

/// `macro_rules! NAME { … }` definitions at any depth, with the island arms their bodies hold.
fn macros_in(tokens: TokenStream, out: &mut Vec<(String, usize)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tt) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = tt {
            match macro_name(&tokens, i) {
                Some(name) => out.push((name, count_in(g.stream()))),
                None => macros_in(g.stream(), out),
            }
        }
    }
}

/// The name of the `macro_rules!` whose body is the group at `tokens[i]`, if it is one.
fn macro_name(tokens: &[TokenTree], i: usize) -> Option<String> {
    match (i.checked_sub(3).map(|j| &tokens[j..i]), &tokens[i]) {
        (Some([TokenTree::Ident(kw), TokenTree::Punct(bang), TokenTree::Ident(name)]), TokenTree::Group(_))
            if kw == "macro_rules" && bang.as_char() == '!' =>
        {
            Some(name.to_string())
        }
        _ => None,
    }
}

/// Invocations `name!(…)` (any delimiter) in a token stream, outside `macro_rules!` bodies.
fn invocations(tokens: TokenStream, name: &str) -> usize {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut total = 0;
    for (i, tt) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = tt {
            let invoked = i >= 2
                && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '!')
                && matches!(&tokens[i - 2], TokenTree::Ident(id) if id == name);
            total += usize::from(invoked);
            if macro_name(&tokens, i).is_none() {
                total += invocations(g.stream(), name);
            }
        }
    }
    total
}

/// Arms in every `island! { … }` of a token stream, outside `macro_rules!` bodies.
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
            if macro_name(&tokens, i).is_none() {
                total += count_in(g.stream());
            }
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

    #[test]
    fn counts_a_macro_bodys_arms_once_per_invocation() {
        let src = "macro_rules! entry { ($n:ident) => { fn $n() { island! { cuda => 1, hip => 2, default => 3 } } }; }
                   entry!(a); entry!(b); mod m { entry! { c } }
                   fn f() { island! { cuda => 1, default => 2 } }";
        assert_eq!(count_file(src.parse().unwrap()), 2 * 3 + 1);
        assert_eq!(count_in(src.parse().unwrap()), 1, "a macro body alone counts nothing");
    }

    #[test]
    fn counts_intrinsic_attributes_by_any_path() {
        let src = "#[island_runtime::intrinsic(name = \"c\")] mod c {} #[intrinsic(name = \"d\")] mod d {}
                   mod outer { #[islands::intrinsic(name = \"e\")] pub mod e {} }
                   #[cube] fn f() {} #[doc = \"intrinsic\"] fn g() {}";
        assert_eq!(intrinsics_in(src.parse().unwrap()), 3);
    }
}
