//! The macros' errors, pinned: one compile-fail case per error with its `.stderr`. With only
//! compile-fail cases trybuild type-checks (`cargo check`), so CubeCL is never code-generated or
//! linked a second time; the compile-pass cases are `tests/pass.rs`.
//!
//! Regenerate snapshots with `TRYBUILD=overwrite cargo test -p ui-tests`, then review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.compile_fail("tests/ui/intrinsic/*.rs");
}
