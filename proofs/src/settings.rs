//! What a harness process runs with: the CPU client, the proof settings of its environment, the
//! device runtimes it checks conformance on, and whether an unproven arm may pass as ignored.

use island_runtime::proof_run::ProofOptions;
use island_runtime::runtimes::RuntimeName;
use libtest_mimic::Trial;
use std::sync::{Arc, OnceLock};

/// The CPU client every proof runs on, opened once.
pub fn cpu() -> Result<cubecl::prelude::Client, String> {
    static CLIENT: OnceLock<Result<cubecl::prelude::Client, String>> = OnceLock::new();
    CLIENT.get_or_init(|| RuntimeName::Cpu.client().map_err(|e| e.to_string())).clone()
}

/// Whether an unproven arm is reported as an ignored trial (`ISLANDS_ALLOW_UNPROVEN=1`) rather
/// than a failure. Any other value than `0` or `1` is an error.
pub fn allow_unproven() -> Result<bool, String> {
    match std::env::var("ISLANDS_ALLOW_UNPROVEN").as_deref() {
        Err(_) | Ok("") | Ok("0") => Ok(false),
        Ok("1") => Ok(true),
        Ok(other) => Err(format!("ISLANDS_ALLOW_UNPROVEN=`{other}`: expected 0 or 1")),
    }
}

/// The proof settings of this process (`ISLANDS_SEED`, `ISLANDS_LANES`, `ISLANDS_DEPTH`), or
/// one failing trial that says which value is wrong.
pub fn options() -> Result<Arc<ProofOptions>, Vec<Trial>> {
    ProofOptions::from_env()
        .map(Arc::new)
        .map_err(|e| vec![Trial::test("environment::proof_settings", move || Err(e.into())).with_kind("environment")])
}

/// The device runtimes this build checks conformance on: those its features include
/// (`vulkan`, `cuda`), unless `ISLANDS_CONFORMANCE` lists others (`none` for none). A name that
/// is no runtime is an error, not a runtime silently left out.
pub fn conformance_runtimes() -> Result<Vec<RuntimeName>, String> {
    match std::env::var("ISLANDS_CONFORMANCE") {
        Ok(list) if list.trim() == "none" => Ok(Vec::new()),
        Ok(list) => list
            .split(',')
            .map(|s| {
                RuntimeName::parse(s.trim()).filter(|r| *r != RuntimeName::Cpu).ok_or_else(|| {
                    format!(
                        "ISLANDS_CONFORMANCE names `{}`, which is no device runtime ({} or none)",
                        s.trim(),
                        RuntimeName::devices()
                    )
                })
            })
            .collect(),
        Err(_) => Ok([
            RuntimeName::Device(island_runtime::Backend::Vulkan),
            RuntimeName::Device(island_runtime::Backend::Cuda),
        ]
        .into_iter()
        .filter(|r| r.built())
        .collect()),
    }
}
