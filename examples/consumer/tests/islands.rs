//! The consumer's proofs, generated from its registrations (the vendor's arms are proven in the
//! vendor's own tests).

use island_consumer as _;

fn main() {
    proofs::main(env!("CARGO_PKG_NAME"), concat!(env!("CARGO_MANIFEST_DIR"), "/src").to_string())
}
