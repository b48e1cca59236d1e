//! SmolLM2-135M in a web page: the engine of `island-llm` built for `wasm32` on CubeCL's wgpu
//! runtime, which in a browser is the page's WebGPU device and WGSL, computing the same logits
//! as the CPU runtime, byte for byte.
//!
//! - [`page`] (wasm32 only): the module the page's JavaScript (`www/`) calls: it checks the
//!   model file, tokenizes, generates, and hands each step's token and logit hash to the page.
//! - [`site`] (native): builds that module (`cargo` for `wasm32-unknown-unknown`, then
//!   `wasm-bindgen`) into a folder with the page, and serves it with the model file; a run the
//!   page posts back arrives as the record `island-llm --record` writes.
//!
//! `cargo run -p island-llm-web` builds and serves the page for any browser with WebGPU; the
//! browser trial (`tests/browser.rs`) drives headless Chromium through it and compares the
//! hashes with the CPU runtime's committed run.

#[cfg(target_family = "wasm")]
pub mod page;
#[cfg(not(target_family = "wasm"))]
pub mod site;
