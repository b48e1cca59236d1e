//! The registry of accelerated arms, filled by `#[islands]` through `inventory`.
//!
//! Every accelerated arm of every island in every linked crate submits one [`ArmEntry`]. The
//! entries are plain data (strings, constants and function pointers), read once and sorted.

use crate::tag::lifted::ProofSpec;
use island_vocab::{ArmSpec, Expect, Site};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One accelerated arm of one island.
#[derive(Debug)]
pub struct ArmEntry {
    /// The crate that wrote the island (`CARGO_PKG_NAME`).
    pub krate: &'static str,
    /// The function holding the island, with its module path.
    pub function: &'static str,
    /// The island.
    pub site: &'static Site,
    /// The arm's index in `site.arms`.
    pub arm: usize,
    /// Where the arm is written.
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
    /// How its proof runs.
    pub proof: ProofSpec,
    /// What the proof must conclude.
    pub expect: Expect,
}

inventory::collect!(ArmEntry);

impl ArmEntry {
    /// The arm's key.
    pub fn spec(&self) -> &'static ArmSpec {
        &self.site.arms[self.arm]
    }

    /// The arm's name in records and reports ([`Site::arm_label`]: its pattern, with its guard
    /// where another arm of the island shares the pattern).
    pub fn label(&self) -> std::borrow::Cow<'static, str> {
        self.site.arm_label(self.arm)
    }

    /// `island-id::arm-label`, the name of its test.
    pub fn name(&self) -> String {
        format!("{}::{}", self.site.id, self.label().replace(' ', ""))
    }

    /// `file:line:column`.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Every registered arm, sorted by name. Two registrations under one name are a bug in the
/// crates that wrote them (an island id must be unique), reported by [`duplicates`].
pub fn arms() -> &'static [&'static ArmEntry] {
    static ARMS: OnceLock<Vec<&'static ArmEntry>> = OnceLock::new();
    ARMS.get_or_init(|| {
        let mut all: Vec<&'static ArmEntry> = inventory::iter::<ArmEntry>.into_iter().collect();
        all.sort_by_key(|e| (e.name(), e.location()));
        all
    })
}

/// One arm of each island, its first registered one that is not a negative fixture: what a
/// run about the island itself (its `default`) needs, as islands have no entry of their own.
pub fn islands() -> Vec<&'static ArmEntry> {
    let mut seen: Vec<&str> = Vec::new();
    arms()
        .iter()
        .copied()
        .filter(|e| matches!(e.expect, island_vocab::Expect::Equal | island_vocab::Expect::DefaultMismatch))
        .filter(|e| {
            let first = !seen.contains(&e.site.id);
            seen.push(e.site.id);
            first
        })
        .collect()
}

/// Names registered more than once.
pub fn duplicates() -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for e in arms() {
        *seen.entry(e.name()).or_default() += 1;
    }
    seen.into_iter().filter(|(_, n)| *n > 1).map(|(name, _)| name).collect()
}

/// The registered arms of one crate.
pub fn arms_of(krate: &str) -> Vec<&'static ArmEntry> {
    arms().iter().copied().filter(|e| e.krate == krate).collect()
}

/// Whether the device of `profile` takes `entry`'s arm of its island (before any ledger).
pub fn selects(entry: &ArmEntry, profile: &island_vocab::Profile) -> bool {
    entry.site.selected_arm(profile) == Some(entry.arm)
}
