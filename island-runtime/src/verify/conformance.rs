//! Device conformance: an arm's native lowering on a device against its emulation on the CPU
//! runtime, both with the device's own profile; and an island's `default` on the device against
//! the same `default` on the CPU, byte for byte (what a CPU proof assumes of every device).

use crate::hardware::divergence::Scope;
use crate::tag::lifted::ProofSpec;
use crate::tag::registry::ArmEntry;
use crate::tag::target::Target;
use crate::verify::compare::{Side, compare_sides, compare_sides_header};
use crate::verify::proof_run::{ProofOptions, ProofRun, Verdict};
use cubecl::prelude::*;
use island_vocab::{Executor, Expect};

/// Conformance of one arm on a device: its native lowering on `device` against its emulation
/// on `cpu`, both with the device's own profile. The run fails, rather than compares, unless the
/// native side really is native: a GPU runtime, with a tag whose arm lowers natively there, and
/// the emulation side on the CPU runtime. A fixture of a wrong native lowering
/// ([`Expect::NativeMismatch`]) must mismatch here.
pub fn conform(entry: &'static ArmEntry, device: &Client, cpu: &Client, options: &ProofOptions) -> Option<ProofRun> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return None };
    let profile = crate::hardware::device::profile(device)?;
    if !crate::tag::registry::selects(entry, &profile) {
        return None;
    }
    let native = Side { client: device, target: Target::forced(profile, device).only(entry.site.id), label: "native" };
    let emulation = Side { client: cpu, target: Target::forced(profile, cpu).only(entry.site.id), label: "emulation" };
    // A wrong arm is wrong natively too; a canary of a changed `default` has right arms.
    let expect = match entry.expect {
        Expect::Equal | Expect::DefaultMismatch => Expect::Equal,
        Expect::Mismatch | Expect::NativeMismatch => Expect::Mismatch,
    };
    let what_ran = match (
        native.target.is_native(),
        crate::hardware::device::Device::of(device).exec.executor,
        crate::hardware::device::Device::of(cpu).exec.executor,
    ) {
        (true, Executor::Device(_), Executor::Cpu) => None,
        (native_tag, device_exec, cpu_exec) => Some(format!(
            "the native side must run natively on a device and the emulation on the CPU runtime; \
             here the native tag lowers natively: {native_tag}, the device side runs on {device_exec}, the emulation on {cpu_exec}"
        )),
    };
    let mut run = match what_ran {
        None => compare_sides(entry, lifted, profile, native, emulation, options),
        Some(reason) => {
            let mut run = compare_sides_header(entry, lifted, profile, &native, &emulation, options);
            run.verdict = Verdict::Error { reason };
            run
        }
    };
    run.expect = expect;
    if expect == Expect::Equal {
        run.verdict = within_divergence(run.verdict, crate::hardware::divergence::known(&profile, entry.site.id), "");
    }
    Some(run)
}

/// A mismatch that a known divergence covers (every differing cube holds one of its measured
/// groups) becomes `Declined`; one that differs outside them stays a mismatch, and says so.
pub fn within_divergence(
    verdict: Verdict,
    divergence: Option<&crate::hardware::divergence::Divergence>,
    what: &str,
) -> Verdict {
    let (Verdict::Mismatch { report, cubes }, Some(d)) = (&verdict, divergence) else { return verdict };
    match d.scope(cubes) {
        Scope::Within => Verdict::Declined {
            report: format!(
                "declined on this device: {what}{}\n  measured: {}\n{report}",
                d.quirk.cause, d.quirk.measured
            ),
        },
        Scope::Outside(held) => {
            let held: Vec<String> =
                held.iter().map(|g| g.iter().map(|g| g.name()).collect::<Vec<_>>().join(" + ")).collect();
            Verdict::Mismatch {
                report: format!(
                    "{report}\n  a known divergence of this device covers the groups {:?} only; these cubes differ outside them: {}\n  known: {}",
                    d.quirk.groups.iter().map(|g| g.name()).collect::<Vec<_>>(),
                    held.join("; "),
                    d.quirk.cause
                ),
                cubes: cubes.clone(),
            }
        }
    }
}

/// An island's `default` executed by `device` against the same `default` executed by the CPU
/// runtime, on the island's proof inputs, held to byte equality: `default` defines the bytes,
/// and a device compiler that contracts `a * b + c` into a fused multiply-add, flushes
/// subnormals or approximates a division computes others. `entry` is any registered arm of
/// the island (its lifted kernel carries the island's `default`). `None` for an island
/// without a proof signature or a CPU `device`.
pub fn defaults(entry: &'static ArmEntry, device: &Client, cpu: &Client, options: &ProofOptions) -> Option<ProofRun> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return None };
    let profile = crate::hardware::device::profile(device)?;
    let on_device = Side { client: device, target: Target::default_for_client(device), label: "device default" };
    let on_cpu = Side { client: cpu, target: Target::default_arms(cpu), label: "CPU default" };
    let mut run = compare_sides(entry, lifted, profile, on_device, on_cpu, options);
    run.arm = "default";
    run.lowering = "default";
    run.expect = Expect::Equal;
    if entry.expect == Expect::DefaultMismatch {
        // A canary of a `default` that a contracting compiler changes: where the backend is
        // known to contract, the device's `default` must differ; where its driver decides, the
        // outcome is reported, never passed as a catch.
        match profile.backend.contraction() {
            island_vocab::Contraction::Contracts => run.expect = Expect::Mismatch,
            island_vocab::Contraction::DriverDefined => {
                if let Verdict::Mismatch { report, .. } = &run.verdict {
                    run.verdict = Verdict::Declined {
                        report: format!(
                            "this device's compiler contracts a product feeding an add (its driver decides; measured here)\n{report}"
                        ),
                    };
                }
            }
        }
        return Some(run);
    }
    run.verdict = within_divergence(
        run.verdict,
        crate::hardware::divergence::known_default(&profile, entry.site.id),
        "`default` itself differs: ",
    );
    Some(run)
}
