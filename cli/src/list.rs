//! `islands list`: every registered accelerated arm, as a table or JSON.

use crate::error::Outcome;
use crate::table::print_table;
use island_runtime::lifted::ProofSpec;
use island_runtime::registry;

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Outcome {
    let arms = registry::arms();
    if args.json {
        let rows: Vec<_> = arms
            .iter()
            .map(|e| {
                serde_json::json!({
                    "crate": e.krate,
                    "island": e.site.id,
                    "arm": e.label(),
                    "guard": e.spec().guard.to_string(),
                    "proof": match e.proof { ProofSpec::Lifted(_) => "lifted", ProofSpec::Unprovable(_) => "none" },
                    "location": e.location(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows).expect("plain data serialises"));
        return Outcome::Pass;
    }
    let rows: Vec<Vec<String>> = arms
        .iter()
        .map(|e| {
            vec![
                e.site.id.to_string(),
                e.label().to_string(),
                e.spec().guard.to_string(),
                match e.proof {
                    ProofSpec::Lifted(l) => format!("lifted ({} inputs, cube {})", l.params.len(), l.cube_dim),
                    ProofSpec::Unprovable(_) => "none".into(),
                },
                e.location(),
            ]
        })
        .collect();
    print_table(&["island", "arm", "guard", "proof", "written at"], &rows);
    println!("{} accelerated arms in {} islands", arms.len(), {
        let mut ids: Vec<_> = arms.iter().map(|e| e.site.id).collect();
        ids.dedup();
        ids.len()
    });
    Outcome::Pass
}
