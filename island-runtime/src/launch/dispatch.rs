//! Which candidate of a cell an engine runs on a device, from the cell records of the ledgers
//! (`islands gate --ops`), read once per process and logged once per cell and device (a warning
//! where an incumbent runs, information where the twin does).
//!
//! | the device's record of the cell | what runs |
//! |---|---|
//! | declined, failed or twin unsupported, and the record's fastest incumbent was bit-exact at every shape, registered for the runtime with the hash it was gated with | that incumbent |
//! | the same, but it was not bit-exact: the bit-exact incumbent faster than the twin at the most shapes | that incumbent |
//! | the same, but no bit-exact incumbent beats the twin | the twin, logged with the fastest incumbent's distance (`ISLANDS_CELLS=fastest`: that incumbent) |
//! | declined or failed, but that incumbent is gone or its code changed | the twin (logged) |
//! | declined or failed under another driver of the device | the twin (logged) |
//! | flipped, twin only, unverified, or no record | the twin |
//!
//! The seed keeps an incumbent wherever the twin is slower, so that the engine is never slower;
//! islands also promise the same bytes on every backend, so by default only a bit-exact
//! incumbent is kept: one that is faster but computes other bytes runs only under
//! `ISLANDS_CELLS=fastest` (`exact`, the default, is the other value).
//!
//! `ISLANDS_CANDIDATE` forces one candidate for measurement: `twin`, `default` (the twin with
//! `default` in every island), `incumbent` (the record's incumbent, else the first registered
//! for the runtime), or an incumbent's name. A value of either that names nothing known is an
//! error before any launch.

use crate::launch::cell::{CellError, CellKey, Incumbent, incumbent_hash, incumbents};
use crate::records::cell_record::{CellDecision, CellRecord};
use crate::records::ruling::{Followed, Verdict, Why};
use crate::tag::target::Target;
use crate::values::said::log_once_at;
use cubecl::prelude::Client;
use island_vocab::settings::{self, CANDIDATE, CELLS, Kind};
use std::sync::{Mutex, OnceLock};

/// What an op function runs.
#[derive(Clone, Copy, Debug)]
pub enum Choice {
    /// The island kernel, with this tag (its arms, or `default` when forced).
    Twin(Target),
    /// A hand-written kernel.
    Incumbent(&'static Incumbent),
}

impl Choice {
    /// `twin`, `default` or the incumbent's name.
    pub fn name(&self) -> &'static str {
        match self {
            Choice::Twin(t) if t.takes_defaults() => "default",
            Choice::Twin(_) => "twin",
            Choice::Incumbent(i) => i.name,
        }
    }
}

/// What [`choose_from`] decided for a cell: the candidate, and why, in the vocabulary arms
/// share ([`Why`]: the rule that applied, and the cell record it read, if any).
#[derive(Clone, Debug)]
pub struct Chosen {
    pub choice: Choice,
    pub why: Why,
}

impl Chosen {
    fn new(choice: Choice, why: Why) -> Chosen {
        Chosen { choice, why }
    }
}

/// A forced candidate (`ISLANDS_CANDIDATE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Forced {
    Twin,
    Default,
    Incumbent,
    Named(String),
}

impl Forced {
    /// Parses a value of `ISLANDS_CANDIDATE`; an incumbent's name must be registered somewhere.
    pub fn parse(value: &str) -> Result<Option<Forced>, CellError> {
        let Some(value) = CANDIDATE.parse(value, Kind::candidate)? else { return Ok(None) };
        Ok(Some(match value.as_str() {
            "twin" => Forced::Twin,
            "default" => Forced::Default,
            "incumbent" => Forced::Incumbent,
            name if crate::launch::cell::all_incumbents().iter().any(|r| r.incumbent.name == name) => {
                Forced::Named(value)
            }
            name => return Err(CANDIDATE.error(name).into()),
        }))
    }
}

/// Which incumbents a declined cell may run (`ISLANDS_CELLS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Only an incumbent bit-exact at every shape of the record (the default).
    Exact,
    /// The record's fastest incumbent, bit-exact or not (the seed's rule alone).
    Fastest,
}

impl Keep {
    /// Parses a value of `ISLANDS_CELLS` (empty: the default, `exact`).
    pub fn parse(value: &str) -> Result<Keep, CellError> {
        match CELLS.word(value)? {
            "exact" => Ok(Keep::Exact),
            "fastest" => Ok(Keep::Fastest),
            _ => Err(CELLS.error(value).into()),
        }
    }
}

/// This process's `ISLANDS_CELLS`, read once.
pub fn keep() -> Result<Keep, &'static CellError> {
    static KEEP: OnceLock<Result<Keep, CellError>> = OnceLock::new();
    KEEP.get_or_init(|| Keep::parse(settings::cells()?)).as_ref().copied()
}

/// Both settings of this process (`ISLANDS_CANDIDATE`, `ISLANDS_CELLS`), or the first that is
/// wrong: for a program to refuse them before it launches anything.
pub fn settings() -> Result<(), &'static CellError> {
    forced()?;
    keep()?;
    Ok(())
}

/// This process's `ISLANDS_CANDIDATE`, read once.
pub fn forced() -> Result<Option<&'static Forced>, &'static CellError> {
    static FORCED: OnceLock<Result<Option<Forced>, CellError>> = OnceLock::new();
    FORCED.get_or_init(|| Forced::parse(&settings::candidate()?.unwrap_or_default())).as_ref().map(Option::as_ref)
}

/// Whether `name` was bit-exact at every shape of `record` (and ran at one at least).
fn exact_in(record: &CellRecord, name: &str) -> bool {
    record.exact(name)
}

/// How `name` differs in `record`: `312 of 960 values differ, up to 153 ulp` at its worst shape.
fn distance_in(record: &CellRecord, name: &str) -> String {
    let worst = record
        .shapes
        .iter()
        .filter_map(|s| s.candidates.iter().find(|c| c.name == name))
        .max_by_key(|c| (c.error.is_some(), c.max_ulp));
    match worst {
        Some(c) if c.error.is_some() => "it did not run".into(),
        Some(c) => format!("{} of {} values differ, up to {} ulp", c.differing, c.values, c.max_ulp),
        None => "no evidence".into(),
    }
}

/// The candidate of `key` to run on `client`'s device: `records` are the cell records to consult
/// (`crate::records::embedded::cell_records`), `forced` an override, `keep` which incumbents a declined
/// cell may run. A record whose twin or incumbents changed since it was made
/// (`crate::launch::staleness::cell`, checked only where an incumbent would run) keeps no
/// incumbent.
pub fn choose_from(
    client: &Client,
    key: &CellKey,
    records: &[CellRecord],
    forced: Option<&Forced>,
    keep: Keep,
) -> Chosen {
    let runtime = crate::hardware::device::runtime_name(client);
    let mine = incumbents(key, Some(runtime));
    let twin = Choice::Twin(Target::for_client(client));
    let fp = crate::launch::cell::fingerprint(client);
    let record = {
        let all: Vec<&CellRecord> = records.iter().filter(|r| key.matches(r) && r.device.same_device(&fp)).collect();
        all.iter().find(|r| r.device.matches(&fp)).or(all.first()).copied()
    };
    let forced_by = Why::Forced { setting: CANDIDATE.name };
    let absent = |value: &str| Why::ForcedAbsent {
        setting: CANDIDATE.name,
        value: value.to_string(),
        cell: key.to_string(),
        runtime: runtime.to_string(),
    };
    match forced {
        Some(Forced::Twin) => return Chosen::new(twin, forced_by),
        Some(Forced::Default) => return Chosen::new(Choice::Twin(Target::default_for_client(client)), forced_by),
        Some(Forced::Incumbent) => {
            let named = record.and_then(|r| r.incumbent.as_deref()).and_then(|n| mine.iter().find(|i| i.name == n));
            return match named.or(mine.first()) {
                Some(i) => Chosen::new(Choice::Incumbent(i), forced_by),
                None => Chosen::new(twin, absent("incumbent")),
            };
        }
        Some(Forced::Named(name)) => {
            return match mine.iter().find(|i| i.name == name) {
                Some(i) => Chosen::new(Choice::Incumbent(i), forced_by),
                None => Chosen::new(twin, absent(name)),
            };
        }
        None => {}
    }
    let Some(record) = record else {
        return Chosen::new(twin, Why::NoRecord);
    };
    let followed = Followed::cell(record);
    if !record.decision.keeps_incumbent() {
        return Chosen::new(twin, Why::Recorded(followed));
    }
    // An incumbent's exactness was shown under one driver: another may compile it otherwise.
    if !record.device.matches(&fp) {
        return Chosen::new(twin, Why::DriverChanged { record: followed, here: fp.driver.clone() });
    }
    let Some(fastest) = record.incumbent.as_deref() else {
        return Chosen::new(twin, Why::NoIncumbentNamed(followed));
    };
    let name = match keep {
        Keep::Fastest => fastest,
        Keep::Exact if exact_in(record, fastest) => fastest,
        Keep::Exact => {
            // The bit-exact incumbent that is the fastest of the twin and the bit-exact
            // incumbents at the most shapes; none if the twin is (a slower exact incumbent is
            // no reason to leave the twin).
            let mut contenders: Vec<&str> = vec!["twin"];
            contenders
                .extend(record.code.iter().map(|(n, _)| n.as_str()).filter(|n| *n != "twin" && exact_in(record, n)));
            let us = |s: &crate::records::cell_record::ShapeEvidence, n: &str| {
                s.candidates.iter().find(|c| c.name == n).and_then(|c| c.us).map_or(f64::INFINITY, |u| u[1])
            };
            let wins =
                |n: &str| record.shapes.iter().filter(|s| contenders.iter().all(|o| us(s, n) <= us(s, o))).count();
            let best = contenders.iter().copied().filter(|n| *n != "twin").max_by_key(|n| wins(n));
            match best.filter(|n| wins(n) > wins("twin")) {
                Some(n) => n,
                None => {
                    let (fastest, distance) = (fastest.to_string(), distance_in(record, fastest));
                    return Chosen::new(twin, Why::NotExact { record: followed, fastest, distance });
                }
            }
        }
    };
    let name = name.to_string();
    match mine.iter().find(|i| i.name == name) {
        None => Chosen::new(twin, Why::IncumbentMissing { record: followed, name }),
        // Checked only here, where an incumbent would run: hashing the twin's code expands and
        // compiles its kernels, which a twin that runs anyway need not pay for.
        Some(i) => match crate::launch::staleness::cell(record) {
            Some(because) => Chosen::new(twin, Why::Stale { record: followed, because }),
            None if record.hash_of(&name) != Some(incumbent_hash(i).as_str()) => {
                Chosen::new(twin, Why::IncumbentUnhashed { record: followed, name })
            }
            None => Chosen::new(Choice::Incumbent(i), Why::Recorded(followed)),
        },
    }
}

/// What [`choose`] decided in this process: per (runtime, device name, device fingerprint, cell).
type Decided = Vec<((&'static str, String, String, CellKey), Choice)>;
static CHOSEN: Mutex<Decided> = Mutex::new(Vec::new());

/// The cells this process has dispatched on `client`'s device through [`choose`], with the
/// candidate each runs, in the order of their first launch: what an engine's step went through.
pub fn dispatched(client: &Client) -> Vec<(CellKey, &'static str)> {
    let id = &client.properties().identity;
    CHOSEN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|((runtime, name, fingerprint, _), _)| {
            *runtime == crate::hardware::device::runtime_name(client)
                && *name == id.name
                && *fingerprint == id.fingerprint
        })
        .map(|((_, _, _, key), choice)| (*key, choice.name()))
        .collect()
}

/// The candidate of `key` on `client`'s device, from this process's ledgers and
/// `ISLANDS_CANDIDATE`; the choice and its reason are logged once per cell and device. A wrong
/// setting or an unreadable ledger is an error. Decided once per cell and device: an engine calls
/// this at every launch of the op.
pub fn choose(client: &Client, key: &CellKey) -> Result<Choice, CellError> {
    let props = client.properties();
    let id = &props.identity;
    let seen = |((runtime, name, fingerprint, k), _): &&((&'static str, String, String, CellKey), Choice)| {
        *runtime == crate::hardware::device::runtime_name(client)
            && *name == id.name
            && *fingerprint == id.fingerprint
            && k == key
    };
    if let Some((_, choice)) = CHOSEN.lock().unwrap_or_else(|e| e.into_inner()).iter().find(seen) {
        return Ok(*choice);
    }
    let forced = forced().map_err(Clone::clone)?;
    let keep = keep().map_err(Clone::clone)?;
    let records = crate::records::embedded::cell_records().map_err(|e| CellError::Runtime(e.to_string()))?;
    let Chosen { choice, why } = choose_from(client, key, records, forced, keep);
    // An incumbent computes its own bytes (bit-exact ones included, on the inputs the gate saw):
    // that is worth a warning, and so is a twin the gate found not bit-exact; the twin is the
    // normal case.
    let failed = why.verdict() == Some(Verdict::Cell(CellDecision::Failed));
    let level = if matches!(choice, Choice::Incumbent(_)) || failed { log::Level::Warn } else { log::Level::Info };
    log_once_at(level, format!("cell {key} on {}", crate::hardware::device::runtime_name(client)), || {
        format!(
            "islands: cell {key} on `{}` runs `{}`: {why}",
            crate::hardware::device::runtime_name(client),
            choice.name()
        )
    });
    let entry =
        ((crate::hardware::device::runtime_name(client), id.name.clone(), id.fingerprint.clone(), *key), choice);
    CHOSEN.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
    Ok(choice)
}
