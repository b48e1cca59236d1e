//! A fixture of tiered arms: two arms for one backend, chosen by compute capability. Each must
//! be proven under a reference profile that selects it (Hopper and Ada take the first, Ampere
//! the second), and each arm's lowering check must compile that arm, not the other.

use cubecl::prelude::*;
use island_intrinsics::{dp4a, portable};
use island_runtime::prelude::*;

#[islands]
#[cube]
pub fn tiered_dot(a: i32, b: i32, c: i32, #[comptime] target: Target) -> i32 {
    island! {
        proof(a: i32, b: i32, c: i32) -> i32;
        cuda if sm >= 89 => dp4a::call(a, b, c, target),
        cuda => dp4a::call(a, b, 0i32, target) + c,
        default => portable::dot4_i8(a, b, c),
    }
}

/// The two arms are proven under the profiles that select them, and their lowerings are the
/// arms' own.
pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![
        libtest_mimic::Trial::test("tiered::each_arm_is_proven_under_a_profile_that_selects_it", || {
            let arms = island_runtime::registry::arms_of("proofs");
            let tiered: Vec<_> = arms.iter().filter(|e| e.site.id.ends_with("tiered_dot#0")).collect();
            if tiered.len() != 2 {
                return Err(format!("expected two registered arms of tiered_dot, found {}", tiered.len()).into());
            }
            let client = proofs::cpu()?;
            let mut seen = Vec::new();
            for entry in tiered {
                let profiles: Vec<u32> = island_runtime::proof::profiles_for(entry).iter().map(|p| p.sm).collect();
                let runs = island_runtime::proof::prove(entry, &client, &Default::default());
                let proven: Vec<String> = runs.iter().filter(|r| r.passed()).map(|r| r.profile.clone()).collect();
                if proven.len() != runs.len() || runs.is_empty() {
                    return Err(format!(
                        "arm `{}`: {:?}",
                        entry.label(),
                        runs.iter()
                            .map(|r| (r.profile.clone(), r.verdict_word(), r.detail().map(str::to_string)))
                            .collect::<Vec<_>>()
                    )
                    .into());
                }
                let cuda = island_runtime::Backend::Cuda;
                island_runtime::lowering::check_arm(entry, cuda, &client)
                    .map_err(|e| format!("arm `{}`: {e}", entry.label()))?;
                seen.push((entry.arm, profiles));
            }
            seen.sort();
            if seen != [(0, vec![90, 89]), (1, vec![80])] {
                return Err(format!("arms and the sm of the profiles proving them: {seen:?}").into());
            }
            Ok(())
        })
        .with_kind("proof"),
    ]
}
