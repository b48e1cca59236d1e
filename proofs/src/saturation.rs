//! Inputs that decide: for every island, no edge group of a float input may leave `default`'s
//! output all NaN or infinity (except the groups about NaNs and infinities). A saturated group
//! compares only specials — any NaN equals any NaN under a bit-exact contract — so an arm could
//! differ there in every other way and still be proven.

use crate::settings::cpu;
use island_runtime::inputs::Group;
use island_runtime::registry;
use libtest_mimic::{Failed, Trial};

/// The groups allowed to saturate: they are about NaNs and infinities, or hold arbitrary bits
/// (which are NaN in one value of 256).
pub const EXEMPT: &[Group] = &[Group::NaNs, Group::Infinities, Group::Arbitrary];

/// The seeds every island is drawn with; a group counts as saturated when it is saturated in
/// all of them. Fixed, so the verdict does not rotate with the daily proof seed. One is enough:
/// where a special sits in a group is fixed by the group's design, not drawn (`value.rs`), and
/// the group whose specials are drawn (arbitrary bits) is exempt.
pub const SEEDS: [u64; 1] = [island_runtime::proof_run::DEFAULT_SEED];

/// One trial per island of `crates` (every crate when empty).
pub fn trials(crates: &[&str]) -> Vec<Trial> {
    registry::islands()
        .into_iter()
        .filter(|e| crates.is_empty() || crates.contains(&e.krate))
        .map(|entry| {
            Trial::test(format!("inputs::{}::no_edge_group_saturates", entry.site.id), move || {
                let client = cpu()?;
                let mut always: Option<Vec<(Group, String)>> = None;
                for seed in SEEDS {
                    let found = island_runtime::compare::saturated_groups(entry, &client, seed).map_err(Failed::from)?;
                    let found: Vec<_> = found.into_iter().filter(|(g, _)| !EXEMPT.contains(g)).collect();
                    always = Some(match always {
                        None => found,
                        Some(before) => before.into_iter().filter(|x| found.contains(x)).collect(),
                    });
                }
                let always = always.unwrap_or_default();
                if always.is_empty() {
                    Ok(())
                } else {
                    let list: Vec<String> = always.iter().map(|(g, o)| format!("`{}` → output `{o}`", g.name())).collect();
                    Err(format!(
                        "{}: `default`'s output is NaN or infinity in every scalar of the cube of {} for seeds {SEEDS:x?}: \
                         those groups compare only specials",
                        entry.site.id,
                        list.join(", ")
                    )
                    .into())
                }
            })
            .with_kind("inputs")
        })
        .collect()
}
