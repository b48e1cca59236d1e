//! Where ledgers are read, the one loader of them: each crate's `ledger.json`, embedded at build
//! time by [`crate::ledger!`], and the files `ISLANDS_LEDGER` names.
//!
//! - What launches consult ([`records`], [`cell_records`]): every embedded ledger, then the
//!   files of `ISLANDS_LEDGER` over them.
//! - What is committed ([`committed`]): per crate, its `ledger.json` where the crate was built
//!   when it can be read (so that successive `islands gate` runs accumulate, and the scoreboard
//!   shows the files as they are), else the embedded copy; `ISLANDS_LEDGER` is not a crate's.

use crate::records::cell_record::CellRecord;
use crate::records::ledger::Ledger;
use crate::records::record::Record;
use island_vocab::settings::{self, SettingError};
use std::path::Path;
use std::sync::OnceLock;

/// A crate's ledger file, embedded at build time by [`crate::ledger!`].
#[derive(Debug)]
pub struct Embedded {
    pub krate: &'static str,
    /// Where the file was when the crate was built (`islands gate` updates it there).
    pub path: &'static str,
    pub text: &'static str,
}

inventory::collect!(Embedded);

/// Embeds the crate's `ledger.json` (beside its `Cargo.toml`) and registers it, so launches of
/// its islands consult its records and `islands gate` / `islands scoreboard` find it.
#[macro_export]
macro_rules! ledger {
    () => {
        $crate::__private::inventory::submit! {
            $crate::records::embedded::Embedded {
                krate: env!("CARGO_PKG_NAME"),
                path: concat!(env!("CARGO_MANIFEST_DIR"), "/ledger.json"),
                text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/ledger.json")),
            }
        }
    };
}

/// Every embedded ledger, by crate.
pub fn embedded() -> Vec<&'static Embedded> {
    let mut all: Vec<&'static Embedded> = inventory::iter::<Embedded>.into_iter().collect();
    all.sort_by_key(|e| e.krate);
    all
}

/// A crate's committed ledger that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct CommittedError {
    pub path: &'static str,
    pub source: crate::records::ledger::ParseError,
}

/// Each crate's committed ledger, by crate, with its path (module docs).
pub fn committed() -> Result<std::collections::BTreeMap<&'static str, (std::path::PathBuf, Ledger)>, CommittedError> {
    let mut all = std::collections::BTreeMap::new();
    for e in embedded() {
        let text = std::fs::read_to_string(e.path).unwrap_or_else(|_| e.text.to_string());
        let parsed = Ledger::parse(&text).map_err(|source| CommittedError { path: e.path, source })?;
        all.insert(e.krate, (std::path::PathBuf::from(e.path), parsed));
    }
    Ok(all)
}

/// Why the ledger a process consults could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("the ledger of `{krate}` ({path}) does not parse: {reason}")]
    Embedded { krate: &'static str, path: &'static str, reason: String },
    #[error(transparent)]
    Setting(#[from] SettingError),
    #[error("ISLANDS_LEDGER names `{path}`, which cannot be read: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("ISLANDS_LEDGER names `{path}`, which does not parse as a ledger: {reason}")]
    Malformed { path: String, reason: String },
}

/// Every embedded ledger, then the files of `ledger_paths` (`ISLANDS_LEDGER`'s), whose
/// records replace embedded ones of the same key (a deployment's own gate results, without a
/// rebuild), merged into one. A ledger that cannot be read or parsed is an error: its records may
/// be the ones that decline an arm or keep an incumbent.
fn load_all<P: AsRef<Path>>(ledger_paths: &[P]) -> Result<Ledger, LedgerError> {
    let mut all = Ledger::default();
    let mut merge = |l: Ledger| {
        l.records.into_iter().for_each(|r| all.upsert(r));
        l.cells.into_iter().for_each(|r| all.upsert_cell(r));
    };
    for e in embedded() {
        merge(Ledger::parse(e.text).map_err(|e2| LedgerError::Embedded {
            krate: e.krate,
            path: e.path,
            reason: e2.to_string(),
        })?);
    }
    for path in ledger_paths.iter().map(AsRef::as_ref) {
        let shown = || path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| LedgerError::Unreadable { path: shown(), reason: e.to_string() })?;
        merge(Ledger::parse(&text).map_err(|e| LedgerError::Malformed { path: shown(), reason: e.to_string() })?);
    }
    Ok(all)
}

/// The arm records launches consult ([`load_all`]'s) with these ledger files.
pub fn load<P: AsRef<Path>>(ledger_paths: &[P]) -> Result<Vec<Record>, LedgerError> {
    Ok(load_all(ledger_paths)?.records)
}

/// The cell records of every embedded ledger, then of the files of `ISLANDS_LEDGER` (which
/// replace embedded ones of the same cell and device), read once per process.
pub fn cell_records() -> Result<&'static [CellRecord], &'static LedgerError> {
    static ALL: OnceLock<Result<Vec<CellRecord>, LedgerError>> = OnceLock::new();
    ALL.get_or_init(|| load_cells(&settings::ledger()?)).as_ref().map(Vec::as_slice)
}

/// [`cell_records`] with these ledger files.
pub fn load_cells<P: AsRef<Path>>(ledger_paths: &[P]) -> Result<Vec<CellRecord>, LedgerError> {
    Ok(load_all(ledger_paths)?.cells)
}

/// [`load`] with this process's `ISLANDS_LEDGER`, once.
pub fn records() -> Result<&'static [Record], &'static LedgerError> {
    static ALL: OnceLock<Result<Vec<Record>, LedgerError>> = OnceLock::new();
    ALL.get_or_init(|| load(&settings::ledger()?)).as_ref().map(Vec::as_slice)
}
