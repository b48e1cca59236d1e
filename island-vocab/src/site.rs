//! An island as the generated code describes it: its id and the key of each accelerated arm.

use crate::backend::Backend;
use crate::capability::Guard;
use crate::profile::Profile;

/// One island as the kernel sees it: a stable id and its accelerated arms, in source order.
/// `default` is not listed: it is what a tag selects when no arm is taken.
#[derive(Debug)]
pub struct Site {
    /// `crate::module::kernel#n`: stable across builds (no line numbers in it).
    pub id: &'static str,
    /// The accelerated arms, in source order.
    pub arms: &'static [ArmSpec],
}

impl Site {
    /// The arm a device of `profile` takes, before any ledger: the first whose backend and
    /// guard admit it; `None` when it takes `default`.
    pub fn selected_arm(&self, profile: &Profile) -> Option<usize> {
        self.arms.iter().position(|arm| arm.admits(profile))
    }

    /// The name of arm `i` in tests, records and reports: its pattern as written (`cuda | hip`),
    /// with its guard appended (`cuda if sm >= 90`) when another arm of the island has the same
    /// pattern (tiered arms of one backend), so every arm has a name of its own.
    pub fn arm_label(&self, i: usize) -> std::borrow::Cow<'static, str> {
        let arm = &self.arms[i];
        let shared = self.arms.iter().enumerate().any(|(j, other)| j != i && other.label == arm.label);
        if !shared || arm.guard.is_empty() {
            return arm.label.into();
        }
        format!("{} if {}", arm.label, arm.guard).into()
    }
}

/// An accelerated arm's key: the backends it is written for and its guard.
#[derive(Debug)]
pub struct ArmSpec {
    /// The arm's pattern as written, e.g. `cuda | hip`.
    pub label: &'static str,
    /// The backends of the pattern.
    pub backends: &'static [Backend],
    /// The capability guard (`if …`), empty when none.
    pub guard: Guard,
}

impl ArmSpec {
    /// Whether this arm is taken for `profile` (before any ledger says otherwise).
    pub fn admits(&self, profile: &Profile) -> bool {
        self.backends.contains(&profile.backend) && self.guard.holds(profile)
    }
}
