//! The quick start, followed as a new user would: the files `docs/quickstart.md` shows (each
//! marked `<!-- downstream: PATH -->`) become a crate outside this workspace that depends on
//! `islands` the way the page says; its `cargo test` (the generated proofs) and its example
//! must pass, so the page cannot drift from what works.
//!
//! `islands` is not on crates.io yet: the generated crate takes it (and the workspace's patched
//! crates, `patches/README.md`) from this checkout through `[patch.crates-io]`, builds with
//! this workspace's profiles, lock file and runtime features into the same target directory,
//! and so reuses what the workspace build already compiled.

use island_runtime::runtimes::RuntimeName;
use std::path::{Path, PathBuf};
use std::process::Command;

const PAGE: &str = "docs/quickstart.md";
const MARK: &str = "<!-- downstream: ";

/// The files the page marks, in order: (path, contents).
fn marked_files(page: &str) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    let mut lines = page.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(rest) = line.trim().strip_prefix(MARK) else { continue };
        let path = rest.strip_suffix("-->").map(str::trim).ok_or(format!("{PAGE}:{}: unterminated mark", n + 1))?;
        match lines.next() {
            Some((_, fence)) if fence.starts_with("```") => {}
            _ => return Err(format!("{PAGE}:{}: the mark of `{path}` must be followed by a code block", n + 1)),
        }
        let mut body = String::new();
        loop {
            match lines.next() {
                Some((_, l)) if l.starts_with("```") => break,
                Some((_, l)) => {
                    body.push_str(l);
                    body.push('\n');
                }
                None => return Err(format!("{PAGE}: the code block of `{path}` is not closed")),
            }
        }
        files.push((path.to_string(), body));
    }
    Ok(files)
}

/// The sections of this workspace's manifest the generated crate needs, verbatim except that
/// paths become absolute: `[profile.*]` (it must compile its dependencies exactly as the
/// workspace did, or it rebuilds all of CubeCL) and the entries of `[patch.crates-io]`.
fn workspace_sections(manifest: &str, root: &Path) -> (String, String) {
    let (mut profiles, mut patches) = (String::new(), String::new());
    let mut section = "";
    for line in manifest.lines() {
        if line.starts_with('[') {
            section = if line.starts_with("[profile") {
                "profile"
            } else if line.trim() == "[patch.crates-io]" {
                "patch"
            } else {
                ""
            };
            if section == "patch" {
                continue;
            }
        }
        match section {
            "profile" => profiles.push_str(&format!("{line}\n")),
            "patch" if line.contains("path = \"") => {
                let (head, rest) = line.split_once("path = \"").unwrap();
                let (path, tail) = rest.split_once('"').unwrap();
                patches.push_str(&format!("{head}path = {:?}{tail}\n", root.join(path)));
            }
            _ => {}
        }
    }
    (profiles, patches)
}

fn cargo(dir: &Path, target: &Path, args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(args).current_dir(dir).env("CARGO_TARGET_DIR", target);
    // What cargo set for this test (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, …) must not reach
    // the inner build: build scripts that watch such variables (ring's watches
    // `CARGO_PKG_NAME`) would rerun, and everything above them rebuild.
    for (name, _) in std::env::vars() {
        let set_by_cargo = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_", "CARGO_TARGET_TMPDIR", "CARGO_PRIMARY_PACKAGE", "CARGO_RUSTC_CURRENT_DIR"];
        if set_by_cargo.iter().any(|p| name.starts_with(p)) {
            command.env_remove(name);
        }
    }
    let out = command.output().expect("cargo runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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

    // CARGO_TARGET_TMPDIR is <target>/tmp.
    let target: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().to_path_buf();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("quickstart");
    let _ = std::fs::remove_dir_all(&dir);
    for (path, body) in &files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, body).unwrap();
    }
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let (profiles, patches) = workspace_sections(&workspace, &root);
    manifest.push_str(&format!(
        "\n# Added by the test: not part of the quick start.\n[workspace]\n\n[patch.crates-io]\n\
         islands = {{ path = {:?} }}\n{patches}\n{profiles}",
        root.join("islands"),
    ));
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    // The runtimes this build enabled, so the crate's dependencies are compiled with the same
    // features as the workspace's and nothing is rebuilt.
    let features: Vec<String> = [RuntimeName::Device(island_runtime::Backend::Vulkan), RuntimeName::Device(island_runtime::Backend::Cuda)]
        .into_iter()
        .filter(|r| r.built())
        .map(|r| format!("islands/{r}"))
        .collect();
    let features = format!("--features={}", features.join(","));
    let tests = cargo(&dir, &target, &["test", &features]);
    assert!(
        tests.contains("my_kernels::dot4#0::cuda|vulkan"),
        "the quick-start crate's harness ran no proof of its arm:\n{tests}"
    );
    let run = cargo(&dir, &target, &["run", "--quiet", &features, "--example", "launch"]);
    assert!(run.contains("dot4: -10"), "the quick-start example printed:\n{run}");
}
