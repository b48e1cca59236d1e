//! The facts a device's ledger view needs beyond its records ([`ArmFacts`]), computed without
//! running anything: per registered arm the device's profile admits, whether its CPU proof
//! carries to the device (`crate::launch::semantics`), and whether the record of this exact device
//! still hashes as the build does (`crate::codegen::code_hash::code_hashes`).

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
                .and_then(|r| stale(entry, r, host));
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

/// Why `record` no longer describes `entry` as this build generates it, if it does not.
pub fn stale(entry: &'static ArmEntry, record: &Record, host: &Client) -> Option<String> {
    let hashes = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::codegen::code_hash::code_hashes(entry, &record.device, host)
    }))
    .unwrap_or_else(|p| {
        Err(crate::codegen::lowering::LoweringError::Generator(format!(
            "the code generator panicked: {}",
            crate::values::readback::panic_text(&p)
        )))
    });
    match hashes {
        Err(e) => Some(format!("its code hashes cannot be computed by this build ({e})")),
        Ok(now) => record
            .code
            .changed(&now)
            .map(|(what, then, hash)| format!("{what} changed since it was gated (hash {then}, now {hash})")),
    }
}
