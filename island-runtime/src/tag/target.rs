//! The target tag: the comptime value every island matches on.
//!
//! A tag answers two separate questions, and keeping them apart is what lets any arm run on
//! the CPU:
//! - **which arms** are selected: the [`Profile`] of the backend whose arms are taken (or none,
//!   for `default` everywhere), optionally restricted to one island;
//! - **who executes**: the [`Executor`] and its plane width. An intrinsic inside an arm lowers
//!   natively when the executor is the device the arm was selected for, and to its emulation of
//!   that device's semantics otherwise (the CPU runtime running a `cuda` arm, say).

use crate::hardware::device::Exec;
use crate::records::ruling::Why;
use crate::records::view::DeviceLedger;
use cubecl::prelude::Client;
use island_vocab::{Backend, Executor, Profile, Site};
use serde::Serialize;
use std::fmt;

/// Which islands may take an accelerated arm.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
pub enum Scope {
    /// Every island of the kernel.
    All,
    /// Only the island with this id; every other island takes `default`.
    Island(&'static str),
    /// Only these islands, whose arm on the device is a formulation (it stands where `default`
    /// stands, `crate::launch::semantics::carry`); every other island takes `default`. What
    /// `default` means on a backend whose language lacks a type some `default` uses.
    Formulations(&'static [&'static str]),
}

/// The comptime tag of a kernel with islands. See the module docs. `Copy`, so a kernel can
/// hand it to every helper it calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    arms: Option<Profile>,
    scope: Scope,
    exec: Exec,
    /// The ledger's records of this device, when a launch consulted it ([`crate::records::ledger`]).
    ledger: Option<LedgerRef>,
}

/// A device's ledger view in a tag: compared by address (one view per device and process).
#[derive(Clone, Copy, Debug)]
pub struct LedgerRef(pub &'static DeviceLedger);

impl PartialEq for LedgerRef {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for LedgerRef {}

impl Serialize for LedgerRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{} ({} policy)", self.0.device, self.0.policy))
    }
}

/// Why an island took the arm it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The accelerated arm at this index.
    Arm(usize),
    /// `default`, and why.
    Default(DefaultReason),
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selection::Arm(i) => write!(f, "accelerated arm {i}"),
            Selection::Default(reason) => write!(f, "`default`: {reason}"),
        }
    }
}

/// Why `default` was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DefaultReason {
    /// The tag selects `default` everywhere (CPU, unknown runtime, or forced).
    NoAcceleration,
    /// The tag restricts acceleration to another island.
    OutOfScope,
    /// No arm is written for the backend.
    NoArm(Backend),
    /// Arms exist for the backend, but the device meets none of their guards.
    GuardUnmet { arm: &'static str, unmet: String },
    /// The arm's guard holds, but nothing shows it exact on this device, or its record says it
    /// does not run here (`crate::launch::policy`).
    Ledger { arm: &'static str, reason: Why },
}

impl fmt::Display for DefaultReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultReason::NoAcceleration => f.write_str("the tag selects default arms"),
            DefaultReason::OutOfScope => f.write_str("another island is under test"),
            DefaultReason::NoArm(b) => write!(f, "no arm for {b}"),
            DefaultReason::GuardUnmet { arm, unmet } => {
                write!(f, "arm `{arm}` needs `{unmet}`, which the device lacks")
            }
            DefaultReason::Ledger { arm, reason } => write!(f, "arm `{arm}` is not taken on this device: {reason}"),
        }
    }
}

impl Target {
    /// The same tag, consulting `ledger` as a launch on its device would.
    pub fn with_ledger(mut self, ledger: &'static DeviceLedger) -> Target {
        self.ledger = Some(LedgerRef(ledger));
        self
    }

    /// `default` in every island, executed by `client`'s runtime.
    pub fn default_arms(client: &Client) -> Target {
        Target { arms: None, scope: Scope::All, exec: crate::hardware::device::Device::of(client).exec, ledger: None }
    }

    /// The arms `profile` selects, executed by `client`'s runtime: natively where that runtime
    /// is the profile's device, through each intrinsic's emulation otherwise.
    pub fn forced(profile: Profile, client: &Client) -> Target {
        Target {
            arms: Some(profile),
            scope: Scope::All,
            exec: crate::hardware::device::Device::of(client).exec,
            ledger: None,
        }
    }

    /// A tag from its parts, for code generation without a client.
    pub fn from_parts(arms: Option<Profile>, exec: Exec) -> Target {
        Target { arms, scope: Scope::All, exec, ledger: None }
    }

    /// The same tag, with acceleration restricted to island `id`.
    pub fn only(mut self, id: &'static str) -> Target {
        self.scope = Scope::Island(id);
        self
    }

    /// The same tag, with acceleration restricted to the islands `ids` (their formulations).
    pub fn only_formulations(mut self, ids: &'static [&'static str]) -> Target {
        self.scope = Scope::Formulations(ids);
        self
    }

    /// The profile whose arms are selected, if any.
    pub fn arms(&self) -> Option<&Profile> {
        self.arms.as_ref()
    }

    /// Whether the tag takes `default` in every island, formulations standing for it
    /// ([`Scope::Formulations`]) where the backend's language cannot express it.
    pub fn takes_defaults(&self) -> bool {
        self.arms.is_none() || matches!(self.scope, Scope::Formulations(_))
    }

    /// The runtime executing the kernel.
    pub fn exec(&self) -> Exec {
        self.exec
    }

    /// Whether an intrinsic inside a selected arm lowers natively: the executor is the device
    /// the arm was selected for, at the same plane width. Otherwise it must emulate.
    pub fn is_native(&self) -> bool {
        match &self.arms {
            Some(p) => self.exec.executor == Executor::Device(p.backend) && self.exec.plane == p.plane,
            None => false,
        }
    }

    /// Whether the selected arm lowers natively on `backend`: the arm was selected for
    /// `backend` and `backend`'s device executes it.
    pub fn native_on(&self, backend: Backend) -> bool {
        self.is_native() && self.arms.is_some_and(|p| p.backend == backend)
    }

    /// The plane width whose semantics an arm's plane operations must reproduce: the selected
    /// profile's, or the hardware's when no arm is selected.
    pub fn plane(&self) -> u32 {
        self.arms.as_ref().map_or(self.exec.plane, |p| p.plane)
    }

    /// Which arm of `site` this tag takes, and why. The sites of a function come from
    /// [`sites_of!`](crate::sites_of): `target.explain(sites_of!(row_sum)[0])`, as
    /// `examples/src/rows.rs` asks before a launch.
    pub fn explain(&self, site: &Site) -> Selection {
        let Some(profile) = &self.arms else {
            return Selection::Default(DefaultReason::NoAcceleration);
        };
        match self.scope {
            Scope::Island(id) if id != site.id => return Selection::Default(DefaultReason::OutOfScope),
            Scope::Formulations(ids) if !ids.contains(&site.id) => {
                return Selection::Default(DefaultReason::NoAcceleration);
            }
            _ => {}
        }
        let mut unmet = None;
        for (i, arm) in site.arms.iter().enumerate() {
            if !arm.backends.contains(&profile.backend) {
                continue;
            }
            match arm.guard.first_unmet(profile) {
                None => {
                    if let Some(LedgerRef(ledger)) = self.ledger
                        && let Some(reason) = ledger.veto(site.id, &site.arm_label(i))
                    {
                        return Selection::Default(DefaultReason::Ledger { arm: arm.label, reason });
                    }
                    return Selection::Arm(i);
                }
                Some(atom) => {
                    unmet.get_or_insert(DefaultReason::GuardUnmet { arm: arm.label, unmet: atom.to_string() });
                }
            }
        }
        Selection::Default(unmet.unwrap_or(DefaultReason::NoArm(profile.backend)))
    }

    /// The index of the arm taken in `site`; `site.arms.len()` means `default`.
    ///
    /// Called by the code `island!` expands to, while the kernel is expanded: a comptime
    /// decision, so only the taken arm is lowered.
    pub fn select(&self, site: &Site) -> usize {
        match self.explain(site) {
            Selection::Arm(i) => i,
            Selection::Default(reason) => {
                match &reason {
                    DefaultReason::GuardUnmet { .. } => log::info!("islands: {} takes `default`: {reason}", site.id),
                    DefaultReason::Ledger { arm, reason: why } => {
                        crate::values::said::log_once(format!("{}::{arm}: {why}", site.id), || {
                            format!("islands: {} takes `default`: {reason}", site.id)
                        })
                    }
                    _ => {}
                }
                site.arms.len()
            }
        }
    }
}

/// Hashes one word packed from the tag's numeric fields; names and shape lists are left to
/// `Eq`. CubeCL hashes a kernel's comptime values several times per launch, and hashing the tag
/// field by field made an island launch measurably slower on the host than the same kernel
/// without a tag (`docs/perf.md`). Equal tags pack equal words.
impl std::hash::Hash for Target {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let executor = match self.exec.executor {
            Executor::Cpu => 0,
            Executor::Device(backend) => 1 + backend as u64,
            Executor::Unknown(_) => 15,
        };
        let arms = self.arms.map_or(0, |p| 1 | p.hash_word() << 1);
        let scope = !matches!(self.scope, Scope::All) as u64;
        state.write_u64(executor | (self.exec.plane as u64 & 0xff) << 4 | scope << 12 | arms << 13);
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.arms {
            None => write!(f, "default arms on {}", self.exec.executor)?,
            Some(p) if self.is_native() => write!(f, "{p} arms, native")?,
            Some(p) => write!(f, "{p} arms, emulated on {}", self.exec.executor)?,
        }
        match self.scope {
            Scope::All => {}
            Scope::Island(id) => write!(f, ", only {id}")?,
            Scope::Formulations(ids) => write!(f, ", only the {} formulations standing for `default`", ids.len())?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, RandomState};

    #[test]
    fn equal_tags_hash_equal_and_the_reference_tags_apart() {
        let hasher = RandomState::new();
        let exec = Exec { executor: Executor::Device(Backend::Cuda), plane: 32 };
        let mut tags = vec![Target::from_parts(None, exec)];
        for backend in Backend::ALL {
            tags.extend(Profile::references(backend).iter().map(|p| Target::from_parts(Some(*p), exec)));
        }
        for a in &tags {
            let copy = Target::from_parts(a.arms, a.exec);
            assert_eq!(hasher.hash_one(a), hasher.hash_one(copy), "{a}");
            for b in &tags {
                if a != b {
                    assert_ne!(hasher.hash_one(a), hasher.hash_one(b), "{a} and {b} share a hash");
                }
            }
        }
    }
}
