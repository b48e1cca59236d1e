//! `islands lower`: each intrinsic's check compiled for each backend of the table (no GPU
//! needed), and whether the instruction appears in the arm and is absent from `default`; with
//! `--show`, the generated code itself.

use crate::error::Outcome;
use crate::table::print_table;
use island_runtime::lowering::{self, Codegen, Which};
use island_runtime::runtimes::{ClientError, RuntimeName};
use island_runtime::{Backend, Profile, registry};

#[derive(clap::Args)]
pub struct Args {
    /// Print the generated code of the arms whose name contains this (with `default`'s).
    #[arg(long)]
    show: Option<String>,
    /// The backend whose code `--show` prints.
    #[arg(long, default_value = "cuda", value_parser = crate::args::backend)]
    backend: Backend,
}

pub fn run(args: Args) -> Result<Outcome, ClientError> {
    match args.show {
        Some(filter) => show(&filter, args.backend),
        None => lower(),
    }
}

/// Prints the code the arms matching `filter` and their `default` generate for `backend`'s first
/// reference profile the arm's guard admits.
fn show(filter: &str, backend: Backend) -> Result<Outcome, ClientError> {
    let host = RuntimeName::Cpu.client()?;
    for &entry in registry::arms().iter().filter(|e| e.name().contains(filter)) {
        let island_runtime::lifted::ProofSpec::Lifted(lifted) = &entry.proof else { continue };
        let Some(profile) =
            Profile::references(backend).into_iter().find(|p| island_runtime::tag::registry::selects(entry, p))
        else {
            continue;
        };
        for which in [Which::Arm, Which::Default] {
            println!("// {} — {which:?} — {profile}", entry.name());
            match lowering::source(entry, lifted, &profile, which, &host) {
                Ok(code) => println!("{code}"),
                Err(e) => println!("// does not compile: {e}"),
            }
        }
    }
    Ok(Outcome::Pass)
}

/// The table: one row per (intrinsic, backend), `FAILED` where the check does not lower as
/// declared; fails if any row did.
fn lower() -> Result<Outcome, ClientError> {
    let host = RuntimeName::Cpu.client()?;
    let mut rows = Vec::new();
    let mut failed = 0;
    for &i in island_runtime::intrinsic::intrinsics() {
        for l in i.lowerings {
            let codegen = Codegen::of(l.backend);
            let verdict = if !codegen.available() {
                "skipped (generator not built)".to_string()
            } else {
                match lowering::check_row(i, l, &host) {
                    Ok(()) => "emitted, absent from default".to_string(),
                    Err(e) => {
                        failed += 1;
                        format!("FAILED: {}", e.to_string().lines().next().unwrap_or_default())
                    }
                }
            };
            rows.push(vec![
                i.name.to_string(),
                l.backend.to_string(),
                codegen.name().to_string(),
                l.instruction.to_string(),
                verdict,
            ]);
        }
    }
    print_table(&["intrinsic", "backend", "generator", "instruction", "lowering"], &rows);
    Ok((failed == 0).into())
}
