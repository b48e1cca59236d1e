//! Floor 3, records: the evidence ledgers (each crate's `ledger.json`), their arm and cell records,
//! the embedded ledgers a process consults, and a device's view of them.

pub mod cell_record;
pub mod embedded;
pub mod ledger;
pub mod record;
pub mod ruling;
pub mod view;
