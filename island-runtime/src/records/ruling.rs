//! Why a launch runs what it runs, in one vocabulary for an island's arms and an engine's cells:
//! [`Why`] is the rule of the policy that applied (the tables of `crate::records::view` for arms
//! and `crate::launch::dispatch` for cells), and [`Followed`] the record it read, if any. What
//! runs is the caller's half of the ruling: an arm or `default` (`crate::tag::target::Selection`),
//! the twin or an incumbent (`crate::launch::dispatch::Choice`).
//!
//! Nothing decides on the words: a caller matches the variant, and the words are its
//! [`Display`](fmt::Display), for logs.

use crate::records::cell_record::{CellDecision, CellRecord};
use crate::records::record::{Decision, Record};
use std::fmt;

/// What a record concluded: an arm's gate or a cell's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Arm(Decision),
    Cell(CellDecision),
}

/// The record a ruling read: whose it is, what it concluded, and its own line
/// ([`Record::why`], [`CellRecord::why`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Followed {
    pub device: String,
    pub runtime: String,
    pub driver: String,
    pub verdict: Verdict,
    pub said: String,
}

impl Followed {
    /// An arm's record.
    pub fn arm(r: &Record) -> Followed {
        Followed {
            device: r.device.device.clone(),
            runtime: r.device.runtime.clone(),
            driver: r.device.driver.clone(),
            verdict: Verdict::Arm(r.decision),
            said: r.why(),
        }
    }

    /// A cell's record.
    pub fn cell(r: &CellRecord) -> Followed {
        Followed {
            device: r.device.device.clone(),
            runtime: r.device.runtime.clone(),
            driver: r.device.driver.clone(),
            verdict: Verdict::Cell(r.decision),
            said: r.why(),
        }
    }
}

/// The rule that decided what a launch runs on a device. Variants that name a record carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// A setting chose (`ISLANDS_CANDIDATE`).
    Forced { setting: &'static str },
    /// A setting named a candidate that does not run here, so the twin runs.
    ForcedAbsent { setting: &'static str, value: String, cell: String, runtime: String },
    /// Nothing is recorded of this device for the cell: the twin runs.
    NoRecord,
    /// The record of this device decides, as it says.
    Recorded(Followed),
    /// A declined record of this device under another driver: a measured "no" survives a driver
    /// update (arms).
    OtherDriver(Followed),
    /// An incumbent's exactness was shown under another driver, which may compile it otherwise:
    /// the twin runs (cells).
    DriverChanged { record: Followed, here: String },
    /// A measured divergence of the device (`crate::hardware::divergence`).
    Divergence { cause: &'static str, measured: &'static str },
    /// The arm failed on another device of the same runtime (the same generated code).
    FailedElsewhere(Followed),
    /// The record of this device holds no machine-code evidence where its runtime has one: it
    /// concludes nothing.
    MachineCodeUnchecked { record: Followed, why: String },
    /// The record of this device is `unverified`, and its bit-exact half did not pass.
    UnverifiedInexact { record: Followed, note: String },
    /// `ISLANDS_POLICY=strict`, and no current `flipped` record of this device: the record
    /// there is, if any, and why it is stale, if it is.
    Strict { record: Option<Followed>, stale: Option<String> },
    /// The arm is not registered, so no proof covers it.
    NotRegistered,
    /// The arm's CPU proof carries, but no device of its runtime has run an island natively.
    Unwitnessed { runtime: String },
    /// No record of this device shows the arm exact, and it needs one: why, and why the record
    /// there is stale, if one is.
    NeedsRecord { needs: String, stale: Option<String> },
    /// The cell's record keeps an incumbent, but the twin or an incumbent changed since it was
    /// made (`crate::launch::staleness::cell`).
    Stale { record: Followed, because: String },
    /// The cell's record keeps an incumbent but names none.
    NoIncumbentNamed(Followed),
    /// The record's fastest incumbent is not bit-exact and no bit-exact one beats the twin.
    NotExact { record: Followed, fastest: String, distance: String },
    /// The record's incumbent is not registered in this build.
    IncumbentMissing { record: Followed, name: String },
    /// The record holds no current code hash of its incumbent (one it holds that changed since
    /// makes the record [`Why::Stale`]).
    IncumbentUnhashed { record: Followed, name: String },
}

impl Why {
    /// The record the ruling read, if it read one.
    pub fn record(&self) -> Option<&Followed> {
        match self {
            Why::Recorded(r)
            | Why::OtherDriver(r)
            | Why::FailedElsewhere(r)
            | Why::NoIncumbentNamed(r)
            | Why::DriverChanged { record: r, .. }
            | Why::MachineCodeUnchecked { record: r, .. }
            | Why::UnverifiedInexact { record: r, .. }
            | Why::Stale { record: r, .. }
            | Why::NotExact { record: r, .. }
            | Why::IncumbentMissing { record: r, .. }
            | Why::IncumbentUnhashed { record: r, .. } => Some(r),
            Why::Strict { record, .. } => record.as_ref(),
            Why::Forced { .. }
            | Why::ForcedAbsent { .. }
            | Why::NoRecord
            | Why::Divergence { .. }
            | Why::NotRegistered
            | Why::Unwitnessed { .. }
            | Why::NeedsRecord { .. } => None,
        }
    }

    /// What the record it read concluded, if it read one.
    pub fn verdict(&self) -> Option<Verdict> {
        self.record().map(|r| r.verdict)
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Forced { setting } => write!(f, "forced by {setting}"),
            Why::ForcedAbsent { setting, value, cell, runtime } => {
                write!(f, "{setting}=`{value}`, but no such incumbent of {cell} runs on `{runtime}`")
            }
            Why::NoRecord => f.write_str("no record of this device"),
            Why::Recorded(r) => write!(f, "the ledger's record of this device: {}", r.said),
            Why::OtherDriver(r) => {
                write!(f, "the ledger's record of this device under driver `{}`: {}", r.driver, r.said)
            }
            Why::DriverChanged { record, here } => {
                write!(f, "{}, but under driver {} (this one is {here}): the twin runs", record.said, record.driver)
            }
            Why::Divergence { cause, measured } => {
                write!(f, "a measured divergence of this device: {cause} ({measured})")
            }
            Why::FailedElsewhere(r) => write!(
                f,
                "it failed on {} ({}, driver `{}`): {}; a failed arm runs on no device until that record is re-gated",
                r.device, r.runtime, r.driver, r.said
            ),
            Why::MachineCodeUnchecked { why, .. } => {
                write!(f, "the record of this device concludes nothing: {why} (the machine-code check fails closed)")
            }
            Why::UnverifiedInexact { note, .. } => {
                write!(f, "the record of this device is unverified and its bit-exact half did not pass ({note})")
            }
            Why::Strict { stale: Some(why), .. } => {
                write!(f, "strict policy, and the record of this device is stale: {why}")
            }
            Why::Strict { record: Some(r), stale: None } => {
                write!(f, "strict policy, and the record of this device is {}", r.said)
            }
            Why::Strict { record: None, stale: None } => f.write_str(
                "strict policy, and the ledger has no `flipped` record of this arm on this device and driver",
            ),
            Why::NotRegistered => {
                f.write_str("no record of this device, and the arm is not registered, so no proof covers it here")
            }
            Why::Unwitnessed { runtime } => write!(
                f,
                "no device of runtime `{runtime}` has run an island natively (no record in the ledgers), so nothing \
                 shows its code generator's output exact; `ISLANDS_POLICY=trust` runs the arm on its CPU proof"
            ),
            Why::NeedsRecord { needs, stale: Some(stale) } => {
                write!(f, "the record of this device is stale ({stale}), and {needs}")
            }
            Why::NeedsRecord { needs, stale: None } => {
                write!(f, "no record of this device shows it exact, and {needs} (`islands gate` measures it)")
            }
            Why::Stale { record, because } => {
                write!(f, "{}, but the record is stale ({because}): the twin runs", record.said)
            }
            Why::NoIncumbentNamed(r) => write!(f, "{}, but the record names no incumbent", r.said),
            Why::NotExact { record, fastest, distance } => write!(
                f,
                "{}, but `{fastest}` is not bit-exact ({distance}) and no bit-exact incumbent is faster than the \
                 twin: the twin runs, for the same bytes on every backend (ISLANDS_CELLS=fastest runs `{fastest}`)",
                record.said
            ),
            Why::IncumbentMissing { record, name } => {
                write!(f, "{}, but `{name}` is not registered in this build", record.said)
            }
            Why::IncumbentUnhashed { record, name } => {
                write!(f, "{}, but it holds no current code hash of `{name}`", record.said)
            }
        }
    }
}
