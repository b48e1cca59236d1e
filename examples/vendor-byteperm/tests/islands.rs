//! The vendor crate's proofs, lowering checks and (with a device runtime built in) conformance,
//! generated from its registrations.

use island_vendor_byteperm as _;

fn main() {
    proofs::main(env!("CARGO_PKG_NAME"), concat!(env!("CARGO_MANIFEST_DIR"), "/src").to_string())
}
