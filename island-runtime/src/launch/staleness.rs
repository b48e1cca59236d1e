//! Whether a record still describes what this build runs: decided here once, for launches, the
//! harness's ledger trials and the scoreboard alike.
//!
//! - An arm record is stale when its arm, `default` or emulation hashes otherwise in this build
//!   for the record's device ([`crate::codegen::code_hash::code_hashes`]), or cannot be hashed.
//! - A cell record is stale when its op is no longer registered, or the twin's code
//!   ([`crate::launch::twin_code`]: every kernel it launches, as generated for the record's
//!   device) or a registered incumbent's hashes otherwise, or the twin's cannot be hashed: the
//!   record's speeds and exactness were measured on other code.
//! - A record is superseded where the same device has a newer record under another driver: it
//!   no longer says what that device does (launches match the exact driver, so they never take
//!   it; the scoreboard shows it as stale). Cell records are matched by the exact driver too.

use crate::launch::cell;
use crate::records::cell_record::CellRecord;
use crate::records::record::Record;
use crate::tag::registry::ArmEntry;
use cubecl::prelude::Client;

/// Why `record` no longer describes `entry` as this build generates it, if it does not (`host`
/// lends buffers for expansion; nothing runs).
pub fn arm(entry: &'static ArmEntry, record: &Record, host: &Client) -> Option<String> {
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

/// Why the cell `record` no longer describes this build's twin and incumbents, if it does not.
pub fn cell(record: &CellRecord) -> Option<String> {
    let Some(op) = cell::ops().into_iter().find(|o| o.op.key.matches(record)) else {
        return Some("the cell is not registered in this build".into());
    };
    match crate::launch::twin_code::twin_hash(op.op, &record.device) {
        Err(e) => return Some(format!("the twin's code hash cannot be computed by this build ({e})")),
        Ok(now) if record.hash_of("twin") != Some(now.as_str()) => {
            return Some("the twin's code changed since".into());
        }
        Ok(_) => {}
    }
    for inc in cell::incumbents(&op.op.key, Some(&record.device.runtime)) {
        if record.hash_of(inc.name).is_some_and(|h| h != cell::incumbent_hash(inc)) {
            return Some(format!("incumbent `{}` changed since", inc.name));
        }
    }
    None
}

/// The newer record of the same arm on the same device under another driver that supersedes
/// `record`, if one of `all` does.
pub fn superseded<'a>(record: &Record, all: &'a [Record]) -> Option<&'a Record> {
    all.iter().find(|o| {
        o.island == record.island
            && o.arm == record.arm
            && o.device != record.device
            && o.device.same_device(&record.device)
            && o.date > record.date
    })
}
