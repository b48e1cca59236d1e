//! The code hashes of an arm, `default` and the emulation as this build generates them for a
//! device: what a record was gated with, and what tells a launch whether it still describes the
//! build. Computed from the fingerprint alone, without the device.

use crate::codegen::lowering::{self, Codegen, LoweringError, Which};
use crate::hardware::fingerprint::Fingerprint;
use crate::records::record::{CodeHashes, code_hash};
use crate::tag::lifted::ProofSpec;
use crate::tag::registry::ArmEntry;
use cubecl::prelude::Client;
use island_vocab::{Backend, Executor, Profile};

/// The profile code hashes are computed with for a device: the backend's reference profile of
/// the device's plane width, with its compute capability. It depends on the fingerprint alone,
/// so a record's staleness can be checked on any machine, without the device.
pub fn hash_profile(device: &Fingerprint) -> Option<Profile> {
    let backend = backend_of(&device.runtime)?;
    let references = Profile::references(backend);
    let mut p =
        references.iter().copied().find(|p| p.plane == device.plane).unwrap_or(references[0].with_plane(device.plane));
    if backend == Backend::Cuda {
        p.sm = device.sm;
    }
    Some(p)
}

fn backend_of(runtime: &str) -> Option<Backend> {
    let name = Executor::CLIENT_NAMES.into_iter().find(|n| *n == runtime)?;
    Executor::from_client_name(name).backend()
}

/// The code hashes of `entry`'s arm and `default` for `device` (`host` lends buffers; nothing runs).
pub fn code_hashes(entry: &'static ArmEntry, device: &Fingerprint, host: &Client) -> Result<CodeHashes, LoweringError> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return Err(LoweringError::NoProofSignature(entry.name())) };
    let profile = hash_profile(device).ok_or(LoweringError::NotADevice)?;
    Ok(CodeHashes {
        codegen: Codegen::of(profile.backend).name().to_string(),
        arm: code_hash(&crate::values::canonical::canonical(&lowering::source(
            entry,
            lifted,
            &profile,
            Which::Arm,
            host,
        )?)),
        default: code_hash(&crate::values::canonical::canonical(&lowering::source(
            entry,
            lifted,
            &profile,
            Which::Default,
            host,
        )?)),
        emulation: code_hash(&crate::values::canonical::canonical(&lowering::source(
            entry,
            lifted,
            &profile,
            Which::Emulated,
            host,
        )?)),
    })
}
