//! Every `ISLANDS_*` environment variable, defined once: [`TABLE`] gives each its meaning, the
//! values it accepts, its default and who reads it, and the accessors below are the only
//! readers of the environment in Rust. Parsing is strict: a value a setting does not accept is a
//! [`SettingError`] that names the variable, the value and what was expected, never a silent
//! default; an empty value is the same as none. An `ISLANDS_` name that is in no row (a
//! misspelling) is warned about once per process ([`warn_unknown`]), with the closest name.
//!
//! `docs/settings.md` shows the same table, checked row by row against this one.

pub mod kind;

pub use kind::{Kind, parse_seed};

use crate::backend::Backend;
use std::path::PathBuf;
use std::sync::Once;

/// One environment variable of the SDK.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub name: &'static str,
    /// One line: what it changes.
    pub meaning: &'static str,
    pub kind: Kind,
    /// What holds when it is unset or empty.
    pub default: &'static str,
    /// Who reads it: a part of the SDK, or a script.
    pub read_by: &'static str,
    /// A value it refuses, for the trials that check it is refused.
    pub bad: &'static str,
}

/// A setting of the environment whose value its kind does not accept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name}=`{value}` is not {expected}")]
pub struct SettingError {
    pub name: &'static str,
    pub value: String,
    pub expected: String,
}

const PROOF_READERS: &str = "the proofs harness, `islands prove`, `conform`, `gate`";

pub const POLICY: Setting = Setting {
    name: "ISLANDS_POLICY",
    meaning: "How a launch consults the ledgers: `evidence` runs an arm where a record, or its semantic class on a \
              runtime some device has run natively, shows it exact; `trust` also where no device of the runtime has \
              run (HIP, Metal, WGSL); `strict` only where a current `flipped` record of the exact device does; `off` \
              wherever its guard holds",
    kind: Kind::Choice(&["evidence", "trust", "strict", "off"]),
    default: "evidence",
    read_by: "every launch",
    bad: "strcit",
};

pub const LEDGER: Setting = Setting {
    name: "ISLANDS_LEDGER",
    meaning: "Ledger files whose records replace the embedded ones of the same key (a deployment's own gate results, \
              without a rebuild)",
    kind: Kind::Files,
    default: "none: the ledgers embedded at build time",
    read_by: "every launch, cell dispatch",
    bad: "/nonexistent/ledger.json",
};

pub const CELLS: Setting = Setting {
    name: "ISLANDS_CELLS",
    meaning: "Which incumbent a declined cell may run: `exact` only one bit-exact at every shape of its record, \
              `fastest` the record's fastest",
    kind: Kind::Choice(&["exact", "fastest"]),
    default: "exact",
    read_by: "cell dispatch",
    bad: "fastes",
};

pub const CANDIDATE: Setting = Setting {
    name: "ISLANDS_CANDIDATE",
    meaning: "Forces one candidate of every cell, for measurement: `twin`, `default` (the twin with `default` in \
              every island), `incumbent` (the record's, else the first registered for the runtime), or an \
              incumbent by name",
    kind: Kind::Candidate(&["twin", "default", "incumbent"]),
    default: "none: the records decide",
    read_by: "cell dispatch",
    bad: "twin,default",
};

pub const SEED: Setting = Setting {
    name: "ISLANDS_SEED",
    meaning: "The base seed of proof inputs; a mismatch report names the seed that replays it",
    kind: Kind::Seed,
    default: "0x151a4d5eed",
    read_by: PROOF_READERS,
    bad: "0xfg",
};

pub const LANES: Setting = Setting {
    name: "ISLANDS_LANES",
    meaning: "Lanes per proof run at least, rounded up to whole cubes",
    kind: Kind::Count { min: 1, max: u32::MAX, step: 1 },
    default: "the island's `lanes = N`",
    read_by: PROOF_READERS,
    bad: "0",
};

pub const DEPTH: Setting = Setting {
    name: "ISLANDS_DEPTH",
    meaning: "Random groups per proof run: `8 · depth` realistic and `2 · depth` wide ones, after the edge groups",
    kind: Kind::Count { min: 1, max: 64, step: 1 },
    default: "1",
    read_by: PROOF_READERS,
    bad: "65",
};

pub const ALLOW_UNPROVEN: Setting = Setting {
    name: "ISLANDS_ALLOW_UNPROVEN",
    meaning: "`1`: an arm that could not be proven is an ignored trial, not a failing one",
    kind: Kind::Flag,
    default: "0",
    read_by: "the proofs harness",
    bad: "yes",
};

pub const CONFORMANCE: Setting = Setting {
    name: "ISLANDS_CONFORMANCE",
    meaning: "The device runtimes the proofs harness checks conformance on (on webgpu the engine's prompt-batch, op \
              and cell trials, minutes of shader compilation on lavapipe, only where it is named)",
    kind: Kind::Backends,
    default: "those built in, of vulkan, webgpu and cuda",
    read_by: "the proofs harness",
    bad: "vulkn",
};

pub const GATE: Setting = Setting {
    name: "ISLANDS_GATE",
    meaning: "The device runtimes on which a crate's harness (`islands::proofs::harness!()`) also gates the crate's \
              arms, bit-exact half and speed half as `islands gate` does, and writes the records into the crate's \
              `ledger.json` (review the diff)",
    kind: Kind::Backends,
    default: "none",
    read_by: "a crate's proofs harness",
    bad: "vulkn",
};

pub const CENSUS: Setting = Setting {
    name: "ISLANDS_CENSUS",
    meaning: "`write` rewrites the committed census of what the suite runs instead of comparing it (review the diff)",
    kind: Kind::Choice(&["check", "write"]),
    default: "check",
    read_by: "the proofs harness",
    bad: "wirte",
};

pub const BLESS: Setting = Setting {
    name: "ISLANDS_BLESS",
    meaning: "`1`: the macros' expansion snapshots and the model trial's golden logit hashes are rewritten instead of \
              compared (review the diff)",
    kind: Kind::Flag,
    default: "0",
    read_by: "island-macros' unit tests, the proofs harness's model trial",
    bad: "true",
};

pub const MATVEC_PLANES: Setting = Setting {
    name: "ISLANDS_MATVEC_PLANES",
    meaning: "Rows per cube of the Q8_0 matvec on a GPU, for tuning",
    kind: Kind::Count { min: 1, max: 32, step: 1 },
    default: "16",
    read_by: "the examples' Q8_0 matvec",
    bad: "33",
};

pub const MATVEC_UNROLL: Setting = Setting {
    name: "ISLANDS_MATVEC_UNROLL",
    meaning: "Groups per pipeline stage of the Q8_0 matvec on a GPU, for tuning",
    kind: Kind::Count { min: 1, max: 16, step: 1 },
    default: "2",
    read_by: "the examples' Q8_0 matvec",
    bad: "0",
};

pub const QUANT_UNITS: Setting = Setting {
    name: "ISLANDS_QUANT_UNITS",
    meaning: "Units per cube of the Q8_0 matvec's activation quantizer on a GPU (a block's 8 units stay 8 aligned \
              lanes of one plane), for tuning",
    kind: Kind::Count { min: 32, max: 1024, step: 32 },
    default: "32",
    read_by: "the examples' Q8_0 matvec",
    bad: "48",
};

pub const MODEL: Setting = Setting {
    name: "ISLANDS_MODEL",
    meaning: "The engine's model file, and where `scripts/fetch-model.sh` puts it",
    kind: Kind::Path,
    default: "`$XDG_CACHE_HOME/islands/models/SmolLM2-135M-Instruct.Q4_1.gguf` (`~/.cache` for `$XDG_CACHE_HOME`)",
    read_by: "island-llm, scripts/fetch-model.sh",
    bad: "/",
};

pub const SKIP_VULKAN: Setting = Setting {
    name: "ISLANDS_SKIP_VULKAN",
    meaning: "`1`: `scripts/setup.sh` does not install lavapipe",
    kind: Kind::Flag,
    default: "0",
    read_by: "scripts/setup.sh",
    bad: "yes",
};

pub const SKIP_MODEL: Setting = Setting {
    name: "ISLANDS_SKIP_MODEL",
    meaning: "`1`: `scripts/setup.sh` does not fetch the model",
    kind: Kind::Flag,
    default: "0",
    read_by: "scripts/setup.sh",
    bad: "yes",
};

pub const SKIP_BROWSER: Setting = Setting {
    name: "ISLANDS_SKIP_BROWSER",
    meaning: "`1`: `scripts/setup.sh` installs neither Chromium nor the wasm32 tools (the target, `wasm-bindgen`), \
              and the browser trial of the engine's page is ignored",
    kind: Kind::Flag,
    default: "0",
    read_by: "scripts/setup.sh, the browser trial (`examples/llm-web`)",
    bad: "yes",
};

/// Every `ISLANDS_*` variable, in the order of `docs/settings.md`.
pub static TABLE: &[&Setting] = &[
    &POLICY,
    &LEDGER,
    &CELLS,
    &CANDIDATE,
    &SEED,
    &LANES,
    &DEPTH,
    &ALLOW_UNPROVEN,
    &CONFORMANCE,
    &GATE,
    &CENSUS,
    &BLESS,
    &MATVEC_PLANES,
    &MATVEC_UNROLL,
    &QUANT_UNITS,
    &MODEL,
    &SKIP_VULKAN,
    &SKIP_MODEL,
    &SKIP_BROWSER,
];

impl Setting {
    /// The error for `value`, which this setting does not accept.
    pub fn error(&self, value: &str) -> SettingError {
        SettingError { name: self.name, value: value.to_string(), expected: self.kind.describe() }
    }

    /// This process's value, trimmed; `None` when unset or empty. A value that is not Unicode is
    /// refused.
    pub fn text(&self) -> Result<Option<String>, SettingError> {
        match std::env::var_os(self.name) {
            None => Ok(None),
            Some(os) => {
                let text = os.to_str().ok_or_else(|| self.error(&os.to_string_lossy()))?;
                Ok(Some(text.trim()).filter(|t| !t.is_empty()).map(str::to_string))
            }
        }
    }

    /// `text` read with `parse`, one of [`Kind`]'s parsers: `None` when empty, an error naming
    /// the value when it does not parse.
    pub fn parse<T>(
        &self,
        text: &str,
        parse: impl FnOnce(&Kind, &str) -> Option<T>,
    ) -> Result<Option<T>, SettingError> {
        match text.trim() {
            "" => Ok(None),
            t => parse(&self.kind, t).map(Some).ok_or_else(|| self.error(t)),
        }
    }

    /// This process's value read with `parse`.
    pub fn read<T>(&self, parse: impl FnOnce(&Kind, &str) -> Option<T>) -> Result<Option<T>, SettingError> {
        match self.text()? {
            None => Ok(None),
            Some(t) => self.parse(&t, parse),
        }
    }

    /// The word `text` names, or the default word when it is empty (a [`Kind::Choice`]).
    pub fn word(&self, text: &str) -> Result<&'static str, SettingError> {
        Ok(self.parse(text, Kind::word)?.unwrap_or(self.default))
    }

    /// Whether `text` is a value of this setting (an empty one is: it means the default).
    pub fn check(&self, text: &str) -> Result<(), SettingError> {
        self.parse(text, |kind, t| kind.accepts(t).then_some(())).map(drop)
    }

    /// Whether this process's value is one this setting accepts.
    pub fn validate(&self) -> Result<(), SettingError> {
        self.text()?.map_or(Ok(()), |t| self.check(&t))
    }

    /// Its row of `docs/settings.md`.
    pub fn doc_row(&self) -> String {
        format!(
            "| `{}` | {} | {} | {} | {} |",
            self.name,
            self.meaning,
            self.kind.describe(),
            self.default,
            self.read_by
        )
    }
}

/// `ISLANDS_POLICY`, as the word of the table (`evidence` when unset).
pub fn policy() -> Result<&'static str, SettingError> {
    POLICY.word(&POLICY.text()?.unwrap_or_default())
}

/// `ISLANDS_LEDGER`: the files it lists (none when unset).
pub fn ledger() -> Result<Vec<PathBuf>, SettingError> {
    Ok(LEDGER.read(Kind::files)?.unwrap_or_default())
}

/// `ISLANDS_CELLS`, as the word of the table (`exact` when unset).
pub fn cells() -> Result<&'static str, SettingError> {
    CELLS.word(&CELLS.text()?.unwrap_or_default())
}

/// `ISLANDS_CANDIDATE`: a word of the table or a name, as written; `None` when unset.
pub fn candidate() -> Result<Option<String>, SettingError> {
    CANDIDATE.read(Kind::candidate)
}

/// `ISLANDS_SEED`, if set.
pub fn seed() -> Result<Option<u64>, SettingError> {
    SEED.read(Kind::seed)
}

/// `ISLANDS_LANES`, if set.
pub fn lanes() -> Result<Option<u32>, SettingError> {
    LANES.read(Kind::count)
}

/// `ISLANDS_DEPTH`, if set.
pub fn depth() -> Result<Option<u32>, SettingError> {
    DEPTH.read(Kind::count)
}

/// `ISLANDS_ALLOW_UNPROVEN` (`false` when unset).
pub fn allow_unproven() -> Result<bool, SettingError> {
    Ok(ALLOW_UNPROVEN.read(Kind::flag)?.unwrap_or(false))
}

/// `ISLANDS_CONFORMANCE`: the backends it names (none for `none`); `None` when unset.
pub fn conformance() -> Result<Option<Vec<Backend>>, SettingError> {
    CONFORMANCE.read(Kind::backends)
}

/// `ISLANDS_GATE`: the device runtimes a crate's harness gates its arms on (none when unset).
pub fn gate() -> Result<Vec<Backend>, SettingError> {
    Ok(GATE.read(Kind::backends)?.unwrap_or_default())
}

/// Whether `ISLANDS_CENSUS` says `write`.
pub fn census_write() -> Result<bool, SettingError> {
    Ok(CENSUS.word(&CENSUS.text()?.unwrap_or_default())? == "write")
}

/// `ISLANDS_BLESS` (`false` when unset).
pub fn bless() -> Result<bool, SettingError> {
    Ok(BLESS.read(Kind::flag)?.unwrap_or(false))
}

/// `ISLANDS_MATVEC_PLANES`, if set.
pub fn matvec_planes() -> Result<Option<u32>, SettingError> {
    MATVEC_PLANES.read(Kind::count)
}

/// `ISLANDS_MATVEC_UNROLL`, if set.
pub fn matvec_unroll() -> Result<Option<u32>, SettingError> {
    MATVEC_UNROLL.read(Kind::count)
}

/// `ISLANDS_QUANT_UNITS`, if set.
pub fn quant_units() -> Result<Option<u32>, SettingError> {
    QUANT_UNITS.read(Kind::count)
}

/// `ISLANDS_MODEL`, if set.
pub fn model() -> Result<Option<PathBuf>, SettingError> {
    MODEL.read(Kind::path)
}

/// `ISLANDS_SKIP_BROWSER` (`false` when unset).
pub fn skip_browser() -> Result<bool, SettingError> {
    Ok(SKIP_BROWSER.read(Kind::flag)?.unwrap_or(false))
}

/// Every setting of the table whose value in this process's environment is refused.
pub fn errors() -> Vec<SettingError> {
    TABLE.iter().filter_map(|s| s.validate().err()).collect()
}

/// What a program checks before it starts: the unknown names warned about ([`warn_unknown`]),
/// and every setting of the table, the first refused one an error.
pub fn check_all() -> Result<(), SettingError> {
    warn_unknown();
    errors().into_iter().next().map_or(Ok(()), Err)
}

/// An `ISLANDS_` name of the environment that no setting has: a misspelling, most likely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    pub name: String,
    /// The setting's name it is closest to, when it is close (a few letters off).
    pub closest: Option<&'static str>,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "islands: {} is not a setting of islands and is ignored", self.name)?;
        match self.closest {
            Some(c) => write!(f, "; did you mean {c}? (docs/settings.md lists them)"),
            None => write!(f, " (docs/settings.md lists the settings)"),
        }
    }
}

/// The names of `names` that start with `ISLANDS_` and are no setting's.
pub fn unknown_among(names: impl IntoIterator<Item = String>) -> Vec<Unknown> {
    let mut unknown: Vec<Unknown> = names
        .into_iter()
        .filter(|n| n.starts_with("ISLANDS_") && !TABLE.iter().any(|s| s.name == n))
        .map(|name| {
            let (distance, closest) =
                TABLE.iter().map(|s| (edit_distance(&name, s.name), s.name)).min().expect("the table has rows");
            Unknown { closest: (distance <= 3).then_some(closest), name }
        })
        .collect();
    unknown.sort_by(|a, b| a.name.cmp(&b.name));
    unknown
}

/// The unknown `ISLANDS_` names of this process's environment (none on the web, which has no
/// environment: Rust's standard library panics when asked to list it there).
pub fn unknown() -> Vec<Unknown> {
    if cfg!(all(target_family = "wasm", target_os = "unknown")) {
        return Vec::new();
    }
    unknown_among(std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned()))
}

/// Warns once per process about each unknown `ISLANDS_` name of the environment: through `log`
/// where a logger takes warnings, on standard error otherwise.
pub fn warn_unknown() {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        for u in unknown() {
            if log::log_enabled!(log::Level::Warn) {
                log::warn!("{u}");
            } else {
                eprintln!("{u}");
            }
        }
    });
}

/// Levenshtein distance: single-character insertions, deletions and substitutions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;
