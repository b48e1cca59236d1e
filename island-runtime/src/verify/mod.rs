//! Floor 7, verification: proofs on the CPU runtime, device conformance, the gates of arms and
//! cells, their comparison engine, reports and timing. The top floor: nothing below names it.

pub mod bench;
pub mod cell_gate;
pub mod compare;
pub mod conformance;
pub mod gate;
pub mod proof;
pub mod proof_run;
pub mod report;
