//! Every error message the macros can produce is pinned: the text of each message (its longest
//! literal fragment, for a formatted one) appears in a trybuild `.stderr` under `tests/ui`, and
//! in the table of `docs/errors.md`. Messages are found by reading island-macros' sources: the
//! string given to each `syn::Error::new`, `Error::new_spanned`, `.error(…)` and `missing(…)`.

use std::path::{Path, PathBuf};
use syn::visit_mut::VisitMut;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The message text of one call: its first argument that is a string or a `format!`.
fn message_of<'a>(args: impl Iterator<Item = &'a syn::Expr>) -> Option<String> {
    for arg in args {
        match arg {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => return Some(s.value()),
            syn::Expr::Macro(m) if m.mac.path.is_ident("format") => {
                let first = m.mac.tokens.clone().into_iter().next()?;
                let lit: syn::LitStr = syn::parse2(first.into()).ok()?;
                return Some(lit.value());
            }
            _ => {}
        }
    }
    None
}

#[derive(Default)]
struct Messages(Vec<String>);

impl VisitMut for Messages {
    fn visit_expr_call_mut(&mut self, call: &mut syn::ExprCall) {
        if let syn::Expr::Path(p) = &*call.func {
            let segments: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            let named = |a: &str, b: &str| {
                segments.len() >= 2 && segments[segments.len() - 2] == a && segments[segments.len() - 1] == b
            };
            if (named("Error", "new") || named("Error", "new_spanned") || segments == ["missing"])
                && let Some(m) = message_of(call.args.iter())
            {
                self.0.push(m);
            }
        }
        syn::visit_mut::visit_expr_call_mut(self, call);
    }

    fn visit_expr_method_call_mut(&mut self, call: &mut syn::ExprMethodCall) {
        if call.method == "error"
            && let Some(m) = message_of(call.args.iter())
        {
            self.0.push(m);
        }
        syn::visit_mut::visit_expr_method_call_mut(self, call);
    }
}

/// The longest piece of a format string between its `{…}` placeholders, whitespace collapsed.
fn fragment(message: &str) -> String {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut depth = 0;
    for c in message.chars() {
        match c {
            '{' => {
                depth += 1;
                pieces.push(std::mem::take(&mut current));
            }
            '}' if depth > 0 => depth -= 1,
            _ if depth == 0 => current.push(c),
            _ => {}
        }
    }
    pieces.push(current);
    let longest = pieces.into_iter().max_by_key(|p| p.trim().len()).unwrap_or_default();
    collapse(&longest)
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn read_all(dir: &Path, ext: &str, out: &mut String) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_all(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push_str(&std::fs::read_to_string(&path).unwrap());
            out.push('\n');
        }
    }
}

#[test]
fn every_macro_error_message_is_pinned_and_listed() {
    let sources = root().join("island-macros/src");
    let mut found = Messages::default();
    for entry in std::fs::read_dir(&sources).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") || path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let mut file = syn::parse_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
        found.visit_file_mut(&mut file);
    }
    let mut messages: Vec<String> = found.0.iter().map(|m| fragment(m)).collect();
    messages.sort();
    messages.dedup();
    assert!(messages.len() >= 40, "too few messages found: {messages:#?}");

    let mut pinned = String::new();
    read_all(&root().join("ui-tests/tests/ui"), "stderr", &mut pinned);
    let pinned = collapse(&pinned);
    let table = collapse(&std::fs::read_to_string(root().join("docs/errors.md")).unwrap().replace("\\|", "|"));
    let unpinned: Vec<&String> = messages.iter().filter(|m| !pinned.contains(m.as_str())).collect();
    let unlisted: Vec<&String> = messages.iter().filter(|m| !table.contains(m.as_str())).collect();
    assert!(unpinned.is_empty(), "messages no ui-test .stderr shows: {unpinned:#?}");
    assert!(unlisted.is_empty(), "messages docs/errors.md does not list: {unlisted:#?}");
}

/// Every path `docs/design.md`'s map names exists.
#[test]
fn the_design_map_names_files_that_exist() {
    let design = std::fs::read_to_string(root().join("docs/design.md")).unwrap();
    let start = design.find("## Map").expect("docs/design.md has a map");
    let end = design[start..].find("\n## 1.").map_or(design.len(), |e| start + e);
    let mut named = std::collections::BTreeSet::new();
    for cell in design[start..end].split('`').skip(1).step_by(2) {
        if cell.contains('/') {
            assert!(root().join(cell).exists(), "docs/design.md's map names `{cell}`, which does not exist");
            named.insert(cell.to_string());
        }
    }
    assert!(named.len() > 30, "the map names only {} files", named.len());
    // The other way: every source file of the workspace's crates (their `src/`, the proofs
    // harness's and ui-tests' test targets) is in the map; crate roots (`lib.rs`) are their crates.
    let mut sources = Vec::new();
    for dir in std::fs::read_dir(root()).unwrap().chain(std::fs::read_dir(root().join("examples")).unwrap()) {
        let dir = dir.unwrap().path();
        if dir.join("Cargo.toml").exists() && !dir.starts_with(root().join("patches")) {
            rust_files(&dir.join("src"), true, &mut sources);
        }
    }
    rust_files(&root().join("proofs/tests"), false, &mut sources);
    rust_files(&root().join("ui-tests/tests"), false, &mut sources);
    let unnamed: Vec<String> = sources
        .iter()
        .map(|p| p.strip_prefix(root()).unwrap().to_string_lossy().into_owned())
        .filter(|p| !p.ends_with("/lib.rs") && !named.contains(p))
        .collect();
    assert!(unnamed.is_empty(), "docs/design.md's map does not name these source files: {unnamed:?}");
}

/// The Rust code blocks of the docs are compiled: either the quick-start crate's own code (built
/// by `tests/quickstart.rs`) or, when a block's first line names a file (`// examples/…/lib.rs`),
/// an excerpt of that file, line for line and in order, so that the docs cannot drift from code
/// the workspace builds. No block is marked `ignore`.
#[test]
fn the_docs_code_blocks_are_compiled_code() {
    let mut checked = 0;
    let mut docs: Vec<std::path::PathBuf> = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let fence = line.trim_start();
            if !fence.starts_with("```rust") {
                continue;
            }
            assert_eq!(fence, "```rust", "{name}: a code block marked `{fence}`; compile it or name the file it shows");
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim_start() != "```").collect();
            let Some(source) = block.first().and_then(|l| l.strip_prefix("// ")).map(|l| l.split(':').next().unwrap())
            else {
                continue;
            };
            let path = root().join(source);
            if !source.contains('/') || !path.exists() {
                continue;
            }
            let file = std::fs::read_to_string(&path).unwrap();
            let mut rest = file.lines();
            for shown in block[1..].iter().filter(|l| !l.trim().is_empty()) {
                assert!(
                    rest.any(|l| l == *shown),
                    "{name}: the excerpt of `{source}` shows a line the file does not hold (in this order): {shown:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "only {checked} excerpts were checked");
}

/// The `.rs` files in `dir` (and below it, with `deep`).
fn rust_files(dir: &std::path::Path, deep: bool, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() && deep {
            rust_files(&path, deep, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
