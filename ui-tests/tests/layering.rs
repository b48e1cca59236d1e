//! The modules of every crate of the workspace form a hierarchy: no import circles.
//!
//! Each crate's source files are the nodes (the crate root excluded: it only declares modules and
//! re-exports). A file depends on another when its code names it: `crate::a::b::…`,
//! `super::…`, `self::…`, or a child module by its own name; inline modules (`mod x { … }`,
//! `#[intrinsic]` definitions) count as the file that holds them. The sources are read as Rust
//! tokens, so comments, doc text and strings name nothing, while macro bodies (`island!`,
//! `quote!`) do. A path through the crate root to an item re-exported there (`crate::Target`)
//! would hide an edge, so it is refused: modules name each other.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// One crate: its module files by module path (`a`, `a::b`; the root is the empty path).
struct Crate {
    name: String,
    modules: BTreeMap<Vec<String>, PathBuf>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The workspace's crates with sources: every `Cargo.toml` beside a `src/` outside `target/`
/// and `patches/` (published crates with our diffs applied, not ours).
fn crates() -> Vec<Crate> {
    fn find(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir()
                && !name.starts_with('.')
                && !["target", "patches", "src", "tests", "docs"].contains(&&*name)
            {
                if path.join("Cargo.toml").exists() && path.join("src").is_dir() {
                    out.push(path.clone());
                }
                find(&path, out);
            }
        }
    }
    let mut dirs = Vec::new();
    find(&workspace(), &mut dirs);
    dirs.iter()
        .map(|dir| {
            let mut modules = BTreeMap::new();
            collect(&dir.join("src"), &mut Vec::new(), &mut modules);
            Crate { name: dir.strip_prefix(workspace()).unwrap().display().to_string(), modules }
        })
        .collect()
}

/// Module files under `dir`, by module path; roots (`lib.rs`, `main.rs`) and `mod.rs` map to
/// their directory's path.
fn collect(dir: &Path, at: &mut Vec<String>, out: &mut BTreeMap<Vec<String>, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            at.push(stem);
            collect(&path, at, out);
            at.pop();
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = at.clone();
            if !(stem == "mod" || (at.is_empty() && (stem == "lib" || stem == "main"))) {
                module.push(stem);
            }
            out.insert(module, path);
        }
    }
}

/// What one file's code names: (target module file, how it was written).
fn references(krate: &Crate, module: &[String], path: &Path) -> Vec<(Vec<String>, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let tokens = TokenStream::from_str(&text).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
    let mut out = Vec::new();
    walk(krate, module, tokens, &mut out);
    out
}

/// The path `a :: b :: c` starting at `tokens[i]`, and the index just past it (at a `{…}` group
/// when the path continues into one: `a::{b, c}`).
fn idents(tokens: &[TokenTree], mut i: usize) -> (Vec<String>, usize) {
    let mut segments = Vec::new();
    loop {
        match tokens.get(i) {
            Some(TokenTree::Ident(id)) => segments.push(id.to_string()),
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => return (segments, i),
            _ => return (segments, i),
        }
        if !is_path_sep(tokens, i + 1) {
            return (segments, i + 1);
        }
        i += 3;
    }
}

fn is_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    matches!((tokens.get(i), tokens.get(i + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':')
}

/// The module file a path (from the crate root) lands in: its longest prefix naming one.
fn resolve(krate: &Crate, path: &[String]) -> Option<Vec<String>> {
    (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| krate.modules.contains_key(p))
}

fn walk(krate: &Crate, module: &[String], stream: TokenStream, out: &mut Vec<(Vec<String>, String)>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(id) if *id == "mod" => {
                // An inline module: its `super` is this module, its `self` a module within.
                if let (Some(TokenTree::Ident(name)), Some(TokenTree::Group(g))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                    && g.delimiter() == Delimiter::Brace
                {
                    let mut inner = module.to_vec();
                    inner.push(name.to_string());
                    walk(krate, &inner, g.stream(), out);
                    i += 3;
                    continue;
                }
            }
            TokenTree::Ident(id) => {
                let word = id.to_string();
                let preceded = i >= 2 && is_path_sep(&tokens, i - 2);
                if !preceded && is_path_sep(&tokens, i + 1) {
                    let base: Option<Vec<String>> = match word.as_str() {
                        "crate" => Some(Vec::new()),
                        "super" => Some(module[..module.len().saturating_sub(1)].to_vec()),
                        "self" => Some(module.to_vec()),
                        // A child module named by its own name.
                        _ => {
                            let mut child = module.to_vec();
                            child.push(word.clone());
                            krate.modules.contains_key(&child).then(|| module.to_vec())
                        }
                    };
                    if let Some(base) = base {
                        let start = if ["crate", "super", "self"].contains(&word.as_str()) { i + 3 } else { i };
                        let (prefix, end) = idents(&tokens, start);
                        let mut tails = Vec::new();
                        match tokens.get(end) {
                            // `crate::{a, b::c}`, `crate::a::{b, c}`: each item of the group.
                            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                                let mut j = 0;
                                while j < inner.len() {
                                    let mut tail = prefix.clone();
                                    tail.extend(idents(&inner, j).0);
                                    tails.push(tail);
                                    while j < inner.len()
                                        && !matches!(&inner[j], TokenTree::Punct(p) if p.as_char() == ',')
                                    {
                                        j += 1;
                                    }
                                    j += 1;
                                }
                            }
                            _ => tails.push(prefix),
                        }
                        for tail in tails {
                            let mut full = base.clone();
                            full.extend(tail.iter().cloned());
                            let written = format!("{word}::{}", tail.join("::"));
                            match resolve(krate, &full) {
                                Some(target) if !target.is_empty() => out.push((target, written)),
                                // Through the root: fine for a module the root declares inline or
                                // a macro it defines, not for a re-exported item.
                                _ if word == "crate"
                                    && tail.first().is_some_and(|s| s.starts_with(char::is_uppercase)) =>
                                {
                                    out.push((Vec::new(), written))
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
            TokenTree::Group(g) => walk(krate, module, g.stream(), out),
            _ => {}
        }
        i += 1;
    }
}

#[test]
fn no_crate_has_an_import_circle() {
    let crates = crates();
    let names: BTreeSet<&str> = crates.iter().map(|c| c.name.as_str()).collect();
    for expected in ["island-runtime", "island-macros", "intrinsics", "cli", "examples/llm", "proofs"] {
        assert!(names.contains(expected), "crate {expected} not found among {names:?}");
    }
    let mut failures = Vec::new();
    for krate in &crates {
        let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (module, path) in &krate.modules {
            if module.is_empty() {
                continue;
            }
            let edges = graph.entry(module.clone()).or_default();
            for (target, written) in references(krate, module, path) {
                if target.is_empty() {
                    failures.push(format!(
                        "{}: `{written}` goes through the crate root; name the module that defines it",
                        path.strip_prefix(workspace()).unwrap().display()
                    ));
                } else if target != *module {
                    edges.insert(target);
                }
            }
        }
        if let Some(cycle) = find_cycle(&graph) {
            failures.push(format!(
                "{}: import circle {}",
                krate.name,
                cycle.iter().map(|m| m.join("::")).collect::<Vec<_>>().join(" -> ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A circle of the graph, if any (depth-first search; a node met again on the stack closes it).
fn find_cycle(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        m: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        stack: &mut Vec<Vec<String>>,
        done: &mut BTreeSet<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        if done.contains(m) {
            return None;
        }
        if let Some(at) = stack.iter().position(|s| s == m) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(m.clone());
            return Some(cycle);
        }
        stack.push(m.clone());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(m.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

/// The check itself: a planted circle is found, and a chain is not one.
#[test]
fn a_circle_is_found_and_a_chain_is_not() {
    let m = |s: &str| vec![s.to_string()];
    let mut graph = BTreeMap::new();
    graph.insert(m("a"), BTreeSet::from([m("b")]));
    graph.insert(m("b"), BTreeSet::from([m("c")]));
    graph.insert(m("c"), BTreeSet::new());
    assert!(find_cycle(&graph).is_none());
    graph.get_mut(&m("c")).unwrap().insert(m("a"));
    assert_eq!(find_cycle(&graph).unwrap().len(), 4);
}
