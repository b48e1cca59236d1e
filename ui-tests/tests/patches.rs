//! The patched crates the workspace builds are exactly the published crates plus the diffs under
//! `patches/`: `scripts/patched-crates.sh --check` derives each again (the `.crate` checked
//! against the SHA-256 its diff names, then the diff applied with no fuzz) and compares it with
//! the `patches/NAME/` that `scripts/setup.sh` laid out. It fails when a diff no longer applies,
//! when a laid-out crate was edited without its diff, or when one is missing.

use std::path::Path;
use std::process::Command;

#[test]
fn patched_crates_are_published_crates_plus_their_diffs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new("bash")
        .arg("scripts/patched-crates.sh")
        .arg("--check")
        .current_dir(root)
        .output()
        .expect("bash runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "scripts/patched-crates.sh --check failed:\n{text}");
}
