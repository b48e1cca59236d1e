//! Checks that no `default` arm, and no function one calls, uses `island_runtime::emulation`.
//!
//! A proof runs an arm through its emulation against `default` on the CPU. Code the two share
//! cancels out of that comparison, bugs included, so the normative side must be written
//! independently. This scan reads the crate's sources (not the macro's output): every
//! `default => …` body of every `island!`, the functions those bodies call (transitively, as
//! `module::name` resolved to `module.rs` of the crate, or `name` in the calling file), and
//! every file named `portable.rs`.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The word whose use makes a default depend on an emulation.
const EMULATION: &str = "emulation";

/// Every place under `dir` where a `default` (or a function it calls, or a portable helper)
/// uses the emulation module, as `file: what`. Empty when the defaults are independent.
pub fn violations(dir: &Path) -> Result<Vec<String>, String> {
    let files = read_sources(dir)?;
    // Functions by (module, name): a file's stem is its module.
    let mut functions: BTreeMap<(String, String), TokenStream> = BTreeMap::new();
    for (file, tokens) in &files {
        collect_functions(tokens.clone(), &stem(file), &mut functions);
    }
    let mut found = Vec::new();
    let mut work = Vec::new();
    for (file, tokens) in &files {
        if file.ends_with("portable.rs") && mentions(tokens.clone(), EMULATION) {
            found.push(format!("{file}: the portable helpers use `{EMULATION}`"));
        }
        for body in default_bodies(tokens.clone()) {
            if mentions(body.clone(), EMULATION) {
                found.push(format!("{file}: a `default` arm uses `{EMULATION}`"));
            }
            calls(body, &stem(file), &mut work);
        }
    }
    // Follow the calls through the crate's own functions.
    let mut seen = BTreeSet::new();
    while let Some(key) = work.pop() {
        if !seen.insert(key.clone()) {
            continue;
        }
        let Some(body) = functions.get(&key) else { continue };
        if mentions(body.clone(), EMULATION) {
            found.push(format!("{}.rs: `{}`, called by a `default` arm, uses `{EMULATION}`", key.0, key.1));
        }
        calls(body.clone(), &key.0, &mut work);
    }
    Ok(found)
}

/// A source file's module name: its stem.
fn stem(file: &str) -> String {
    Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

fn read_sources(dir: &Path) -> Result<Vec<(String, TokenStream)>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        for entry in std::fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let tokens = text.parse().map_err(|e| format!("{}: {e}", path.display()))?;
                out.push((path.display().to_string(), tokens));
            }
        }
    }
    Ok(out)
}

/// Whether `word` appears as an identifier anywhere in `tokens`.
fn mentions(tokens: TokenStream, word: &str) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(id) => id == word,
        TokenTree::Group(g) => mentions(g.stream(), word),
        _ => false,
    })
}

/// `fn name … { body }` items of module `module`, with their bodies.
fn collect_functions(tokens: TokenStream, module: &str, out: &mut BTreeMap<(String, String), TokenStream>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) if id == "fn" => {
                let Some(TokenTree::Ident(name)) = tokens.get(i + 1) else { continue };
                let body = tokens[i + 2..].iter().find_map(|t| match t {
                    TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => Some(g.stream()),
                    _ => None,
                });
                if let Some(body) = body {
                    out.entry((module.to_string(), name.to_string())).or_insert(body);
                }
            }
            TokenTree::Group(g) => collect_functions(g.stream(), module, out),
            _ => {}
        }
    }
}

/// The body of every `default => …` arm of every `island! { … }` in `tokens`.
fn default_bodies(tokens: TokenStream) -> Vec<TokenStream> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::new();
    for (i, tt) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = tt {
            let is_island = i >= 2
                && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '!')
                && matches!(&tokens[i - 2], TokenTree::Ident(id) if id == "island");
            if is_island {
                let body: Vec<TokenTree> = g.stream().into_iter().collect();
                for j in 0..body.len() {
                    let is_default = matches!(&body[j], TokenTree::Ident(id) if id == "default")
                        && matches!(body.get(j + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=')
                        && matches!(body.get(j + 2), Some(TokenTree::Punct(p)) if p.as_char() == '>');
                    if is_default {
                        let arm = body[j + 3..]
                            .iter()
                            .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                            .cloned()
                            .collect();
                        out.push(arm);
                    }
                }
            }
            out.extend(default_bodies(g.stream()));
        }
    }
    out
}

/// Functions called in `tokens` (written in module `module`), as (module, name): an identifier
/// followed by `(` or by `::<…>(`, qualified by the path segment before it if there is one.
fn calls(tokens: TokenStream, module: &str, out: &mut Vec<(String, String)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let colon = |i: usize| matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':');
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) => {
                let next = tokens.get(i + 1);
                let direct = matches!(next, Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                let turbofish = colon(i + 1) && matches!(tokens.get(i + 3), Some(TokenTree::Punct(p)) if p.as_char() == '<');
                if direct || turbofish {
                    let qualifier = match (i >= 3 && colon(i - 1) && colon(i - 2), i.checked_sub(3).map(|j| &tokens[j])) {
                        (true, Some(TokenTree::Ident(q))) => q.to_string(),
                        _ => module.to_string(),
                    };
                    out.push((qualifier, id.to_string()));
                }
            }
            TokenTree::Group(g) => calls(g.stream(), module, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(src: &str) -> Vec<String> {
        let dir = std::env::temp_dir().join(format!("islands-independence-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("lib.rs"), src).unwrap();
        let found = violations(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        found
    }

    #[test]
    fn finds_emulation_in_a_default_and_in_what_it_calls() {
        let direct = "fn f() { island! { cuda => a(), default => emulation::butterfly(v, 32u32, Reduce::Sum) } }";
        assert_eq!(scan(direct).len(), 1);
        let indirect = "fn f() { island! { cuda => a(), default => lib::helper::<f32>(v), } }
                        fn helper(v: f32) -> f32 { deeper(v) }
                        fn deeper(v: f32) -> f32 { island_runtime::emulation::gather(v, 8) }";
        assert_eq!(scan(indirect).len(), 1, "{:?}", scan(indirect));
        // A function of the same name in another module is not the one called.
        let elsewhere = "fn f() { island! { cuda => a(), default => other::deeper(v) } }
                         fn deeper(v: f32) -> f32 { emulation::gather(v, 8) }";
        assert!(scan(elsewhere).is_empty());
        let arm_only = "fn f() { island! { cuda => emulation::gather(v, 8), default => tree(v) } } fn tree(v: f32) { v }";
        assert!(scan(arm_only).is_empty());
    }
}
