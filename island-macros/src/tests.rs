//! Unit tests of the macros without a compiler run: parsing and validation of `island!`, the
//! options of `#[islands]` and `#[intrinsic]`, the agreement of every keyword list with the
//! vocabulary, and snapshots of what `#[islands]` expands to. (ui-tests pins how the compiler
//! renders each error at its span.)

use crate::ast::{Island, Pattern};
use island_vocab::{Atom, Backend, CAPABILITIES, Capability, Cmp, Elem, Expect, Mma};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

fn parse(tokens: TokenStream) -> syn::Result<Island> {
    crate::parse::island(Span::call_site(), tokens)
}

fn parse_err(tokens: TokenStream) -> String {
    match parse(tokens) {
        Ok(_) => panic!("parsed, but an error was expected"),
        Err(e) => e.to_string(),
    }
}

/// The messages `validate` reports for an island that parses.
fn problems(tokens: TokenStream) -> Vec<String> {
    let island = parse(tokens).expect("the island parses");
    let mut errors = Vec::new();
    crate::validate::island(&island, &mut errors);
    errors.iter().map(|e| e.to_string()).collect()
}

fn one_problem(tokens: TokenStream) -> String {
    let p = problems(tokens);
    assert_eq!(p.len(), 1, "expected one problem, got {p:?}");
    p.into_iter().next().unwrap()
}

fn guard_of(guard: TokenStream) -> Vec<Atom> {
    let island = parse(quote!(cuda if #guard => 1, default => 0)).expect("the guard parses");
    island.arms[0].guard.clone()
}

// ---- the vocabulary: every list the macros parse comes from island-vocab ----

#[test]
fn every_backend_keyword_is_an_arm_pattern() {
    for backend in Backend::ALL {
        let kw = syn::Ident::new(backend.keyword(), Span::call_site());
        let island = parse(quote!(#kw => 1, default => 0)).unwrap();
        match &island.arms[0].pattern {
            Pattern::Backends(keys) => assert_eq!(keys[0].backend, backend),
            Pattern::Default(_) => panic!("{backend} parsed as default"),
        }
        assert!(problems(quote!(#kw => 1, default => 0)).is_empty());
    }
    let all = quote!(cuda | hip | vulkan | metal | webgpu => 1, default => 0);
    let Pattern::Backends(keys) = &parse(all).unwrap().arms[0].pattern else { panic!() };
    assert_eq!(keys.iter().map(|k| k.backend).collect::<Vec<_>>(), Backend::ALL);
}

#[test]
fn the_unknown_backend_error_lists_every_backend() {
    let message = parse_err(quote!(opencl => 1, default => 0));
    assert!(message.starts_with("unknown backend `opencl`"), "{message}");
    for backend in Backend::ALL {
        assert!(message.contains(backend.keyword()), "{message} lacks {backend}");
    }
}

#[test]
fn a_cpu_arm_says_the_cpu_runs_default() {
    let message = parse_err(quote!(cpu => 1, default => 0));
    assert!(message.contains("the CPU runtime always runs `default`"), "{message}");
}

#[test]
fn every_capability_parses_and_prints_as_written() {
    for capability in CAPABILITIES {
        let atom = match capability {
            Capability::Sm => guard_of(quote!(sm >= 61)),
            Capability::Plane => guard_of(quote!(plane == 32)),
            Capability::Dp4a => guard_of(quote!(dp4a)),
            Capability::Cmma => guard_of(quote!(cmma(i8, i8, i32, 16, 16, 16))),
        };
        assert_eq!(atom.len(), 1);
        assert_eq!(atom[0].capability(), capability);
    }
    assert_eq!(guard_of(quote!(sm >= 61 && dp4a)), vec![Atom::Sm(Cmp::Ge, 61), Atom::Dp4a]);
    let message = parse_err(quote!(cuda if tensor_cores => 1, default => 0));
    for capability in CAPABILITIES {
        assert!(message.contains(capability.syntax()), "{message} lacks {}", capability.syntax());
    }
}

#[test]
fn every_comparison_parses() {
    let cases: Vec<(TokenStream, Cmp)> = vec![
        (quote!(==), Cmp::Eq),
        (quote!(!=), Cmp::Ne),
        (quote!(<), Cmp::Lt),
        (quote!(<=), Cmp::Le),
        (quote!(>), Cmp::Gt),
        (quote!(>=), Cmp::Ge),
    ];
    assert_eq!(cases.len(), Cmp::ALL.len());
    for (op, cmp) in cases {
        assert_eq!(guard_of(quote!(plane #op 32)), vec![Atom::Plane(cmp, 32)], "{}", cmp.symbol());
    }
}

#[test]
fn every_element_kind_parses_in_a_tile_shape() {
    for e in Elem::ALL {
        let kw = syn::Ident::new(e.keyword(), Span::call_site());
        assert_eq!(
            guard_of(quote!(cmma(#kw, #kw, f32, 16, 8, 32))),
            vec![Atom::Cmma(Mma::new(e, e, Elem::F32, 16, 8, 32))]
        );
    }
    let message = parse_err(quote!(cuda if cmma(f8, f8, f32, 16, 16, 16) => 1, default => 0));
    for e in Elem::ALL {
        assert!(message.contains(e.keyword()), "{message} lacks {}", e.keyword());
    }
}

#[test]
fn every_expectation_has_its_option() {
    for expect in Expect::ALL {
        let Some(option) = expect.option() else { continue };
        let word = syn::Ident::new(option, Span::call_site());
        match syn::parse2::<crate::parse::TagOption>(quote!(#word)) {
            Ok(crate::parse::TagOption::Expect(e)) => assert_eq!(e, expect),
            _ => panic!("`{option}` is not parsed"),
        }
    }
    let message = match syn::parse2::<crate::parse::TagOption>(quote!(expect_failure)) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("an unknown option parsed"),
    };
    for option in Expect::ALL.iter().filter_map(|e| e.option()) {
        assert!(message.contains(option), "{message} lacks {option}");
    }
}

#[test]
fn generated_atoms_name_the_vocabulary() {
    let text = |a: Atom| crate::expand::atom(&a).to_string().replace(' ', "");
    assert_eq!(text(Atom::Sm(Cmp::Ge, 61)), "::island_runtime::Atom::Sm(::island_runtime::Cmp::Ge,61u32)");
    assert_eq!(text(Atom::Dp4a), "::island_runtime::Atom::Dp4a");
    let tile = text(Atom::Cmma(Mma::new(Elem::BF16, Elem::BF16, Elem::F32, 16, 16, 16)));
    assert!(tile.contains("Elem::BF16") && tile.contains("acc:::island_runtime::Elem::F32"), "{tile}");
}

// ---- parse errors ----

#[test]
fn parse_errors_name_the_mistake() {
    let cases: Vec<(TokenStream, &str)> = vec![
        (quote!(default | cuda => 1), "`default` cannot be combined with backends"),
        (quote!(cuda | default => 1), "`default` cannot be combined with backends"),
        (quote!(cuda 1, default => 0), "expected `=>` after the arm's backends"),
        (quote!(cuda => 1 default => 0), "expected `,` between island arms"),
        (quote!(42 => 1), "expected a backend (cuda, hip, vulkan, metal, webgpu) or `default`"),
        (quote!(cuda if plane == 32 || plane == 64 => 1, default => 0), "guards are conjunctions"),
        (quote!(cuda if plane 32 => 1, default => 0), "`plane` needs a comparison, e.g. `plane == N`"),
        (quote!(cuda if sm 61 => 1, default => 0), "`sm` needs a comparison, e.g. `sm >= N`"),
        (quote!(cuda if dp4a == 1 => 1, default => 0), "`dp4a` is a flag and takes no comparison"),
        (quote!(cuda if cmma(i8, i8, i32, 16, 16) => 1, default => 0), "needs three dimensions"),
        (quote!(proof(x: i32) -> i32 cuda => 1, default => 0), "expected `;` after the proof signature"),
        (quote!(proof(x: i32) -> i32, cube_dim = 0; default => 0), "cube_dim must be between 1 and 1024"),
        (quote!(proof(x: i32) -> i32, cube_dim = 2048; default => 0), "cube_dim must be between 1 and 1024"),
        (quote!(proof(x: i32) -> i32, warps = 2; default => 0), "unknown proof option `warps`"),
        (
            quote!(proof(x: &[i32; 0]) -> i32; default => 0),
            "a per-cube input holds at least one value: its length is 0",
        ),
        (quote!(proof(x: &i32) -> i32; default => 0), "a proof input is a scalar"),
        (quote!(proof(x: f32) -> f32, contract = ulps(1, "r"); default => 0), "unknown contract `ulps`"),
        (
            quote!(proof(x: f32) -> f32, contract = ulp(1, " "); default => 0),
            "a non-exact contract must give its reason",
        ),
        (
            quote!(proof(x: f32) -> f32, contract = ulp(1, "r", exact = p); default => 0),
            "unknown contract option `exact`",
        ),
    ];
    for (tokens, want) in cases {
        let text = tokens.to_string();
        let got = parse_err(tokens);
        assert!(got.contains(want), "`{text}`: got `{got}`, want `{want}`");
    }
}

#[test]
fn well_formed_proof_signatures_parse() {
    let island = parse(quote! {
        proof(x: f32, t: &[i8; 256], acc: &mut [i32; 256], stride: u32 = 4u32) -> f32,
            cube_dim = 128, lanes = 4096, contract = accumulation(16, "tensor cores", exact_where = crate::m);
        cuda => x,
        default => x,
    })
    .unwrap();
    let sig = island.proof.expect("a signature");
    assert_eq!(sig.params.len(), 4);
    assert_eq!(sig.cube_dim.map(|c| c.0.to_token_stream().to_string()).as_deref(), Some("128"));
    assert_eq!(sig.lanes, Some(4096));
    assert!(matches!(
        sig.contract,
        Some(crate::ast::ContractSpec::Accumulation { terms: 16, exact_where: Some(_), .. })
    ));
}

// ---- validation: every problem of one island is reported ----

#[test]
fn validation_names_each_problem() {
    let cases: Vec<(TokenStream, &str)> = vec![
        (quote!(cuda => 1), "island! requires a `default => …` arm"),
        (quote!(cuda => 1, default => 0, default => 2), "island! has a second `default` arm"),
        (quote!(default => 0, cuda => 1), "this arm is unreachable: it comes after `default`"),
        (quote!(cuda => 1, cuda | vulkan => 2, default => 0), "backend `cuda` already has an arm"),
        (quote!(cuda if dp4a => 1, cuda if dp4a => 2, default => 0), "already has an arm with the guard `dp4a`"),
        (quote!(cuda | cuda => 1, default => 0), "backend `cuda` is listed twice in this arm"),
        (quote!(default if dp4a => 0), "`default` cannot have a guard"),
        (quote!(proof(x: i32, x: i32) -> i32; default => 0), "proof input `x` is declared twice"),
        (quote!(proof(x: i32); default => 0), "a proof signature needs something to compare"),
        (quote!(), "empty island: write at least its `default => …` arm"),
        (
            quote!(proof(x: &mut [i32; 4]), dont_care = x[0] == 0; default => 0),
            "`dont_care` names lanes of the island's value",
        ),
    ];
    for (tokens, want) in cases {
        let text = tokens.to_string();
        let got = problems(tokens);
        assert!(got.iter().any(|g| g.contains(want)), "`{text}`: got {got:?}, want `{want}`");
    }
    // An arm shadowed by an earlier unguarded arm of each of its backends.
    let shadowed = one_problem(quote!(cuda => 1, vulkan => 2, cuda | vulkan if dp4a => 3, default => 0));
    assert!(shadowed.contains("an earlier arm without a guard already takes `cuda | vulkan`"), "{shadowed}");
    // A guarded arm before an unguarded one of the same backend is fine.
    assert!(problems(quote!(cuda if dp4a => 1, cuda => 2, default => 0)).is_empty());
}

#[test]
fn all_validation_problems_of_one_island_are_reported_together() {
    let got = problems(quote!(default if dp4a => 0, cuda | cuda => 1, default => 2));
    assert_eq!(got.len(), 4, "{got:?}");
}

// ---- #[islands] options and #[intrinsic] arguments ----

#[test]
fn islands_options_errors() {
    let out = crate::kernel::expand(
        quote!(tag = t, strict),
        quote!(
            #[cube]
            fn f() {}
        ),
    )
    .to_string();
    assert!(out.contains("unknown #[islands] option `strict`"), "{out}");
    let out = crate::kernel::expand(
        TokenStream::new(),
        quote!(
            fn f() {
                let x = island! { default => 0 };
            }
        ),
    )
    .to_string();
    assert!(out.contains("#[islands] must be placed above #[cube]"), "{out}");
    let out = crate::kernel::expand(
        quote!(tag = t),
        quote!(
            #[cube]
            fn f(#[comptime] target: Target) {}
        ),
    )
    .to_string();
    assert!(out.contains("`tag = t` names no parameter of this function"), "{out}");
}

fn intrinsic_error(attr: TokenStream, module: TokenStream) -> String {
    crate::intrinsic::expand(attr, module).to_string()
}

#[test]
fn intrinsic_errors() {
    let ok_module = quote!(
        mod m {
            #[cube]
            pub fn cuda(a: u32) -> u32 {
                a
            }
            #[cube]
            pub fn emulate(a: u32) -> u32 {
                a
            }
        }
    );
    let cases: Vec<(TokenStream, TokenStream, &str)> = vec![
        (
            quote!(summary = "s", check = c, lowerings(cuda => "x")),
            ok_module.clone(),
            "#[intrinsic] needs `name = \\\"…\\\"`",
        ),
        (
            quote!(name = "n", check = c, lowerings(cuda => "x")),
            ok_module.clone(),
            "#[intrinsic] needs `summary = \\\"…\\\"`",
        ),
        (
            quote!(name = "n", summary = "s", lowerings(cuda => "x")),
            ok_module.clone(),
            "#[intrinsic] needs `check = path::to::check_function`",
        ),
        (
            quote!(name = "n", summary = "s", check = c, speed = 1),
            ok_module.clone(),
            "unknown intrinsic option `speed`",
        ),
        (
            quote!(name = "n", summary = "s", check = c, lowerings(opencl => "x")),
            ok_module.clone(),
            "unknown backend `opencl`",
        ),
        (
            quote!(name = "n", summary = "s", check = c, lowerings(cuda => "x")),
            quote!(
                mod m;
            ),
            "#[intrinsic] needs an inline module",
        ),
        (
            quote!(name = "n", summary = "s", check = c, lowerings(cuda => "x")),
            quote!(
                mod m {
                    #[cube]
                    pub fn cuda(a: u32) -> u32 {
                        a
                    }
                }
            ),
            "intrinsic `n` has no emulation",
        ),
        (
            quote!(name = "n", summary = "s", check = c, lowerings(cuda => "x", vulkan => "y")),
            ok_module.clone(),
            "declares a `vulkan` lowering but its module has neither `fn vulkan(…)` nor `fn native(…)`",
        ),
        (
            quote!(name = "n", summary = "s", check = c, lowerings()),
            ok_module.clone(),
            "`fn cuda` is not declared in `lowerings(…)`",
        ),
        (
            quote!(name = "n", summary = "s", check = c, lowerings(cuda => "x")),
            quote!(
                mod m {
                    #[cube]
                    pub fn cuda(a: u32) -> u32 {
                        a
                    }
                    #[cube]
                    pub fn native(a: u32) -> u32 {
                        a
                    }
                    #[cube]
                    pub fn emulate(a: u32) -> u32 {
                        a
                    }
                }
            ),
            "`fn native` serves no backend",
        ),
        (
            quote!(name = "n", summary = "s", check = c, lowerings(cuda => "x")),
            quote!(
                mod m {
                    #[cube]
                    pub fn cuda(a: u32, b: u32) -> u32 {
                        a
                    }
                    #[cube]
                    pub fn emulate(a: u32) -> u32 {
                        a
                    }
                }
            ),
            "parameter `b` of `fn cuda` is not a parameter of `emulate`",
        ),
        (
            quote!(name = "n", summary = "s", check = c, lowerings(cuda => "x")),
            quote!(
                mod m {
                    #[cube]
                    pub fn cuda(a: u32) -> u32 {
                        a
                    }
                    #[cube]
                    pub fn emulate((a, b): (u32, u32)) -> u32 {
                        a
                    }
                }
            ),
            "intrinsic parameters must be plain names",
        ),
    ];
    for (attr, module, want) in cases {
        let got = intrinsic_error(attr, module);
        assert!(got.contains(want), "got `{got}`, want `{want}`");
    }
}

#[test]
fn an_intrinsic_dispatches_each_backend_to_its_function() {
    let out = intrinsic_error(
        quote!(name = "n", summary = "s", check = [checks::a, checks::b], lowerings(cuda => "x", vulkan if dp4a => "y", vulkan => "z")),
        quote!(mod m {
            #[cube] pub fn cuda(a: u32) -> u32 { a }
            #[cube] pub fn native(a: u32) -> u32 { a }
            #[cube] pub fn emulate(a: u32, #[comptime] tag: Target) -> u32 { a }
        }),
    )
    .replace(' ', "");
    assert!(out.contains("tag.native_on(::island_runtime::Backend::Cuda)"), "{out}");
    assert!(out.contains("));cuda(a)}"), "{out}");
    assert!(out.contains("));native(a)}"), "{out}");
    // Each native branch records its use, with the class (none declared: device-defined).
    assert!(
        out.contains(
            "comptime!(::island_runtime::semantics::note_native(\"n\",::island_runtime::Semantics::DeviceDefined("
        ),
        "{out}"
    );
    // The emulation takes the tag itself, so `call` does not add another.
    assert!(out.contains("pubfncall(a:u32,#[comptime]tag:Target)->u32"), "{out}");
    assert!(out.contains("emulate(a,tag)"), "{out}");
    assert!(out.contains("check:&[checks::__ISLANDS_SITES_A,checks::__ISLANDS_SITES_B]"), "{out}");
    assert!(out.contains("requires:::island_runtime::Guard(&[::island_runtime::Atom::Dp4a])"), "{out}");
    // Vulkan appears in two rows and once in the dispatch.
    assert_eq!(out.matches("Backend::Vulkan)").count(), 1, "{out}");
}

// ---- expansion snapshots ----

/// Compares `text` with the committed snapshot `src/snapshots/<name>.expanded`; with
/// `ISLANDS_BLESS=1`, writes it instead (review the diff). Another value than `0` or `1` fails.
fn assert_snapshot(name: &str, text: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/snapshots").join(format!("{name}.expanded"));
    if island_vocab::settings::bless().unwrap_or_else(|e| panic!("{e}")) {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; write it with ISLANDS_BLESS=1 and review it", path.display()));
    if want != text {
        let line = want
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(text.lines().count()));
        panic!(
            "the expansion differs from {} from line {}:\n  committed: {:?}\n  now:       {:?}\n(ISLANDS_BLESS=1 rewrites it; review the diff)",
            path.display(),
            line + 1,
            want.lines().nth(line).unwrap_or("<end>"),
            text.lines().nth(line).unwrap_or("<end>")
        );
    }
}

/// What `#[islands]` turns `item` into, formatted.
fn expansion(attr: TokenStream, item: TokenStream) -> String {
    let tokens = crate::kernel::expand(attr, item);
    let file: syn::File = syn::parse2(tokens).expect("the expansion is valid Rust");
    prettyplease::unparse(&file)
}

#[test]
fn snapshot_expression_island() {
    assert_snapshot(
        "expression_island",
        &expansion(
            TokenStream::new(),
            quote! {
                #[cube(launch)]
                fn dot(a: &[i32], b: &[i32], out: &mut [i32]) {
                    let (x, y) = (a[ABSOLUTE_POS], b[ABSOLUTE_POS]);
                    out[ABSOLUTE_POS] = island! {
                        proof(x: i32, y: i32) -> i32;
                        cuda | vulkan if dp4a => dp4a::call(x, y, 0i32, target),
                        default => portable::dot4_i8(x, y, 0i32),
                    };
                }
            },
        ),
    );
}

#[test]
fn snapshot_statement_island() {
    assert_snapshot(
        "statement_island",
        &expansion(
            TokenStream::new(),
            quote! {
                #[cube(launch)]
                fn scale(out: &mut [f32]) {
                    island! {
                        cuda if sm >= 80 => { out[ABSOLUTE_POS] *= 2.0; },
                        default => { out[ABSOLUTE_POS] = out[ABSOLUTE_POS] + out[ABSOLUTE_POS]; },
                    }
                }
            },
        ),
    );
}

#[test]
fn snapshot_helper_island() {
    assert_snapshot(
        "helper_island",
        &expansion(
            TokenStream::new(),
            quote! {
                #[cube]
                pub fn row_sum(value: f32, #[comptime] target: Target) -> f32 {
                    island! {
                        proof(value: f32) -> f32, cube_dim = 64;
                        cuda | hip | vulkan | metal | webgpu if plane == 32 => plane::sum::call::<f32>(value, target),
                        default => portable::tree_sum::<f32>(value, 32u32),
                    }
                }
            },
        ),
    );
}
