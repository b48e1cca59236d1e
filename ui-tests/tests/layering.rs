//! The modules of every crate of the workspace form a hierarchy: no import circles, and in crates
//! built on floors, no module names a floor above its own.
//!
//! Each crate's source files are the nodes, its root (`lib.rs`, `main.rs`) and every `mod.rs`
//! included. A file depends on another when its code names it: `crate::a::b::…`, `super::…`,
//! `self::…`, or a child module by its own name; inline modules (`mod x { … }`, `#[intrinsic]`
//! definitions) count as the file that holds them. The sources are read as Rust tokens, so
//! comments, doc text and strings name nothing, while macro bodies (`island!`, `quote!`,
//! `$crate::…`) do. A path to an item the root defines (`crate::helper()`, an inline module) is an
//! edge to the root, so a child that calls back into its root closes a circle; a path through
//! the root to a name it re-exports (`crate::Target`) would hide the real edge, so it is refused.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// One crate: its module files by module path (`a`, `a::b`; the root is the empty path).
struct Crate {
    name: String,
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// Every name in the root's `use` declarations: what a path through the root may re-export.
    root_uses: BTreeSet<String>,
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
            let root_uses = modules.get(&Vec::new()).map(|root| use_names(root)).unwrap_or_default();
            Crate { name: dir.strip_prefix(workspace()).unwrap().display().to_string(), modules, root_uses }
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

/// The identifiers of every `use` declaration of a file, `use` to `;`, at any depth.
fn use_names(path: &Path) -> BTreeSet<String> {
    fn walk(stream: TokenStream, out: &mut BTreeSet<String>) {
        let mut in_use = false;
        for token in stream {
            match token {
                TokenTree::Ident(id) if id == "use" => in_use = true,
                TokenTree::Ident(id) if in_use => {
                    out.insert(id.to_string());
                }
                TokenTree::Punct(p) if p.as_char() == ';' => in_use = false,
                TokenTree::Group(g) if in_use => walk_all(g.stream(), out),
                TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    fn walk_all(stream: TokenStream, out: &mut BTreeSet<String>) {
        for token in stream {
            match token {
                TokenTree::Ident(id) => {
                    out.insert(id.to_string());
                }
                TokenTree::Group(g) => walk_all(g.stream(), out),
                _ => {}
            }
        }
    }
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = BTreeSet::new();
    walk(TokenStream::from_str(&text).unwrap_or_else(|e| panic!("{}: {e:?}", path.display())), &mut out);
    out
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
                                // Through the root: to a name it re-exports (refused by the
                                // caller), or to an item it defines (an edge to the root).
                                _ if word == "crate" => {
                                    let reexport = tail.first().is_some_and(|s| krate.root_uses.contains(s));
                                    out.push((if reexport { vec![String::new()] } else { Vec::new() }, written))
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
            let edges = graph.entry(module.clone()).or_default();
            for (target, written) in references(krate, module, path) {
                if target == [String::new()] {
                    if module.is_empty() {
                        continue;
                    }
                    failures.push(format!(
                        "{}: `{written}` goes through the crate root to a name it re-exports; name the module that \
                         defines it",
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
        if let Some((_, floors)) = FLOORS.iter().find(|(name, _)| *name == krate.name) {
            failures.extend(floor_violations(floors, &graph).into_iter().map(|v| format!("{}: {v}", krate.name)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Crates built on floors, each floor a top-level module, lowest first. A module may name its own
/// floor and those below, never one above: a launch reads evidence and never reaches the code
/// that produces it.
const FLOORS: &[(&str, &[&str])] =
    &[("island-runtime", &["__private", "values", "hardware", "records", "tag", "codegen", "launch", "verify"])];

/// Every module of `graph` outside a floor (the root aside), and every edge to a higher floor.
fn floor_violations(floors: &[&str], graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let floor = |m: &Vec<String>| m.first().and_then(|f| floors.iter().position(|x| x == f));
    let mut out = Vec::new();
    for (module, edges) in graph {
        if module.is_empty() {
            continue;
        }
        let Some(mine) = floor(module) else {
            out.push(format!("`{}` is on no floor of {floors:?}", module.join("::")));
            continue;
        };
        for target in edges {
            if floor(target).is_some_and(|theirs| theirs > mine) {
                out.push(format!("`{}` names `{}`, a floor above its own", module.join("::"), target.join("::")));
            }
        }
    }
    out
}

/// The floor check itself: an edge down is allowed, an edge up and a module outside every floor
/// are found.
#[test]
fn an_edge_up_a_floor_is_found() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let floors = ["low", "high"];
    let mut graph = BTreeMap::new();
    graph.insert(m("high::a"), BTreeSet::from([m("low::b")]));
    graph.insert(m("low::b"), BTreeSet::new());
    assert!(floor_violations(&floors, &graph).is_empty());
    graph.get_mut(&m("low::b")).unwrap().insert(m("high::a"));
    graph.insert(m("loose"), BTreeSet::new());
    assert_eq!(floor_violations(&floors, &graph).len(), 2, "{:?}", floor_violations(&floors, &graph));
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
