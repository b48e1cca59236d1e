//! The quick start, followed as a new user would: the files `docs/quickstart.md` shows (each
//! marked `<!-- downstream: PATH -->`) become a crate `my-kernels` in a new directory outside
//! this workspace, beside a directory `islands` that is this checkout, exactly as the page lays
//! them out. Nothing else is added: no profile, lock file, patch or feature the page does not
//! show; the crate resolves its own dependencies and builds in its own target directory. Its
//! `cargo test` (the generated proofs) and its example must pass, so the page cannot drift from
//! what works, and the test prints how long the newcomer's build and proofs took.

use std::path::Path;
use std::process::Command;

const PAGE: &str = "docs/quickstart.md";
const MARK: &str = "<!-- downstream: ";

/// Why the page's marked files cannot be read.
#[derive(Debug)]
enum PageError {
    Unterminated(usize),
    NoBlock(usize, String),
    Unclosed(String),
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::Unterminated(line) => write!(f, "{PAGE}:{line}: unterminated mark"),
            PageError::NoBlock(line, path) => {
                write!(f, "{PAGE}:{line}: the mark of `{path}` must be followed by a code block")
            }
            PageError::Unclosed(path) => write!(f, "{PAGE}: the code block of `{path}` is not closed"),
        }
    }
}

/// The files the page marks, in order: (path, contents).
fn marked_files(page: &str) -> Result<Vec<(String, String)>, PageError> {
    let mut files = Vec::new();
    let mut lines = page.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(rest) = line.trim().strip_prefix(MARK) else { continue };
        let path = rest.strip_suffix("-->").map(str::trim).ok_or(PageError::Unterminated(n + 1))?;
        match lines.next() {
            Some((_, fence)) if fence.starts_with("```") => {}
            _ => return Err(PageError::NoBlock(n + 1, path.to_string())),
        }
        let mut body = String::new();
        loop {
            match lines.next() {
                Some((_, l)) if l.starts_with("```") => break,
                Some((_, l)) => {
                    body.push_str(l);
                    body.push('\n');
                }
                None => return Err(PageError::Unclosed(path.to_string())),
            }
        }
        files.push((path.to_string(), body));
    }
    Ok(files)
}

fn cargo(dir: &Path, args: &[&str]) -> String {
    cargo_with(dir, args, &[])
}

/// `cargo args…` in `dir` with `env` set, its output (stdout, then stderr); it must succeed.
fn cargo_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(args).current_dir(dir).envs(env.iter().copied());
    // What cargo set for this test (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, the target
    // directory, …) must not reach the newcomer's build: it is a build of its own.
    for (name, _) in std::env::vars() {
        let set_by_cargo = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_TARGET_",
            "CARGO_BUILD_TARGET_DIR",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_RUSTC_CURRENT_DIR",
        ];
        if set_by_cargo.iter().any(|p| name.starts_with(p)) {
            command.env_remove(name);
        }
    }
    let out = command.output().expect("cargo runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "`cargo {}` in the quick-start crate failed:\n{text}", args.join(" "));
    text
}

#[test]
fn quickstart_crate_builds_and_proves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let page = std::fs::read_to_string(root.join(PAGE)).unwrap();
    let files = marked_files(&page).unwrap();
    for needed in ["Cargo.toml", "src/lib.rs", "tests/islands.rs"] {
        assert!(files.iter().any(|(p, _)| p == needed), "{PAGE} marks no `{needed}`");
    }

    // The page's layout, outside this workspace (cargo would take a crate inside it for a
    // member): `work/islands` is this checkout, `work/my-kernels` the new crate. The crate's own
    // target directory is kept between runs here; CI's machine starts without it, cold.
    let work = std::env::temp_dir().join("islands-quickstart");
    std::fs::create_dir_all(&work).unwrap();
    let checkout = work.join("islands");
    let _ = std::fs::remove_file(&checkout);
    std::os::unix::fs::symlink(&root, &checkout).unwrap();
    let dir = work.join("my-kernels");
    for sub in ["src", "tests", "examples", "Cargo.toml", "Cargo.lock"] {
        let path = dir.join(sub);
        let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
    }
    for (path, body) in &files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, body).unwrap();
    }

    let start = std::time::Instant::now();
    let tests = cargo(&dir, &["test"]);
    let took = start.elapsed();
    assert!(
        tests.contains("my_kernels::dot4#0::cuda|vulkan"),
        "the quick-start crate's harness ran no proof of its arm:\n{tests}"
    );
    let run = cargo(&dir, &["run", "--quiet", "--example", "launch"]);
    assert!(run.contains("dot4: -10"), "the quick-start example printed:\n{run}");
    // A setting that is wrong is said on the first launch of a user's program, which then runs
    // `default` everywhere (the right bytes, never a silent fallback).
    let bad_json = work.join("not-a-ledger.json");
    std::fs::write(&bad_json, "{ not json").unwrap();
    let bad_json = bad_json.to_string_lossy().into_owned();
    for (name, value, says) in [
        ("ISLANDS_POLICY", "strcit", "ISLANDS_POLICY=`strcit`"),
        ("ISLANDS_LEDGER", "/nonexistent/ledger.json", "/nonexistent/ledger.json"),
        ("ISLANDS_LEDGER", bad_json.as_str(), "not-a-ledger.json"),
    ] {
        let run = cargo_with(&dir, &["run", "--quiet", "--example", "launch"], &[(name, value)]);
        assert!(
            run.contains("dot4: -10") && run.contains(says) && run.contains("takes `default`"),
            "{name}={value}: the example must compute with `default` and say why on its first launch:\n{run}"
        );
    }
    eprintln!(
        "quick start: `cargo test` of the page's crate (its build and its proofs) took {:.0} s",
        took.as_secs_f64()
    );
}
