//! Floor 2, hardware: the device behind a client (executor, plane width, fingerprint) and what
//! devices were measured to do differently (quirks, known divergences).

pub mod device;
pub mod divergence;
pub mod fingerprint;
pub mod nvrtc;
pub mod quirks;
