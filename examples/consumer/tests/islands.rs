//! The consumer's proofs, generated from its registrations (the vendor's arms are proven in the
//! vendor's own tests).

use island_consumer as _;

islands::proofs::harness!();
