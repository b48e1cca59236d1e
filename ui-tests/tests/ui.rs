//! The macros' errors, pinned: one compile-fail case per error with its `.stderr`, and
//! compile-pass cases for islands written where users write them.
//!
//! Regenerate snapshots with `TRYBUILD=overwrite cargo test -p ui-tests`, then review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.compile_fail("tests/ui/intrinsic/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
