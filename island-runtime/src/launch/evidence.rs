//! The facts a device's ledger view needs beyond its records ([`ArmFacts`]), computed without
//! running anything: per registered arm the device's profile admits, whether its CPU proof
//! carries to the device (`crate::launch::semantics`), and whether the record of this exact device
//! still hashes as the build does (`crate::launch::staleness::arm`).

use crate::hardware::fingerprint::Fingerprint;
use crate::records::record::{Decision, Record};
use crate::records::view::{ArmFacts, Carry};
use crate::tag::registry::{self, ArmEntry};
use cubecl::prelude::Client;
use island_vocab::{Expect, Profile};

/// The facts of `entries` on `device` of `profile`, with `records` (`host` lends buffers for
/// expansion; nothing runs).
///
/// `planes` is the range of plane widths the device's driver may run a kernel with (narrowest,
/// widest): an arm that lowers plane operations was proven at one width, so where the driver
/// may pick another, it needs a record (`crate::launch::semantics::carry`).
pub fn facts_of(
    entries: &[&'static ArmEntry],
    device: &Fingerprint,
    profile: &Profile,
    records: &[Record],
    host: &Client,
    planes: (u32, u32),
) -> Vec<((String, String), ArmFacts)> {
    entries
        .iter()
        .filter(|e| crate::tag::registry::selects(e, profile))
        .map(|&entry| {
            let key = (entry.site.id.to_string(), entry.label().to_string());
            let carry = if entry.expect != Expect::Equal {
                Carry::Record("the arm is a negative fixture, written to differ from `default`".to_string())
            } else {
                crate::launch::semantics::carry(entry, profile, host, planes)
            };
            let record = records.iter().find(|r| r.island == key.0 && r.arm == key.1 && r.device == *device);
            let stale = record
                .filter(|r| r.decision == Decision::Flipped || r.decision == Decision::Unverified)
                .and_then(|r| crate::launch::staleness::arm(entry, r, host));
            (key, ArmFacts { carry, stale })
        })
        .collect()
}

/// [`facts_of`] every registered arm, on the device behind `host`.
pub fn facts(
    device: &Fingerprint,
    profile: &Profile,
    records: &[Record],
    host: &Client,
) -> Vec<((String, String), ArmFacts)> {
    let d = crate::hardware::device::Device::of(host);
    facts_of(registry::arms(), device, profile, records, host, (d.plane_min, d.exec.plane))
}
