//! `islands conform`: every arm the device selects run natively on it and emulated on the CPU,
//! each island's `default` on the device against the CPU's, then each example kernel on the
//! device against the CPU `default` and the reference.

use crate::error::{NotADevice, Outcome};
use crate::example::{self, Example};
use crate::report::report;
use island_runtime::proof_run::ProofOptions;
use island_runtime::registry;
use island_runtime::runtimes::{ClientError, RuntimeName};
use island_runtime::settings::SettingError;

#[derive(clap::Args)]
pub struct Args {
    /// The device runtime (vulkan, cuda).
    #[arg(long, value_parser = crate::args::runtime)]
    runtime: RuntimeName,
    /// Print the runs as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Only arms and islands whose name contains this, and no examples.
    filter: Option<String>,
}

/// Why conformance did not run.
#[derive(Debug, thiserror::Error)]
pub enum ConformError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    NotADevice(#[from] NotADevice),
    #[error(transparent)]
    Setting(#[from] SettingError),
}

pub fn run(args: Args) -> Result<Outcome, ConformError> {
    let device = args.runtime.client()?;
    let cpu = RuntimeName::Cpu.client()?;
    let profile = island_runtime::device::profile(&device)
        .ok_or_else(|| NotADevice(island_runtime::device::runtime_name(&device).to_string()))?;
    eprintln!("device: {profile}");
    let options = ProofOptions::from_env()?;
    let mut runs = Vec::new();
    let wanted = |name: &str| args.filter.as_deref().is_none_or(|f| name.contains(f));
    for entry in registry::arms().iter().filter(|e| e.expect != island_runtime::Expect::Mismatch && wanted(&e.name())) {
        if let Some(run) = island_runtime::conformance::conform(entry, &device, &cpu, &options) {
            eprintln!("{} {}", run.verdict_word(), entry.name());
            runs.push(run);
        }
    }
    // Each island's `default` on the device against the CPU runtime's, byte for byte.
    for entry in registry::islands().iter().filter(|e| wanted(e.site.id)) {
        if let Some(run) = island_runtime::conformance::defaults(entry, &device, &cpu, &options) {
            eprintln!("{} {} (device default vs CPU default)", run.verdict_word(), entry.site.id);
            runs.push(run);
        }
    }
    eprintln!("seed {:#x}, depth {} (ISLANDS_SEED, ISLANDS_DEPTH)", options.seed, options.depth);
    let arms = report(&runs, args.json, &format!("conformance on {profile}"), options.seed, false);
    // Kernel-level conformance: each example on the device, its native arms and its `default`,
    // against the CPU runtime's `default` and the plain-Rust reference. An island can agree with
    // its emulation while the kernel around it computes other bits on this device (its
    // arithmetic, its compiler's contractions): that must fail here too.
    let mut examples_ok = true;
    let examples = if args.filter.is_some() { &[][..] } else { &EXAMPLES[..] };
    for &(name, rows, cols, cpu_rows) in examples {
        match example::run_on(name, &device, rows, cols, cpu_rows) {
            Ok(ok) => examples_ok &= ok,
            Err(e @ example::ExampleError::Unsupported(_)) => println!("  example {name}: {e}"),
            Err(e) => {
                println!("  example {name}: {e}");
                examples_ok = false;
            }
        }
    }
    if args.filter.is_none() {
        println!("examples on {profile}: {}", if examples_ok { "byte-equal" } else { "DIFFERENT (see above)" });
    }
    Ok((arms == Outcome::Pass && examples_ok).into())
}

/// The examples conformance runs after the arms: (example, rows, columns, rows checked on the
/// CPU).
const EXAMPLES: [(Example, usize, usize, usize); 5] = [
    (Example::Q8Matvec, 256, 4096, 8),
    (Example::Rmsnorm, 256, 4096, 4),
    (Example::GemmI8, 256, 256, 16),
    (Example::GemmI8Mma, 256, 512, 128),
    (Example::GemmF16, 256, 256, 16),
];
