//! The two-part gate: an arm flips on a device only when it is bit-exact there *and* no more than
//! 3 % slower than `default` (the threshold 0.97, the seed's "≥ 97 % as fast").
//!
//! - **Bit-exact half**: the CPU proof of the arm under the device's own profile, and device
//!   conformance (native code on the device against its emulation on the CPU, native execution
//!   asserted), plus the table instructions found in the code CubeCL generated for the device.
//! - **Speed half**: the island's lifted kernel, once with the arm forced natively and once with
//!   `default`, on the proof recipe scaled up (the recipe's value groups, repeated) from
//!   [`GateOptions::lanes`] lanes until one dispatch of `default` takes [`MIN_KERNEL`]: buffers
//!   created once, `dispatches` launches back to back and one
//!   sync per sample, `rounds` paired samples in alternating order. Each round gives a ratio
//!   `default`'s time / the arm's; the arm passes when the ratios are at the threshold or above
//!   (0.97 unless the island sets another) beyond their spread, and is declined when they are
//!   below it beyond their spread. Ratios that straddle the threshold are measured again, twice
//!   at most; then their median decides and the record says so ([`speed_decision`]).
//!
//! The result is a [`Record`] for the device's ledger.

use crate::codegen::code_hash::code_hashes;
use crate::codegen::lowering::{self, Codegen};
use crate::records::record::{
    CodeHashes, ConformanceEvidence, Decision, MachineCodeEvidence, ProofEvidence, Record, SpeedEvidence,
};
use crate::tag::lifted::{self, ProofSpec};
use crate::tag::registry::ArmEntry;
use crate::tag::target::Target;
use crate::values::readback::panic_text;
use crate::verify::bench::SyncError;
use crate::verify::compare::RunError;
use crate::verify::proof;
use crate::verify::proof_run::{ProofOptions, ProofRun, Verdict};
use cubecl::prelude::Client;
use island_vocab::Expect;
use island_vocab::{Backend, Profile};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The speed half scales a lifted island up until one dispatch of `default` takes this long.
pub const MIN_KERNEL: std::time::Duration = std::time::Duration::from_micros(200);

/// ... but never past this many bytes of inputs and output in all,
const MAX_BYTES: usize = 1 << 30;
/// nor past this many in one buffer (wgpu's default limit of a storage buffer binding).
const MAX_BUFFER: usize = 1 << 27;

/// Settings of a gate run.
#[derive(Clone, Debug)]
pub struct GateOptions {
    pub proof: ProofOptions,
    /// The speed half's pass mark: `default`'s time / the arm's must reach it.
    pub threshold: f64,
    /// Lanes per dispatch of the speed half to start from (rounded to whole cubes); scaled up by
    /// 4× until `default` takes [`MIN_KERNEL`] per dispatch, within 1 GiB of buffers and 128 MiB
    /// per buffer.
    pub lanes: u32,
    pub dispatches: usize,
    pub rounds: usize,
    /// Run the speed half (`false`: the bit-exact half only, as CI does on lavapipe).
    pub speed: bool,
}

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            proof: ProofOptions::default(),
            threshold: crate::records::record::DEFAULT_THRESHOLD,
            lanes: 1 << 20,
            dispatches: 50,
            rounds: 7,
            speed: true,
        }
    }
}

/// Gates `entry` on the device behind `device` (with `cpu` for the oracle). `None` when the device
/// does not select the arm, or the arm is a negative fixture.
pub fn gate(entry: &'static ArmEntry, device: &Client, cpu: &Client, options: &GateOptions) -> Option<Record> {
    if entry.expect != Expect::Equal {
        return None;
    }
    let ProofSpec::Lifted(lifted) = &entry.proof else { return None };
    let view = crate::hardware::device::Device::of(device);
    let profile = view.profile?;
    if !crate::tag::registry::selects(entry, &profile) {
        return None;
    }
    let fingerprint = view.fingerprint.clone()?;
    let mut notes: Vec<String> = Vec::new();

    let code = code_hashes(entry, &fingerprint, cpu).unwrap_or_else(|e| {
        notes.push(format!("code hashes: {e}"));
        CodeHashes {
            codegen: Codegen::of(profile.backend).name().into(),
            arm: "-".into(),
            default: "-".into(),
            emulation: "-".into(),
        }
    });
    let proof_run = proof::prove_profile(entry, profile, cpu, &options.proof)?;
    let conformance_run = crate::verify::conformance::conform(entry, device, cpu, &options.proof)?;

    let native_target = Target::forced(profile, device).only(entry.site.id);
    let sources = match (
        lowering::device_source(lifted, native_target, device),
        lowering::device_source(lifted, Target::default_for_client(device), device),
    ) {
        (Ok(arm), Ok(default)) => Some((arm, default)),
        (Err(e), _) | (_, Err(e)) => {
            notes.push(format!("device code: {e}"));
            None
        }
    };
    let instructions: Vec<String> = match &sources {
        Some((arm, default)) => crate::tag::intrinsic::instructions(profile.backend)
            .into_iter()
            .filter(|i| arm.contains(i) && !default.contains(i))
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    };
    let machine_code = sources.as_ref().map(|(arm, default)| machine_evidence(&profile, &instructions, arm, default));
    let native = native_target.is_native() && !matches!(conformance_run.verdict, Verdict::Error { .. });

    let exact = bit_exact(&proof_run, &conformance_run);
    let mut speed = None;
    let decision = match exact {
        Err(decision) => decision,
        Ok(()) if instructions.is_empty() => {
            notes.push(format!(
                "the code CubeCL generated for this device has none of the table's {} instructions: the arm is not accelerated here",
                profile.backend
            ));
            Decision::Unverified
        }
        Ok(())
            if profile.backend == Backend::Cuda
                && machine_code.as_ref().is_none_or(|m| m.how.starts_with(MachineCodeEvidence::NOT_OBTAINED)) =>
        {
            notes.push(format!(
                "the machine code the GPU runs could not be read ({}): what the table promises is unchecked, so nothing is concluded",
                machine_code.as_ref().map_or("no device source", |m| m.how.as_str())
            ));
            Decision::Unverified
        }
        Ok(()) if machine_code.as_ref().is_some_and(|m| !m.missing.is_empty()) => {
            notes.push(format!(
                "the machine code the GPU runs lacks what the table promises for {}: not accelerated here",
                machine_code.as_ref().map(|m| m.missing.join(", ")).unwrap_or_default()
            ));
            Decision::DeclinedMachineCode
        }
        Ok(()) if !options.speed => Decision::Unverified,
        Ok(()) => match time(entry, lifted, profile, device, options) {
            Ok(s) => {
                let (d, settled) = speed_decision(&s.ratios, s.threshold);
                if !settled {
                    notes.push(format!(
                        "speed within the noise of the threshold after {} rounds: the median ratio {:.3} decided",
                        s.ratios.len(),
                        s.speedup
                    ));
                }
                speed = Some(s);
                d
            }
            Err(e) => {
                notes.push(format!("speed half: {e}"));
                Decision::Unverified
            }
        },
    };
    if !options.speed && exact.is_ok() {
        notes.push("bit-exact half only (no timing)".into());
    }
    Some(Record {
        island: entry.site.id.to_string(),
        arm: entry.label().to_string(),
        device: fingerprint,
        code,
        proof: ProofEvidence {
            verdict: proof_run.verdict_word().to_string(),
            seed: proof_run.seed.clone(),
            depth: options.proof.depth,
            inputs: proof_run.inputs,
            contract: proof_run.contract.clone(),
        },
        conformance: ConformanceEvidence {
            verdict: conformance_run.verdict_word().to_string(),
            native,
            instructions,
            report: conformance_run.detail().map(|d| d.lines().take(8).collect::<Vec<_>>().join("\n")),
            machine_code,
        },
        speed,
        decision,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
        date: today(),
        sdk: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// What the GPU runs, for the table instructions `instructions` found in the arm's `arm` source
/// (`default`'s is `default`): on CUDA, both compiled to machine code and the arm's listing
/// searched for what each instruction must become; elsewhere, why it cannot be inspected.
fn machine_evidence(
    profile: &Profile,
    instructions: &[String],
    arm: &str,
    default: &str,
) -> crate::records::record::MachineCodeEvidence {
    if profile.backend != Backend::Cuda {
        return MachineCodeEvidence {
            how: format!(
                "not inspectable on this driver: CubeCL reaches {} through wgpu, which exposes no pipeline executable properties",
                profile.backend
            ),
            ..Default::default()
        };
    }
    match (crate::codegen::machine_code::cuda(arm, profile.sm), crate::codegen::machine_code::cuda(default, profile.sm))
    {
        (Ok(arm_code), Ok(default_code)) => {
            crate::codegen::machine_code::judge(profile.backend, instructions, &arm_code, &default_code)
        }
        (Err(e), _) | (_, Err(e)) => {
            MachineCodeEvidence { how: format!("{}: {e}", MachineCodeEvidence::NOT_OBTAINED), ..Default::default() }
        }
    }
}

/// `Ok` when both runs of the bit-exact half hold; otherwise the decision they force.
fn bit_exact(proof_run: &ProofRun, conformance: &ProofRun) -> Result<(), Decision> {
    match &proof_run.verdict {
        Verdict::Proven | Verdict::DeviceEvidenceOnly { .. } => {}
        Verdict::Mismatch { .. } => return Err(Decision::Failed),
        _ => return Err(Decision::Unverified),
    }
    match &conformance.verdict {
        // Within a tolerance is not bit-exact: the arm computes other bytes than `default`.
        Verdict::Proven if !(proof_run.bit_exact && conformance.bit_exact) => Err(Decision::DeclinedTolerance),
        Verdict::Proven => Ok(()),
        Verdict::Declined { .. } => Err(Decision::DeclinedDivergence),
        Verdict::Mismatch { .. } => Err(Decision::Failed),
        _ => Err(Decision::Unverified),
    }
}

/// Why the speed half timed nothing.
#[derive(Debug, thiserror::Error)]
enum TimingError {
    /// Not launched on this device: `lowering::launch_hazard`'s reason.
    #[error("{0}")]
    NotLaunched(String),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("a launch panicked: {0}")]
    Panicked(String),
    #[error(transparent)]
    Sync(#[from] SyncError),
}

/// The speed half: the lifted island with the arm (native) and with `default`, side by side.
fn time(
    entry: &'static ArmEntry,
    lifted: &'static lifted::Lifted,
    profile: Profile,
    device: &Client,
    options: &GateOptions,
) -> Result<SpeedEvidence, TimingError> {
    let arm = Target::forced(profile, device).only(entry.site.id);
    let default = Target::default_for_client(device);
    for t in [arm, default] {
        if let Some(reason) = lowering::launch_hazard(lifted, t, device) {
            return Err(TimingError::NotLaunched(reason));
        }
    }
    // Scale the recipe up until one dispatch of `default` takes at least `MIN_KERNEL`: a lifted
    // island is a few instructions per lane, and at 2^20 lanes a GPU runs it in less time than a
    // launch costs, so launch jitter (±5 %) would decide a 0.97 threshold.
    let per_cube: Vec<usize> = lifted
        .params
        .iter()
        .map(|p| p.shape.per_cube(lifted.cube_dim as usize) * p.value_size())
        .chain(lifted.output_value_size().map(|s| s * lifted.cube_dim as usize))
        .chain(lifted.mask_buffer().map(|_| 4 * lifted.cube_dim as usize))
        .collect();
    let total = per_cube.iter().sum::<usize>().max(1);
    let largest = per_cube.iter().copied().max().unwrap_or(1).max(1);
    // Cubes are launched along x only: stay within the device's limit there (65535 on wgpu).
    let max_x = device.properties().hardware.max_cube_count.0.max(1) as usize;
    let max_cubes =
        (MAX_BYTES / total).min(MAX_BUFFER / largest).min(max_x).clamp(1, u32::MAX as usize / lifted.cube_dim as usize)
            as u32;
    let mut cubes = options.lanes.div_ceil(lifted.cube_dim).clamp(1, max_cubes);
    let (arm_args, default_args) = loop {
        let inputs = crate::verify::compare::recipe_inputs(lifted, cubes, options.proof.seed);
        let arm_args = crate::verify::compare::launch_args(device, lifted, cubes, &inputs, arm, 0)?;
        let default_args = crate::verify::compare::launch_args(device, lifted, cubes, &inputs, default, 0)?;
        let once = catch_unwind(AssertUnwindSafe(|| {
            crate::verify::bench::time_per_call(device, 2, 5, || (lifted.launch)(&default_args))
        }))
        .map_err(|p| TimingError::Panicked(panic_text(&p)))??;
        if once >= MIN_KERNEL || cubes >= max_cubes {
            break (arm_args, default_args);
        }
        cubes = cubes.saturating_mul(4).min(max_cubes);
    };
    let (mut arm_times, mut default_times, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..MEASUREMENTS {
        let measured = catch_unwind(AssertUnwindSafe(|| {
            crate::verify::bench::side_by_side_samples(
                device,
                options.rounds,
                options.dispatches,
                &mut [("arm", &mut || (lifted.launch)(&arm_args)), ("default", &mut || (lifted.launch)(&default_args))],
            )
        }))
        .map_err(|p| TimingError::Panicked(panic_text(&p)))??;
        for (a, d) in measured[0].iter().zip(&measured[1]) {
            ratios.push(speed_ratio(*a, *d));
            arm_times.push(a.as_secs_f64() * 1e6);
            default_times.push(d.as_secs_f64() * 1e6);
        }
        if speed_decision(&ratios, options.threshold).1 {
            break;
        }
    }
    Ok(SpeedEvidence {
        arm_us: median(&arm_times),
        default_us: median(&default_times),
        speedup: median(&ratios),
        threshold: options.threshold,
        lanes: cubes as u64 * lifted.cube_dim as u64,
        dispatches: options.dispatches,
        rounds: ratios.len(),
        ratios,
    })
}

/// How many times the speed half measures `rounds` rounds at most, while the ratios straddle
/// the threshold.
const MEASUREMENTS: usize = 3;

fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// The `q` quantile of `values` (nearest rank), NaN for none.
fn quantile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// `default`'s time over the arm's for one round: above 1 where the arm is faster.
pub fn speed_ratio(arm: std::time::Duration, default: std::time::Duration) -> f64 {
    default.as_secs_f64() / arm.as_secs_f64().max(1e-12)
}

/// The speed half's decision from the per-round ratios (`default`'s time / the arm's) and
/// whether it is settled: flipped when the lower quartile meets the threshold, declined when
/// the upper quartile misses it; between them the measurement is within its own noise and the
/// median decides, unsettled.
pub fn speed_decision(ratios: &[f64], threshold: f64) -> (Decision, bool) {
    let (low, mid, high) = (quantile(ratios, 0.25), quantile(ratios, 0.5), quantile(ratios, 0.75));
    if low >= threshold {
        (Decision::Flipped, true)
    } else if high < threshold {
        (Decision::DeclinedSlow, true)
    } else if mid >= threshold {
        (Decision::Flipped, false)
    } else {
        (Decision::DeclinedSlow, false)
    }
}

/// Today's UTC date, `YYYY-MM-DD`.
pub fn today() -> String {
    let date = time::OffsetDateTime::now_utc().date();
    format!("{:04}-{:02}-{:02}", date.year(), u8::from(date.month()), date.day())
}

#[cfg(test)]
mod tests {
    use super::{Decision, speed_decision, speed_ratio};
    use std::time::Duration;

    #[test]
    fn the_ratio_is_default_over_the_arm() {
        let us = Duration::from_micros;
        assert_eq!(speed_ratio(us(10), us(20)), 2.0, "an arm twice as fast");
        assert_eq!(speed_ratio(us(20), us(10)), 0.5, "an arm twice as slow");
        let rounds: Vec<f64> = (0..7).map(|i| speed_ratio(us(100), us(90 + i))).collect();
        assert_eq!(speed_decision(&rounds, 0.97).0, Decision::DeclinedSlow, "{rounds:?}");
        let rounds: Vec<f64> = (0..7).map(|i| speed_ratio(us(90 + i), us(100))).collect();
        assert_eq!(speed_decision(&rounds, 0.97).0, Decision::Flipped, "{rounds:?}");
    }

    #[test]
    fn the_spread_of_the_rounds_decides_the_speed_half() {
        // Clearly faster, clearly slower: settled at once.
        assert_eq!(speed_decision(&[1.5, 1.6, 1.4, 1.5, 1.55, 1.45, 1.5], 0.97), (Decision::Flipped, true));
        assert_eq!(speed_decision(&[0.8, 0.82, 0.79, 0.81, 0.8, 0.83, 0.8], 0.97), (Decision::DeclinedSlow, true));
        // One slow outlier round does not decline an arm whose other rounds clear the bar.
        assert_eq!(speed_decision(&[1.2, 1.2, 0.5, 1.2, 1.2, 1.2, 1.2], 0.97), (Decision::Flipped, true));
        // Straddling the threshold: the median decides, and the decision is not settled.
        assert_eq!(speed_decision(&[0.95, 0.99, 0.96, 1.0, 0.98, 0.94, 1.01], 0.97), (Decision::Flipped, false));
        assert_eq!(speed_decision(&[0.95, 0.99, 0.96, 0.97, 0.93, 0.94, 1.01], 0.975), (Decision::DeclinedSlow, false));
    }

    #[test]
    fn today_is_an_iso_date() {
        let d = super::today();
        let parts: Vec<u32> = d.split('-').map(|p| p.parse().expect("digits")).collect();
        assert!(
            d.len() == 10
                && parts.len() == 3
                && parts[0] >= 2026
                && (1..=12).contains(&parts[1])
                && (1..=31).contains(&parts[2]),
            "{d}"
        );
    }
}
