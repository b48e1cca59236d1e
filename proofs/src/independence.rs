//! Checks that no `default` arm, and no function one calls, uses `island_runtime::emulation` or an
//! intrinsic's `emulate`.
//!
//! A proof runs an arm through its emulation against `default` on the CPU. Code the two share
//! cancels out of that comparison, bugs included, so the normative side must be written
//! independently. This scan reads the crate's sources (not the macro's output): every
//! `default => …` body of every `island!`, the functions those bodies call (transitively, as
//! `module::name` resolved to `module.rs` of the crate, or `name` in the calling file), and
//! every file named `portable.rs`. (The portable helpers live in `island-portable`, which
//! depends on CubeCL alone, so the compiler already keeps emulations out of them; and `island!`
//! refuses a `default` that names one.)

use crate::registry_scan::{SourceError, sources};
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The words whose use makes a default depend on an emulation: the runtime's module and an
/// intrinsic's function.
const EMULATION: &str = "emulation";
const EMULATE: &str = "emulate";

/// Every place under `dir` where a `default` (or a function it calls, or a portable helper)
/// uses the emulation module, as `file: what`. Empty when the defaults are independent.
pub fn violations(dir: &Path) -> Result<Vec<String>, SourceError> {
    let files: Vec<(String, TokenStream)> =
        sources(dir)?.into_iter().map(|(path, tokens)| (path.display().to_string(), tokens)).collect();
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

/// Whether `word` appears as an identifier anywhere in `tokens`.
fn mentions(tokens: TokenStream, word: &str) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(id) => id == word || (word == EMULATION && id == EMULATE),
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
                let turbofish =
                    colon(i + 1) && matches!(tokens.get(i + 3), Some(TokenTree::Punct(p)) if p.as_char() == '<');
                if direct || turbofish {
                    let qualifier = match (i >= 3 && colon(i - 1) && colon(i - 2), i.checked_sub(3).map(|j| &tokens[j]))
                    {
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

/// Arms whose emulation and `default` share at least this much of their program
/// ([`island_runtime::lowering::shared_lines`]) are reported: their CPU proof compares nearly a
/// program with itself.
pub const NEAR_IDENTICAL: f64 = 0.9;

/// One trial for `crates`: lists every arm whose emulated program and `default`'s share
/// [`NEAR_IDENTICAL`] or more of their lines, with the share, and fails on any that
/// [`TAUTOLOGICAL`] does not name with the device evidence that backs it instead.
pub fn shared_program_trial(crates: &'static [&'static str]) -> libtest_mimic::Trial {
    libtest_mimic::Trial::test("independence::defaults_are_not_the_emulation_renamed", move || {
        let client = crate::settings::cpu()?;
        let mut report = Vec::new();
        let mut unexplained = Vec::new();
        for &entry in island_runtime::registry::arms() {
            if entry.expect != island_runtime::Expect::Equal || !crates.contains(&entry.krate) {
                continue;
            }
            let island_runtime::lifted::ProofSpec::Lifted(lifted) = &entry.proof else { continue };
            let Some((profile, _)) = island_runtime::proof::distinct_profiles(entry, &client).into_iter().next() else {
                continue;
            };
            let share = island_runtime::lowering::shared_lines(entry, lifted, &profile, &client)?;
            if share < NEAR_IDENTICAL {
                continue;
            }
            let same = share >= 1.0
                && island_runtime::lowering::same_program(
                    lifted,
                    island_runtime::Target::forced(profile, &client).only(entry.site.id),
                    island_runtime::Target::default_arms(&client),
                    &client,
                )?;
            match TAUTOLOGICAL.iter().find(|(name, _)| *name == entry.name()) {
                Some((_, evidence)) => {
                    report.push(format!("{} shares {:.0} % ({evidence})", entry.name(), share * 100.0))
                }
                // Its proof already says so: "device evidence only", never proven.
                None if same => {
                    report.push(format!("{}: the same program; its proof reports device evidence only", entry.name()))
                }
                None => unexplained.push(format!(
                    "{} shares {:.0} % of its program with its emulation",
                    entry.name(),
                    share * 100.0
                )),
            }
        }
        println!("CPU proofs of nearly the same programs, and their device evidence:\n  {}", report.join("\n  "));
        if unexplained.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "these defaults are nearly their arm's emulation, so the CPU proof shows little; write the default \
                 another way or name the device evidence that backs the arm in independence::TAUTOLOGICAL:\n  {}",
                unexplained.join("\n  ")
            )
            .into())
        }
    })
    .with_kind("registry")
}

/// Arms whose CPU proof is (nearly) tautological, with the device evidence that backs them. A
/// lane exchange can only be emulated on the CPU through shared memory, which is also how its
/// portable `default` exchanges: the two programs differ in how the source lane is computed.
pub const TAUTOLOGICAL: &[(&str, &str)] = &[
    (
        "island_intrinsics::plane::broadcast_w32#0::cuda|vulkan",
        "a shared-memory exchange on both sides; device evidence: native against emulation byte-equal on the H200 \
         under CUDA and NVIDIA's Vulkan driver (docs/results/h200/2026-12-01-policy/)",
    ),
    (
        "island_intrinsics::plane::broadcast_w8#0::vulkan",
        "a shared-memory exchange on both sides; device evidence: native against emulation byte-equal on lavapipe, \
         in every CI run (conformance::vulkan)",
    ),
];

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
        // An intrinsic's emulation, called through a helper.
        let through_helper = "fn f() { island! { cuda => a(), default => lib::helper(a, b, c) } }
                              fn helper(a: i32, b: i32, c: i32) -> i32 { dp4a::emulate(a, b, c) }";
        assert_eq!(scan(through_helper).len(), 1, "{:?}", scan(through_helper));
        let arm_only =
            "fn f() { island! { cuda => emulation::gather(v, 8), default => tree(v) } } fn tree(v: f32) { v }";
        assert!(scan(arm_only).is_empty());
    }
}
