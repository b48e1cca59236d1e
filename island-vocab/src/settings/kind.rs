//! What values a setting accepts: each kind's parser, strict (a value it does not accept is
//! `None`, never a default), and its description for messages and the docs' table.

use crate::backend::Backend;
use std::path::{Path, PathBuf};

/// The values one setting accepts. Each parser below answers `None` for a value its kind does
/// not accept, and for a kind that is not its own: a setting read with the wrong parser is
/// refused whatever its value, never read as a default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `0` or `1`.
    Flag,
    /// A 64-bit number, decimal or `0x` hexadecimal.
    Seed,
    /// A whole number from `min` to `max`, a multiple of `step`.
    Count { min: u32, max: u32, step: u32 },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// One of these words, or the name of something registered (checked where the registry is
    /// linked): any text without a comma (one name, not a list) or a control character.
    Candidate(&'static [&'static str]),
    /// Device runtimes by their backend's keyword, separated by commas, or `none`.
    Backends,
    /// Files separated by `:`, each one that exists.
    Files,
    /// The path of a file, which need not exist yet but is not a directory (nor holds a control
    /// character).
    Path,
}

impl Kind {
    /// What the kind accepts, as the end of "`NAME=`value` is not …`" and in the docs' table.
    pub fn describe(&self) -> String {
        match self {
            Kind::Flag => "0 or 1".into(),
            Kind::Seed => "a decimal or 0x-hex number".into(),
            Kind::Count { min, max: u32::MAX, step: 1 } => format!("a whole number of at least {min}"),
            Kind::Count { min, max, step: 1 } => format!("a whole number from {min} to {max}"),
            Kind::Count { min, max, step } => format!("a multiple of {step} from {min} to {max}"),
            Kind::Choice(words) => list(words),
            Kind::Candidate(words) => format!("{} or the name of a registered incumbent", words.join(", ")),
            Kind::Backends => {
                format!(
                    "a comma-separated list of device runtimes ({}) or none",
                    Backend::ALL.map(Backend::keyword).join(", ")
                )
            }
            Kind::Files => "a `:`-separated list of files that exist".into(),
            Kind::Path => "the path of a file (not a directory)".into(),
        }
    }

    /// Whether `text` (trimmed, not empty) is a value of this kind.
    pub fn accepts(&self, text: &str) -> bool {
        match self {
            Kind::Flag => self.flag(text).is_some(),
            Kind::Seed => self.seed(text).is_some(),
            Kind::Count { .. } => self.count(text).is_some(),
            Kind::Choice(_) => self.word(text).is_some(),
            Kind::Candidate(_) => self.candidate(text).is_some(),
            Kind::Backends => self.backends(text).is_some(),
            Kind::Files => self.files(text).is_some(),
            Kind::Path => self.path(text).is_some(),
        }
    }

    pub fn flag(&self, text: &str) -> Option<bool> {
        match (self, text) {
            (Kind::Flag, "0") => Some(false),
            (Kind::Flag, "1") => Some(true),
            _ => None,
        }
    }

    pub fn seed(&self, text: &str) -> Option<u64> {
        matches!(self, Kind::Seed).then(|| parse_seed(text)).flatten()
    }

    pub fn count(&self, text: &str) -> Option<u32> {
        let Kind::Count { min, max, step } = *self else { return None };
        text.parse().ok().filter(|n| (min..=max).contains(n) && n % step == 0)
    }

    /// The table's own spelling of the word `text` names.
    pub fn word(&self, text: &str) -> Option<&'static str> {
        let Kind::Choice(words) = self else { return None };
        words.iter().copied().find(|w| *w == text)
    }

    /// One of the words, or a name (returned as written).
    pub fn candidate(&self, text: &str) -> Option<String> {
        let Kind::Candidate(_) = self else { return None };
        (!text.contains(',') && !text.chars().any(char::is_control)).then(|| text.to_string())
    }

    /// The backends named; `none` is none.
    pub fn backends(&self, text: &str) -> Option<Vec<Backend>> {
        match (self, text) {
            (Kind::Backends, "none") => Some(Vec::new()),
            (Kind::Backends, list) => list.split(',').map(|s| Backend::from_keyword(s.trim())).collect(),
            _ => None,
        }
    }

    /// The files named (empty pieces between `:` are skipped).
    pub fn files(&self, text: &str) -> Option<Vec<PathBuf>> {
        let Kind::Files = self else { return None };
        let paths: Vec<PathBuf> = text.split(':').map(str::trim).filter(|p| !p.is_empty()).map(PathBuf::from).collect();
        paths.iter().all(|p| p.is_file()).then_some(paths)
    }

    pub fn path(&self, text: &str) -> Option<PathBuf> {
        let Kind::Path = self else { return None };
        (!text.chars().any(char::is_control) && !Path::new(text).is_dir()).then(|| PathBuf::from(text))
    }
}

/// A seed written in decimal or `0x` hex.
pub fn parse_seed(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `a, b or c`.
fn list(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
