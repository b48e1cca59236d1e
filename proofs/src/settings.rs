//! What a harness process runs with: the CPU client, the proof settings of its environment, the
//! device runtimes it checks conformance on, whether an unproven arm may pass as ignored, and a
//! failing trial for each setting of the environment that is refused.

use island_runtime::Backend;
use island_runtime::proof_run::ProofOptions;
use island_runtime::runtimes::{ClientError, RuntimeName};
use island_runtime::settings::{self, SettingError};
use libtest_mimic::Trial;
use std::sync::{Arc, OnceLock};

/// The CPU client every proof runs on, opened once.
pub fn cpu() -> Result<cubecl::prelude::Client, ClientError> {
    static CLIENT: OnceLock<Result<cubecl::prelude::Client, ClientError>> = OnceLock::new();
    CLIENT.get_or_init(|| RuntimeName::Cpu.client()).clone()
}

/// Whether an unproven arm is reported as an ignored trial (`ISLANDS_ALLOW_UNPROVEN=1`) rather
/// than a failure. Any other value than `0` or `1` is an error.
pub fn allow_unproven() -> Result<bool, SettingError> {
    settings::allow_unproven()
}

/// The proof settings of this process (`ISLANDS_SEED`, `ISLANDS_LANES`, `ISLANDS_DEPTH`), or
/// one failing trial that says which value is wrong.
pub fn options() -> Result<Arc<ProofOptions>, Vec<Trial>> {
    ProofOptions::from_env()
        .map(Arc::new)
        .map_err(|e| vec![Trial::test("environment::proof_settings", move || Err(e.into())).with_kind("environment")])
}

/// The device runtimes this build checks conformance on: those its features include
/// (`vulkan`, `webgpu`, `cuda`), unless `ISLANDS_CONFORMANCE` lists others (`none` for none). A
/// name that is no runtime is an error, not a runtime silently left out.
pub fn conformance_runtimes() -> Result<Vec<RuntimeName>, SettingError> {
    Ok(match settings::conformance()? {
        Some(backends) => backends.into_iter().map(RuntimeName::Device).collect(),
        None => [Backend::Vulkan, Backend::WebGpu, Backend::Cuda]
            .map(RuntimeName::Device)
            .into_iter()
            .filter(|r| r.built())
            .collect(),
    })
}

/// Whether the trials that compile the engine's kernels (its ops, cells and generations) run on
/// `runtime`: wherever conformance runs, except `webgpu` unless `ISLANDS_CONFORMANCE` names it.
/// Through WGSL, lavapipe's shader compiler takes minutes over those kernels (the 32-bit
/// formulation of `exact::fma` inlined at every call): one engine trial took 13 min cold on 2
/// cores, and the harness went from 5 to 20 minutes with all of them (2026-12-04). Where left
/// out they are listed as ignored.
pub fn runs_engine_kernels(runtime: RuntimeName) -> bool {
    runtime != RuntimeName::Device(Backend::WebGpu)
        || settings::conformance().ok().flatten().is_some_and(|named| named.contains(&Backend::WebGpu))
}

/// One failing trial `environment::NAME` for each `ISLANDS_*` value of this process's
/// environment that its setting refuses (the unknown names warned about, once).
pub fn environment_trials() -> Vec<Trial> {
    settings::warn_unknown();
    settings::errors()
        .into_iter()
        .map(|e| Trial::test(format!("environment::{}", e.name), move || Err(e.into())).with_kind("environment"))
        .collect()
}
