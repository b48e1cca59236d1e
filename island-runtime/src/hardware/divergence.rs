//! Known divergences: islands whose native lowering was measured to differ from its emulation on
//! a particular device ([`Of::Native`]), or whose `default` on a device differs from the same
//! `default` on the CPU runtime ([`Of::Default`]), with the cause. Conformance reports such an
//! arm *declined* on that device (never proven) instead of failing, but only where every
//! differing cube holds one of the value groups the record was measured on: any other difference
//! still fails. Each record names the device as its driver reports it, the groups that differ,
//! the run that measured it, and what differs.
//!
//! The crate that owns the islands submits their records ([`crate::divergence!`]), as it
//! registers their arms; the runtime knows none by name.

use crate::hardware::quirks::Quirk;
use crate::values::inputs::Group;
use island_vocab::Profile;
use std::collections::BTreeMap;

/// What was measured to differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Of {
    /// The arm's native lowering on the device, against its emulation on the CPU: the arm is
    /// declined there.
    Native,
    /// The island's `default` on the device, against the same `default` on the CPU runtime: no
    /// arm can be proven equal to it there. Each is an open defect of the SDK on that device.
    Default,
}

/// One measured divergence: a device quirk ([`crate::hardware::quirks`]) and the islands it was measured
/// on.
#[derive(Debug)]
pub struct Divergence {
    pub of: Of,
    pub quirk: &'static Quirk,
    /// The island ids it covers.
    pub islands: &'static [&'static str],
}

inventory::collect!(Divergence);

/// Submits a [`Divergence`] from the crate that owns its islands:
/// `island_runtime::divergence!(Divergence { of: Of::Native, quirk: &quirks::…, islands: &[…] });`
#[macro_export]
macro_rules! divergence {
    ($record:expr) => {
        $crate::__private::inventory::submit! { $record }
    };
}

/// Every divergence the linked crates submitted.
pub fn all() -> impl Iterator<Item = &'static Divergence> {
    inventory::iter::<Divergence>.into_iter()
}

/// The known divergence of `island`'s native lowering on the device of `profile`, if one is
/// recorded.
pub fn known(profile: &Profile, island: &str) -> Option<&'static Divergence> {
    find(all().filter(|d| d.of == Of::Native), profile, island)
}

/// The measured difference of `island`'s `default` on the device of `profile`, if one is recorded.
pub fn known_default(profile: &Profile, island: &str) -> Option<&'static Divergence> {
    find(all().filter(|d| d.of == Of::Default), profile, island)
}

/// The divergence of `island` on the device of `profile` among `records`.
pub fn find<'a>(
    records: impl IntoIterator<Item = &'a Divergence>,
    profile: &Profile,
    island: &str,
) -> Option<&'a Divergence> {
    records.into_iter().find(|d| {
        d.quirk.on.iter().any(|(backend, device)| *backend == profile.backend && profile.name.contains(device))
            && d.islands.contains(&island)
    })
}

/// How a measured difference relates to a known divergence.
#[derive(Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every differing cube holds one of the divergence's groups.
    Within,
    /// Some differing cubes hold none of them: a difference the record does not cover.
    Outside(Vec<Vec<Group>>),
}

impl Divergence {
    /// Whether the differing cubes of a comparison (counted by the groups they hold, as
    /// [`crate::verify::report::Difference::cubes`]) all lie within the groups this divergence was
    /// measured on.
    pub fn scope(&self, cubes: &BTreeMap<Vec<Group>, usize>) -> Scope {
        let outside: Vec<Vec<Group>> =
            cubes.keys().filter(|held| !held.iter().any(|g| self.quirk.groups.contains(g))).cloned().collect();
        if outside.is_empty() { Scope::Within } else { Scope::Outside(outside) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_divergence_covers_only_its_groups() {
        let d = Divergence {
            of: Of::Native,
            quirk: &crate::hardware::quirks::NVIDIA_VULKAN_FLUSHES_SUBGROUP_SUBNORMALS,
            islands: &[],
        };
        let cubes = |held: &[&[Group]]| held.iter().map(|g| (g.to_vec(), 1)).collect::<BTreeMap<_, _>>();
        assert_eq!(d.scope(&cubes(&[&[Group::Subnormals], &[Group::Edges]])), Scope::Within);
        assert_eq!(
            d.scope(&cubes(&[&[Group::Subnormals], &[Group::Realistic]])),
            Scope::Outside(vec![vec![Group::Realistic]])
        );
        // A cube of several inputs is covered when one of its inputs holds a measured group.
        assert_eq!(d.scope(&cubes(&[&[Group::Random, Group::Subnormals]])), Scope::Within);
    }
}
