//! Compile tests live in `tests/`.
