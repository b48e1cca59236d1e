//! Parsers of the values arguments take, for clap's `value_parser`: an invalid value stops the
//! CLI with clap's error (naming the argument, status 2) and the reason given here.

use island_runtime::Backend;
use island_runtime::runtimes::RuntimeName;
use island_runtime::settings;

/// A runtime's name: `cpu`, `cuda`, `hip`, `vulkan`, `metal` or `webgpu` (built in or not: a
/// runtime this build lacks fails when its client is opened, saying which feature it needs).
pub fn runtime(name: &str) -> Result<RuntimeName, String> {
    RuntimeName::parse(name).ok_or_else(|| format!("unknown runtime `{name}`; expected one of {}", RuntimeName::list()))
}

/// A backend's keyword: `cuda`, `hip`, `vulkan`, `metal` or `webgpu`.
pub fn backend(keyword: &str) -> Result<Backend, String> {
    Backend::from_keyword(keyword).ok_or_else(|| {
        format!("unknown backend `{keyword}`; expected one of {}", Backend::ALL.map(Backend::keyword).join(", "))
    })
}

/// A seed, decimal or 0x-hex.
pub fn seed(s: &str) -> Result<u64, String> {
    settings::parse_seed(s).ok_or_else(|| format!("`{s}` is not a decimal or 0x-hex number"))
}

/// A matvec shape `MxK` (e.g. `4096x14336`).
pub fn shape(s: &str) -> Result<(usize, usize), String> {
    match s.split_once('x').map(|(m, k)| (m.parse(), k.parse())) {
        Some((Ok(m), Ok(k))) => Ok((m, k)),
        _ => Err("takes MxK, e.g. 4096x14336".to_string()),
    }
}
