//! Fixtures of don't-care lanes (`dont_care = …` in a proof signature): a shuffle over a partial
//! 8-lane plane whose lanes at and past `n[0] % 9` hold no data. An arm that differs from
//! `default` only where the result is undefined is proven, the same pair without the declaration
//! is caught, an arm wrong in the defined lanes is caught, a pair that reads a missing lane
//! into a defined one is caught by the taint run even though arm and `default` agree everywhere,
//! and a condition that leaves fewer than a quarter of the lanes defined is caught however the
//! two sides compare.

use cubecl::prelude::*;
use island_intrinsics::{plane, portable};
use island_runtime::prelude::*;

/// `v` plus its partner's value where both lanes hold data, −8 elsewhere.
#[cube]
fn pair_sum_or_sentinel(v: f32, n: &[u32]) -> f32 {
    let active = n[0] % 9;
    let lane = UNIT_POS % 8;
    let pair = v + portable::group_read::<f32>(v, lane ^ 1, 8u32);
    if lane < active && (lane ^ 1) < active { pair } else { -8.0f32 }
}

#[islands]
#[cube]
pub fn differs_only_where_undefined(v: f32, n: &[u32], #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 16,
            dont_care = UNIT_POS % 8 >= n[0] % 9 || (UNIT_POS % 8) ^ 1 >= n[0] % 9;
        vulkan if plane == 8 => v + plane::shuffle_xor::call::<f32>(v, 1u32, target),
        default => pair_sum_or_sentinel(v, n),
    }
}

/// The same pair, with no don't-care lanes declared: the undefined lanes differ.
#[islands(expect_mismatch)]
#[cube]
pub fn differs_where_undefined_undeclared(v: f32, n: &[u32], #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 16;
        vulkan if plane == 8 => v + plane::shuffle_xor::call::<f32>(v, 1u32, target),
        default => pair_sum_or_sentinel(v, n),
    }
}

/// Declared don't-care lanes hide only themselves: an arm that adds one in every lane, defined
/// ones included, is caught.
#[islands(expect_mismatch)]
#[cube]
pub fn wrong_where_defined(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 16,
            dont_care = UNIT_POS % 8 >= n[0] % 9 || (UNIT_POS % 8) ^ 1 >= n[0] % 9;
        vulkan if plane == 8 => v + plane::shuffle_xor::call::<f32>(v, 1u32, target) + 1.0f32,
        default => v + portable::group_read::<f32>(v, (UNIT_POS % 8) ^ 1, 8u32),
    }
}

/// Both sides read lane `lane ^ 2`, which may hold no data while `lane ^ 1` does: arm and
/// `default` agree on every lane, and the result is still undefined in lanes declared defined.
#[islands(expect_mismatch)]
#[cube]
pub fn reads_a_missing_lane(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 16,
            dont_care = UNIT_POS % 8 >= n[0] % 9 || (UNIT_POS % 8) ^ 1 >= n[0] % 9;
        vulkan if plane == 8 => v + plane::shuffle_xor::call::<f32>(v, 2u32, target),
        default => v + portable::group_read::<f32>(v, (UNIT_POS % 8) ^ 2, 8u32),
    }
}

/// A condition that covers every lane: arm and `default` disagree everywhere and nothing would
/// be compared, so the proof would pass vacuously. Below the minimum share of defined lanes the
/// condition is not honoured and every lane is compared.
#[islands(expect_mismatch)]
#[cube]
pub fn covers_every_lane(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 16, dont_care = UNIT_POS < 1024;
        vulkan if plane == 8 => v + 1.0f32 + plane::shuffle_xor::call::<f32>(v, 1u32, target),
        default => v + portable::group_read::<f32>(v, (UNIT_POS % 8) ^ 1, 8u32),
    }
}

/// A condition true in seven lanes of eight: below the minimum, caught the same way.
#[islands(expect_mismatch)]
#[cube]
pub fn covers_seven_lanes_in_eight(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32, n: &[u32; 1]) -> f32, cube_dim = 16, dont_care = UNIT_POS % 8 != n[0] % 8;
        vulkan if plane == 8 => v + 1.0f32 + plane::shuffle_xor::call::<f32>(v, 1u32, target),
        default => v + portable::group_read::<f32>(v, (UNIT_POS % 8) ^ 1, 8u32),
    }
}

fn arm_of(function: &str) -> Result<&'static island_runtime::registry::ArmEntry, libtest_mimic::Failed> {
    island_runtime::registry::arms_of("proofs")
        .into_iter()
        .find(|e| e.site.id.ends_with(&format!("::{function}#0")))
        .ok_or_else(|| format!("no registered arm of `{function}`").into())
}

/// What each fixture's proof concludes, and why.
pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![
        libtest_mimic::Trial::test("dont_care::proven_modulo_the_undefined_lanes_and_tainted", || {
            let client = proofs::cpu()?;
            let runs =
                island_runtime::proof::prove(arm_of("differs_only_where_undefined")?, &client, &Default::default());
            match runs.as_slice() {
                [run] if run.passed() && run.contract.contains("modulo the don't-care lanes") => Ok(()),
                other => Err(format!(
                    "{:?}",
                    other
                        .iter()
                        .map(|r| (r.verdict_word(), r.contract.clone(), r.detail().map(str::to_string)))
                        .collect::<Vec<_>>()
                )
                .into()),
            }
        }),
        libtest_mimic::Trial::test("dont_care::a_missing_lane_read_is_caught_by_the_taint_run", || {
            let client = proofs::cpu()?;
            let runs = island_runtime::proof::prove(arm_of("reads_a_missing_lane")?, &client, &Default::default());
            match runs.as_slice() {
                [run]
                    if run.passed()
                        && run.detail().is_some_and(|d| d.contains("reads a don't-care lane into a defined one")) =>
                {
                    Ok(())
                }
                other => Err(format!(
                    "{:?}",
                    other.iter().map(|r| (r.verdict_word(), r.detail().map(str::to_string))).collect::<Vec<_>>()
                )
                .into()),
            }
        }),
        libtest_mimic::Trial::test("dont_care::a_condition_that_leaves_too_few_lanes_defined_is_caught", || {
            let client = proofs::cpu()?;
            for fixture in ["covers_every_lane", "covers_seven_lanes_in_eight"] {
                let runs = island_runtime::proof::prove(arm_of(fixture)?, &client, &Default::default());
                match runs.as_slice() {
                    [run] if run.passed() && run.detail().is_some_and(|d| d.contains("fewer than 1 in 4")) => {}
                    other => {
                        return Err(format!(
                            "{fixture}: {:?}",
                            other
                                .iter()
                                .map(|r| (r.verdict_word(), r.detail().map(str::to_string)))
                                .collect::<Vec<_>>()
                        )
                        .into());
                    }
                }
            }
            Ok(())
        }),
    ]
    .into_iter()
    .map(|t| t.with_kind("proof"))
    .collect()
}
