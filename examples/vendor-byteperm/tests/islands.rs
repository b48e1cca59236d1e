//! The vendor crate's proofs, lowering checks and (with a device runtime built in) conformance,
//! generated from its registrations.

use island_vendor_byteperm as _;

islands::proofs::harness!();
