//! Floor 6, launch: what a launch runs on a device. The runtimes this build can launch on, the
//! tag a launch fills in, the policy and the facts it consults, and which candidate of a cell an
//! engine dispatches. It never reaches
//! the verification floor: a launch reads evidence, it does not produce it.

pub mod cell;
pub mod dispatch;
pub mod evidence;
pub mod for_client;
pub mod policy;
pub mod runtimes;
pub mod semantics;
pub mod staleness;
pub mod twin_code;
