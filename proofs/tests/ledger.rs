//! The ledger as launches and CI use it: a declined, failed or (under the strict policy)
//! missing record makes a launch take `default` and say why once; an arm using device-defined
//! semantics takes `default` on a device nobody gated; a measured "no" survives a driver update;
//! a stale flip is not taken; bad settings are errors; the gate declines a slow arm. (That the
//! committed records are current is `proofs::ledger`, run for every crate.)

use island_runtime::codegen::code_hash;
use island_runtime::compare;
use island_runtime::embedded;
use island_runtime::embedded::LedgerError;
use island_runtime::fingerprint::Fingerprint;
use island_runtime::gate::{self, GateOptions};
use island_runtime::lifted::ProofSpec;
use island_runtime::record::{CodeHashes, ConformanceEvidence, Decision, MachineCodeEvidence, ProofEvidence, Record};
use island_runtime::records::view::{ArmFacts, DeviceLedger, Policy};
use island_runtime::runtimes::RuntimeName;
use island_runtime::target::DefaultReason;
use island_runtime::values::said;
use island_runtime::{ArmEntry, Backend, Profile, Selection, Target, registry};
use libtest_mimic::{Failed, Trial};

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        Trial::test("ledger::a_record_goes_stale_when_only_the_emulation_changes", emulation_is_hashed),
        Trial::test("ledger::a_declined_record_runs_default_and_says_why_once", || {
            launches_default(Decision::DeclinedSlow, Policy::Evidence, true)
        }),
        Trial::test("ledger::a_failed_record_runs_default", || {
            launches_default(Decision::Failed, Policy::Evidence, true)
        }),
        Trial::test("ledger::a_declined_machine_code_record_runs_default", || {
            launches_default(Decision::DeclinedMachineCode, Policy::Evidence, true)
        }),
        Trial::test("machine_code::a_promised_instruction_missing_from_the_listing_is_named", machine_code_judged),
        Trial::test("ledger::the_strict_policy_runs_default_without_a_passing_record", || {
            launches_default(Decision::Unverified, Policy::Strict, true)
        }),
        Trial::test("ledger::an_unverified_record_whose_exact_half_failed_runs_default", || {
            launches_default(Decision::Unverified, Policy::Evidence, true)
        }),
        Trial::test("ledger::the_off_policy_ignores_records", || {
            launches_default(Decision::Failed, Policy::Off, false)
        }),
        Trial::test("ledger::a_flipped_record_runs_the_arm_under_strict", || {
            launches_default(Decision::Flipped, Policy::Strict, false)
        }),
        Trial::test(
            "policy::an_sm80_device_without_records_runs_default_for_float_tensor_cores",
            float_tensor_cores_on_sm80,
        ),
        Trial::test(
            "policy::a_vulkan_device_without_records_runs_default_for_float_plane_reductions",
            float_plane_reductions_elsewhere,
        ),
        Trial::test(
            "policy::an_h100_without_records_runs_default_for_arms_that_synchronize",
            synchronizing_arms_on_h100,
        ),
        Trial::test("policy::an_arm_with_float_arithmetic_of_its_own_needs_a_record", float_arithmetic_of_its_own),
        Trial::test("policy::a_failed_record_blocks_the_arm_on_every_device_of_its_runtime", failed_blocks_everywhere),
        Trial::test("policy::a_runtime_no_device_ran_runs_arms_only_on_trust", unwitnessed_runtime),
        Trial::test("policy::a_driver_that_picks_the_subgroup_width_runs_default_for_plane_arms", varying_widths),
        Trial::test("policy::readme_states_design_md_s_rule_word_for_word", readme_states_the_rule),
        Trial::test("policy::a_declined_record_declines_under_a_new_driver", declines_survive_driver_updates),
        Trial::test("policy::a_stale_flipped_record_is_not_taken", stale_flips_are_not_taken),
        Trial::test("policy::the_committed_h200_records_select_their_arms", committed_flips_select),
        Trial::test("policy::a_ledger_that_cannot_be_read_or_parsed_is_an_error", bad_ledgers_are_errors),
        Trial::test("policy::design_md_states_every_intrinsics_class", design_table_is_the_registry),
    ];
    if RuntimeName::Device(island_runtime::Backend::Vulkan).built() {
        trials.push(Trial::test("ledger::gate_declines_a_slow_arm", gate_declines_a_slow_arm));
        trials.push(Trial::test(
            "ledger::a_crate_harness_gates_its_arms_into_its_ledger_on_lavapipe",
            harness_gates_into_its_ledger,
        ));
    }
    trials.into_iter().map(|t| t.with_kind("ledger")).collect()
}

/// A fixture whose `cuda` arm computes other bytes than `default` (a planted bug), so the
/// output tells which of the two ran.
fn fixture() -> Result<&'static ArmEntry, Failed> {
    registry::arms()
        .iter()
        .copied()
        .find(|e| e.site.id.ends_with("negative::sign_extension_slip#0"))
        .ok_or_else(|| "the fixture `sign_extension_slip` is not registered".into())
}

fn h200() -> Fingerprint {
    Fingerprint {
        runtime: "cuda".into(),
        device: "NVIDIA H200".into(),
        identity: "ptx_sm90".into(),
        plane: 32,
        sm: 90,
        driver: "nvidia 580.95.05".into(),
    }
}

fn record(entry: &ArmEntry, decision: Decision) -> Record {
    Record {
        island: entry.site.id.into(),
        arm: entry.spec().label.into(),
        device: h200(),
        code: CodeHashes { codegen: "CUDA C++".into(), arm: "-".into(), default: "-".into(), emulation: "-".into() },
        proof: ProofEvidence {
            verdict: "proven".into(),
            seed: "0x0".into(),
            depth: 1,
            inputs: 0,
            contract: "bit-exact".into(),
        },
        conformance: ConformanceEvidence {
            verdict: "proven".into(),
            native: true,
            instructions: vec![],
            report: None,
            machine_code: Some(MachineCodeEvidence { how: "NVRTC 13.0 CUBIN for sm_90a".into(), ..Default::default() }),
        },
        speed: None,
        decision,
        note: None,
        date: "2026-12-01".into(),
        sdk: "test".into(),
    }
}

/// Runs the fixture's lifted kernel on the CPU with `target`, and returns its output bytes.
fn output(entry: &'static ArmEntry, target: Target) -> Result<Vec<u8>, Failed> {
    let ProofSpec::Lifted(lifted) = &entry.proof else { return Err("the fixture has no proof kernel".into()) };
    let cpu = proofs::cpu()?;
    let inputs = compare::recipe_inputs(lifted, 4, 7);
    let args = compare::launch_args(&cpu, lifted, 4, &inputs, target, 0).expect("launch arguments");
    (lifted.launch)(&args);
    let out = args.buffers.last().ok_or("no output buffer")?.0.clone();
    Ok(island_runtime::readback::read(&cpu, out)?)
}

/// With a record of `decision` for the fixture on a forced H200 fingerprint under `policy`,
/// a launch of the fixture takes `default` exactly when `expect_default`; when it does, the
/// reason is logged once over two launches (two tags, so the kernel is expanded twice).
fn launches_default(decision: Decision, policy: Policy, expect_default: bool) -> Result<(), Failed> {
    let entry = fixture()?;
    let cpu = proofs::cpu()?;
    let profile = Profile::references(Backend::Cuda)[0];
    let records = if decision == Decision::Unverified && policy == Policy::Strict {
        vec![]
    } else {
        vec![record(entry, decision)]
    };
    // The fixture is written to differ from `default`; these tests are about records alone, so
    // its facts say its proof carries and its hashes are current.
    let facts = vec![((entry.site.id.to_string(), entry.spec().label.to_string()), ArmFacts::default())];
    let arm = output(entry, Target::forced(profile, &cpu))?;
    let default = output(entry, Target::default_arms(&cpu))?;
    if arm == default {
        return Err(
            "the fixture's arm and `default` computed the same bytes: this test could not tell them apart".into()
        );
    }
    let tag = |records: Vec<Record>| {
        Target::forced(profile, &cpu).with_ledger(DeviceLedger::leak(h200(), profile, policy, records, facts.clone()))
    };
    let first = tag(records.clone());
    let selection = first.explain(entry.site);
    let got = output(entry, first)?;
    let again = output(entry, tag(records))?;
    let took_default = got == default && again == default;
    let took_arm = got == arm && again == arm;
    match (expect_default, took_default, took_arm) {
        (true, true, _) => {
            let Selection::Default(reason) = selection else { return Err(format!("explain says {selection:?}").into()) };
            let reason = reason.to_string();
            if policy != Policy::Strict && !reason.contains(decision.word().split(' ').next().unwrap_or("")) {
                return Err(format!("the reason does not name the record's decision: {reason}").into());
            }
            let logged: Vec<String> = said::logged().into_iter().filter(|m| m.contains(entry.site.id) && m.contains(&reason)).collect();
            if logged.len() != 1 {
                return Err(format!("the reason was logged {} times, not once: {logged:?}", logged.len()).into());
            }
            Ok(())
        }
        (false, _, true) => Ok(()),
        _ => Err(format!(
            "{decision:?} under {policy}: expected the {} to run; the output matched the arm: {took_arm}, `default`: {took_default} ({selection:?})",
            if expect_default { "default" } else { "arm" }
        )
        .into()),
    }
}

/// The gate, on lavapipe, declines the slow fixture arm (bit-exact, far slower than `default`).
fn gate_declines_a_slow_arm() -> Result<(), Failed> {
    let device = RuntimeName::Device(island_runtime::Backend::Vulkan).client()?;
    let cpu = proofs::cpu()?;
    let entry = registry::arms()
        .iter()
        .copied()
        .find(|e| e.site.id.ends_with("slow::slow_arm#0"))
        .ok_or("the fixture `slow_arm` is not registered")?;
    let options = GateOptions { lanes: 1 << 12, dispatches: 3, rounds: 3, ..GateOptions::default() };
    let record = gate::gate(entry, &device, &cpu, &options).ok_or("the device does not select the slow arm")?;
    match (record.decision, &record.speed) {
        (Decision::DeclinedSlow, Some(s)) if s.speedup < 0.5 => Ok(()),
        _ => Err(format!(
            "the gate did not decline the slow arm: {}",
            serde_json::to_string_pretty(&record).unwrap_or_default()
        )
        .into()),
    }
}

/// Two fixtures whose native code and `default` are the same and whose emulations differ (the
/// sm_90 model with one detail wrong, and the `k`-order sum): their records' arm and `default`
/// hashes agree and their emulation hashes do not, so a record made with one emulation is stale
/// for the other. Without the emulation's hash, a changed emulation left every record current.
fn emulation_is_hashed() -> Result<(), Failed> {
    let cpu = proofs::cpu()?;
    let find = |id: &str| {
        registry::arms().iter().copied().find(|e| e.site.id.ends_with(id)).ok_or_else(|| format!("no arm `{id}`"))
    };
    let a = code_hash::code_hashes(find("::tile_rounding_at_alignment#0")?, &h200(), &cpu)?;
    let b = code_hash::code_hashes(find("::tile_in_k_order#0")?, &h200(), &cpu)?;
    if a.arm != b.arm || a.default != b.default {
        return Err(format!("the fixtures' native code or default differ ({a:?}, {b:?}): the test needs twins").into());
    }
    match a.changed(&b) {
        Some(("the arm's emulation", _, _)) => {}
        other => return Err(format!("a changed emulation is not seen: {other:?}").into()),
    }
    // An old record without the emulation's hash is held to the rest alone.
    let old = CodeHashes { emulation: String::new(), ..a.clone() };
    if old.changed(&b).is_some() {
        return Err("a record without an emulation hash is stale although its arm and default are unchanged".into());
    }
    Ok(())
}

/// The registered arm of the island whose id ends with `id`, and its label.
fn arm(id: &str) -> Result<&'static ArmEntry, Failed> {
    registry::arms()
        .iter()
        .copied()
        .find(|e| e.site.id.ends_with(id) && e.expect == island_runtime::Expect::Equal)
        .ok_or_else(|| format!("no registered arm of an island `…{id}`").into())
}

/// What a launch on `device` (of `profile`) with `records` under `policy` selects in each
/// island of `ids`, with the facts the launch computes.
fn selections(
    device: &Fingerprint,
    profile: Profile,
    policy: Policy,
    records: Vec<Record>,
    ids: &[&str],
) -> Result<Vec<(String, Selection)>, Failed> {
    let mut all = records.clone();
    all.push(witness(device));
    selections_among(device, profile, policy, records, all, ids)
}

/// A record of another island on another device of `device`'s runtime that ran natively: the
/// runtime's code generator has run on a device.
fn witness(device: &Fingerprint) -> Record {
    let entry = registry::arms()[0];
    let mut r = record(entry, Decision::Flipped);
    r.island = "witness#0".into();
    r.device = Fingerprint { device: format!("another device than {}", device.device), ..device.clone() };
    r
}

/// [`selections`] with the records of this device, `mine`, among those of every device, `all`.
fn selections_among(
    device: &Fingerprint,
    profile: Profile,
    policy: Policy,
    mine: Vec<Record>,
    all: Vec<Record>,
    ids: &[&str],
) -> Result<Vec<(String, Selection)>, Failed> {
    selections_at(device, profile, policy, (mine, all), ids, (device.plane, device.plane))
}

/// [`selections_among`] on a device whose driver may run a kernel at any plane width in
/// `planes` (narrowest, widest).
fn selections_at(
    device: &Fingerprint,
    profile: Profile,
    policy: Policy,
    (mine, all): (Vec<Record>, Vec<Record>),
    ids: &[&str],
    planes: (u32, u32),
) -> Result<Vec<(String, Selection)>, Failed> {
    let cpu = proofs::cpu()?;
    let entries: Vec<&'static ArmEntry> = ids.iter().map(|id| arm(id)).collect::<Result<_, _>>()?;
    let facts = island_runtime::evidence::facts_of(&entries, device, &profile, &mine, &cpu, planes);
    let view = DeviceLedger::leak(device.clone(), profile, policy, all, facts);
    let target = Target::forced(profile, &cpu).with_ledger(view);
    Ok(entries.iter().map(|e| (e.site.id.to_string(), target.explain(e.site))).collect())
}

fn expect_default(selection: &(String, Selection), words: &[&str]) -> Result<(), Failed> {
    match &selection.1 {
        Selection::Default(DefaultReason::Ledger { reason, .. })
            if words.iter().all(|w| reason.to_string().contains(w)) =>
        {
            Ok(())
        }
        other => Err(format!("{}: expected `default` for a reason naming {words:?}, got {other}", selection.0).into()),
    }
}

fn expect_arm(selection: &(String, Selection)) -> Result<(), Failed> {
    match &selection.1 {
        Selection::Arm(_) => Ok(()),
        other => Err(format!("{}: expected its arm, got {other}", selection.0).into()),
    }
}

fn a100() -> (Fingerprint, Profile) {
    let device = Fingerprint { device: "NVIDIA A100-SXM4-80GB".into(), identity: "ptx_sm80".into(), sm: 80, ..h200() };
    let mut profile = Profile::references(Backend::Cuda)[0];
    profile.sm = 80;
    (device, profile)
}

/// On an sm_80 device without records, the f16 tensor-core arms (a tolerance contract there,
/// tensor-core accumulation) take `default` and say why; the int8 ones (defined) keep their arm.
fn float_tensor_cores_on_sm80() -> Result<(), Failed> {
    let (device, profile) = a100();
    let got = selections(
        &device,
        profile,
        Policy::Evidence,
        vec![],
        &["mma::mma_f16#0", "gemm_f16::gemm_f16#0", "mma::mma_i8#0", "dp4a::check#0"],
    )?;
    expect_default(&got[0], &["no record of this device"])?;
    expect_default(&got[1], &["no record of this device"])?;
    expect_arm(&got[2])?;
    expect_arm(&got[3])
}

/// A Vulkan device reached through wgpu with 32-lane subgroups, named `device`, its driver
/// `driver`.
fn vulkan_device(device: &str, driver: &str) -> Fingerprint {
    Fingerprint {
        runtime: "wgpu<spirv>".into(),
        device: device.into(),
        identity: String::new(),
        plane: 32,
        sm: 0,
        driver: driver.into(),
    }
}

/// An NVIDIA GPU other than the H200 under Vulkan, 32-lane subgroups, no records: the float
/// plane reductions take `default` (device-defined for floats), the integer sum and the
/// shuffles keep their arms.
fn float_plane_reductions_elsewhere() -> Result<(), Failed> {
    let device = vulkan_device("NVIDIA GeForce RTX 4090", "nvidia 580.95.05");
    let profile = Profile::references(Backend::Vulkan)
        .into_iter()
        .find(|p| p.plane == 32)
        .ok_or("no 32-lane Vulkan reference profile")?;
    let ids = [
        "plane::plane_sum_f32_w32#0",
        "plane::plane_max_f32_w32#0",
        "rows::row_sum#0",
        "plane::plane_sum_i32_w32#0",
        "plane::shuffle_xor_w32#0",
    ];
    let got = selections(&device, profile, Policy::Evidence, vec![], &ids)?;
    for s in &got[..3] {
        expect_default(s, &["plane::", "f32", "device decides"])?;
    }
    expect_arm(&got[3])?;
    expect_arm(&got[4])
}

/// An H100 (sm_90, another device than the H200) without records: the arms that synchronize
/// (an async copy, a barrier pipeline, TMA, the `wgmma` loop, non-coherent loads) take `default`
/// and say what synchronizes; `dp4a` and the int8 `mma.sync`, whose CPU proofs decide their
/// bytes, keep their arms.
fn synchronizing_arms_on_h100() -> Result<(), Failed> {
    let device = Fingerprint { device: "NVIDIA H100 80GB HBM3".into(), ..h200() };
    let profile = code_hash::hash_profile(&h200()).ok_or("no profile for the H200's fingerprint")?;
    let syncing = [
        "cp_async::cp_async_copy#0",
        "stream::stream_load#0",
        "stream::stream_load_x4#0",
        "mbarrier::mbarrier_pipeline#0",
        "tma::tma_load_2d#0",
        "wgmma_loop::wgmma_loop_tma#0",
    ];
    let got = selections(&device, profile, Policy::Evidence, vec![], &syncing)?;
    for s in &got {
        expect_default(s, &["synchronizes through", "a CPU proof cannot see"])?;
    }
    let got = selections(&device, profile, Policy::Evidence, vec![], &["dp4a::check#0", "mma::mma_i8#0"])?;
    got.iter().try_for_each(expect_arm)
}

/// An arm whose intrinsics are all defined but which adds floats itself (a lane tree's
/// `v + shuffle(v)`, the MMQ's scaled epilogue) takes `default` on a device without a record
/// and names the float operations; with a current flipped record of the device it runs.
fn float_arithmetic_of_its_own() -> Result<(), Failed> {
    let device = Fingerprint { device: "NVIDIA H100 80GB HBM3".into(), ..h200() };
    let profile = code_hash::hash_profile(&h200()).ok_or("no profile for the H200's fingerprint")?;
    let ids = ["lanes::tree8#0", "lanes::tree32#0", "mmq::kernel::mmq_q8_0#0"];
    let got = selections(&device, profile, Policy::Evidence, vec![], &ids)?;
    for s in &got {
        expect_default(s, &["float arithmetic", "math.f_"])?;
    }
    // The shuffle alone is a lane move: its check keeps its arm.
    expect_arm(&selections(&device, profile, Policy::Evidence, vec![], &["plane::shuffle_xor_w32#0"])?[0])?;
    // The committed H200 record of the tree runs it there.
    let committed = embedded::records().map_err(|e| e.to_string())?;
    let h200_tree: Vec<Record> = committed
        .iter()
        .filter(|r| r.island.ends_with("lanes::tree8#0") && r.device.runtime == "cuda")
        .cloned()
        .collect();
    let h200 = h200_tree.first().ok_or("no committed CUDA record of lanes::tree8")?.device.clone();
    expect_arm(&selections(&h200, profile, Policy::Evidence, h200_tree, &["lanes::tree8#0"])?[0])
}

/// A failed record of `dp4a::check` on the H200 blocks the arm on an A100 under every policy
/// but `off`; a failed record made through another runtime (other generated code) does not.
/// The committed ledgers show it too: `lanes::max8` failed on NVIDIA's Vulkan driver (it reads
/// subnormal magnitudes as zero; an H100's record), so lavapipe takes its `default`.
fn failed_blocks_everywhere() -> Result<(), Failed> {
    let entry = arm("dp4a::check#0")?;
    let failed = record(entry, Decision::Failed);
    let (a100, profile) = a100();
    for policy in [Policy::Evidence, Policy::Trust, Policy::Strict] {
        let got = selections_among(&a100, profile, policy, vec![], vec![failed.clone()], &["dp4a::check#0"])?;
        expect_default(&got[0], &["failed on NVIDIA H200", "re-gated"])?;
    }
    let got = selections_among(&a100, profile, Policy::Off, vec![], vec![failed.clone()], &["dp4a::check#0"])?;
    expect_arm(&got[0])?;
    let vulkan = Record { device: Fingerprint { runtime: "wgpu<spirv>".into(), ..failed.device.clone() }, ..failed };
    let all = vec![vulkan, witness(&a100)];
    expect_arm(&selections_among(&a100, profile, Policy::Evidence, vec![], all, &["dp4a::check#0"])?[0])?;
    let committed = embedded::records().map_err(|e| e.to_string())?;
    let lavapipe = committed
        .iter()
        .find(|r| r.device.device.starts_with("llvmpipe"))
        .ok_or("no committed lavapipe record")?
        .device
        .clone();
    let profile = code_hash::hash_profile(&lavapipe).ok_or("no profile for lavapipe's fingerprint")?;
    let mine: Vec<Record> = committed.iter().filter(|r| r.device.same_device(&lavapipe)).cloned().collect();
    let got = selections_among(&lavapipe, profile, Policy::Evidence, mine, committed.to_vec(), &["lanes::max8#0"])?;
    // Failed on NVIDIA's Vulkan driver (an H100's record): it blocks the arm here too.
    expect_default(&got[0], &["failed on NVIDIA H", "wgpu<spirv>"])
}

/// On a runtime no record shows run natively, an arm whose CPU proof decides its bytes takes
/// `default` under the default policy and names the runtime; `trust` runs it.
fn unwitnessed_runtime() -> Result<(), Failed> {
    let (a100, profile) = a100();
    let got = selections_among(&a100, profile, Policy::Evidence, vec![], vec![], &["dp4a::check#0"])?;
    expect_default(&got[0], &["runtime `cuda`", "ISLANDS_POLICY=trust"])?;
    let got = selections_among(&a100, profile, Policy::Trust, vec![], vec![], &["dp4a::check#0", "mma::mma_f16#0"])?;
    expect_arm(&got[0])?;
    // Trust carries only a proof that decides the bytes.
    expect_default(&got[1], &["no record of this device"])
}

/// A Vulkan driver that may run a kernel at any subgroup width from 8 to 32 (Intel's), no
/// records: even the arms whose plane operations are lane moves or integer sums take
/// `default`, since each was proven at one width; `dp4a` keeps its arm; with the width fixed
/// (NVIDIA's driver, lavapipe) the lane moves keep theirs.
fn varying_widths() -> Result<(), Failed> {
    let device = vulkan_device("Intel(R) Arc(tm) A770 Graphics (DG2)", "unknown");
    let profile = Profile::references(Backend::Vulkan)
        .into_iter()
        .find(|p| p.plane == 32 && p.dp4a)
        .ok_or("no 32-lane Vulkan reference profile with dp4a")?;
    let ids = ["plane::shuffle_xor_w32#0", "plane::plane_sum_i32_w32#0", "dp4a::check#0"];
    let records = (vec![], vec![witness(&device)]);
    let got = selections_at(&device, profile, Policy::Evidence, records.clone(), &ids, (8, 32))?;
    expect_default(&got[0], &["from 8 to 32", "plane::shuffle_xor"])?;
    expect_default(&got[1], &["from 8 to 32", "plane::sum"])?;
    expect_arm(&got[2])?;
    let got = selections_at(&device, profile, Policy::Evidence, records, &ids, (32, 32))?;
    got.iter().try_for_each(expect_arm)
}

/// README's promise is design.md's rule, word for word (line breaks aside).
fn readme_states_the_rule() -> Result<(), Failed> {
    let read = |name: &str| {
        let path = format!("{}/../{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))
    };
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let design = words(&read("docs/design.md")?);
    let start =
        design.find("**The rule.** ").ok_or("docs/design.md states no `**The rule.**`")? + "**The rule.** ".len();
    let end = design[start..].find("said once.").ok_or("the rule does not end with `said once.`")? + start;
    let rule = &design[start..end + "said once.".len()];
    if rule.len() < 200 {
        return Err(format!("the rule is too short to be the rule: {rule}").into());
    }
    if words(&read("README.md")?).contains(rule) {
        Ok(())
    } else {
        Err(format!("README.md does not state docs/design.md's rule word for word: {rule}").into())
    }
}

/// A declined record made under driver X declines the arm under driver Y of the same device,
/// for an arm whose semantics alone would let it run.
fn declines_survive_driver_updates() -> Result<(), Failed> {
    let entry = arm("dp4a::check#0")?;
    let old = Record {
        island: entry.site.id.into(),
        arm: entry.spec().label.into(),
        ..record(entry, Decision::DeclinedSlow)
    };
    let updated = Fingerprint { driver: "nvidia 590.10.01".into(), ..h200() };
    let profile = Profile::references(Backend::Cuda)[0];
    let got = selections(&updated, profile, Policy::Evidence, vec![old], &["dp4a::check#0"])?;
    expect_default(&got[0], &["under driver `nvidia 580.95.05`", "declined"])?;
    // Without the record the arm runs there: the record decided.
    expect_arm(&selections(&updated, profile, Policy::Evidence, vec![], &["dp4a::check#0"])?[0])
}

/// The committed H200 records of the device-defined arms, with one hash changed, are stale: a
/// launch on the H200 takes `default` and names the change; with the hashes as committed, it
/// takes the arm.
fn stale_flips_are_not_taken() -> Result<(), Failed> {
    let committed = embedded::records().map_err(|e| e.to_string())?;
    let h200 = committed
        .iter()
        .find(|r| r.island.ends_with("plane::plane_sum_f32_w32#0") && r.device.runtime == "cuda")
        .ok_or("no committed CUDA record of plane_sum_f32_w32")?
        .clone();
    let profile = code_hash::hash_profile(&h200.device).ok_or("no profile for the H200's fingerprint")?;
    let tampered = Record { code: CodeHashes { arm: "0000000000000000".into(), ..h200.code.clone() }, ..h200.clone() };
    let device = h200.device.clone();
    let got = selections(&device, profile, Policy::Evidence, vec![tampered], &["plane::plane_sum_f32_w32#0"])?;
    expect_default(&got[0], &["stale", "the arm's code changed"])?;
    expect_arm(&selections(&device, profile, Policy::Evidence, vec![h200], &["plane::plane_sum_f32_w32#0"])?[0])
}

/// Every committed flipped record of the H200 under CUDA selects its arm on that fingerprint:
/// the policy takes measured evidence (and the records are current for this build).
fn committed_flips_select() -> Result<(), Failed> {
    let committed = embedded::records().map_err(|e| e.to_string())?;
    let cuda: Vec<Record> =
        committed.iter().filter(|r| r.device.runtime == "cuda" && r.device.device == "NVIDIA H200").cloned().collect();
    let device = cuda.first().ok_or("no committed H200 record")?.device.clone();
    let profile = code_hash::hash_profile(&device).ok_or("no profile for the H200's fingerprint")?;
    let mut checked = 0;
    for r in cuda.iter().filter(|r| r.decision == Decision::Flipped) {
        let Some(id) = r.island.split("::").last() else { continue };
        let suffix = format!("::{id}");
        let got = selections(&device, profile, Policy::Strict, cuda.clone(), &[suffix.as_str()])?;
        expect_arm(&got[0]).map_err(|e| format!("{} ({}): {}", r.island, r.arm, e.message().unwrap_or_default()))?;
        checked += 1;
    }
    if checked < 10 {
        return Err(format!("only {checked} flipped H200 records were checked").into());
    }
    Ok(())
}

/// A ledger path that does not exist, and a file that is not a ledger, are errors naming them.
fn bad_ledgers_are_errors() -> Result<(), Failed> {
    let missing = "/nonexistent/islands-ledger.json";
    match embedded::load(&[missing]) {
        Err(LedgerError::Unreadable { path, .. }) if path == missing => {}
        other => return Err(format!("a missing ledger file gave {other:?}").into()),
    }
    let dir = std::env::temp_dir().join(format!("islands-bad-ledger-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let bad = dir.join("ledger.json");
    std::fs::write(&bad, "{ not json").map_err(|e| e.to_string())?;
    let result = embedded::load(&[&bad]);
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Err(e @ LedgerError::Malformed { .. }) if e.to_string().contains("ledger.json") => Ok(()),
        other => Err(format!("a ledger of invalid JSON gave {other:?}").into()),
    }
}

/// docs/design.md's table of semantic classes lists every built-in intrinsic once, with the
/// class it declares.
fn design_table_is_the_registry() -> Result<(), Failed> {
    use island_runtime::Semantics;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/design.md");
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let start = text.find("| intrinsic | class | where").ok_or("docs/design.md has no table of semantic classes")?;
    let mut rows = Vec::new();
    for line in text[start..].lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(name), Some(class)) = (cells.get(1), cells.get(2)) else { continue };
        rows.push((name.trim_matches('`').to_string(), class.to_string()));
    }
    let mut problems = Vec::new();
    let builtin: Vec<_> =
        island_runtime::intrinsic::intrinsics().iter().filter(|i| i.krate == "island-intrinsics").collect();
    for i in &builtin {
        let keyword = match i.semantics {
            Semantics::Defined => "defined",
            Semantics::FloatDeviceDefined(_) => "device-defined for float operands",
            Semantics::DeviceDefined(_) => "device-defined",
            Semantics::Synchronizing(_) => "synchronizing",
        };
        match rows.iter().filter(|(n, _)| n == i.name).collect::<Vec<_>>().as_slice() {
            [(_, class)] => {
                let declared = class.starts_with(keyword)
                    && !(keyword == "device-defined" && class.starts_with("device-defined for float operands"));
                if !declared {
                    problems.push(format!("`{}` is {keyword} ({}), the table says `{class}`", i.name, i.semantics));
                }
            }
            [] => problems.push(format!("`{}` is not in the table", i.name)),
            _ => problems.push(format!("`{}` is in the table more than once", i.name)),
        }
    }
    for (name, _) in &rows {
        if !builtin.iter().any(|i| i.name == name) {
            problems.push(format!("the table lists `{name}`, which is no registered built-in intrinsic"));
        }
    }
    if builtin.len() < 15 {
        problems.push(format!("only {} built-in intrinsics are registered", builtin.len()));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
}

/// The table promises `IDP.4A` for `__dp4a(`: a listing without it (the compiler folded the call)
/// is missing it whatever the source said, one with it is not, and the arm's own opcodes are
/// those `default`'s listing lacks.
fn machine_code_judged() -> Result<(), Failed> {
    use island_runtime::machine_code::{MachineCode, judge};
    let listing =
        |ops: &[&str]| MachineCode { how: "test".into(), opcodes: ops.iter().map(|s| s.to_string()).collect() };
    let default = listing(&["IMAD", "PRMT", "EXIT"]);
    let instructions = ["__dp4a(".to_string()];
    if island_runtime::intrinsic::sass_of(Backend::Cuda, "__dp4a(") != ["IDP.4A"] {
        return Err("the table no longer promises IDP.4A for `__dp4a(`".into());
    }
    let folded = judge(Backend::Cuda, &instructions, &listing(&["IMAD", "PRMT", "EXIT"]), &default);
    if folded.missing != ["__dp4a( → IDP.4A"] {
        return Err(format!("a listing without IDP.4A: {folded:?}").into());
    }
    let native = judge(Backend::Cuda, &instructions, &listing(&["IDP.4A.S8.S8", "EXIT"]), &default);
    if !native.missing.is_empty() || native.seen != ["IDP.4A.S8.S8"] || native.arm_only != ["IDP.4A.S8.S8"] {
        return Err(format!("a listing with IDP.4A.S8.S8: {native:?}").into());
    }
    Ok(())
}

/// What `ISLANDS_GATE=vulkan` makes a crate's harness do (`proofs::gating`), for `island-llm` on
/// this machine's Vulkan device, the bit-exact half only: from its committed ledger without the
/// records of this device, the ledger gated holds every other record as committed, and one
/// current record of this device for each of the crate's arms the device selects.
fn harness_gates_into_its_ledger() -> Result<(), Failed> {
    let krate = "island-llm";
    let device = RuntimeName::Device(Backend::Vulkan).client()?;
    let here = island_runtime::Device::of(&device).fingerprint.clone().ok_or("the Vulkan device has no fingerprint")?;
    let committed = embedded::committed().map_err(|e| e.to_string())?;
    let (_, before) = committed.get(krate).ok_or("island-llm has no committed ledger")?;
    let mut ledger = before.clone();
    ledger.records.retain(|r| !r.device.same_device(&here));
    let others = ledger.records.clone();
    let failed = proofs::gating::gate_into(&mut ledger, krate, Backend::Vulkan, false)?;
    if !failed.is_empty() {
        return Err(format!("not bit-exact here: {failed:?}").into());
    }
    for r in &others {
        if !ledger.records.contains(r) {
            return Err(format!("the record of {} `{}` on {} was not kept", r.island, r.arm, r.device).into());
        }
    }
    let cpu = proofs::cpu()?;
    let profile = island_runtime::device::profile(&device).ok_or("the Vulkan device has no profile")?;
    let mut gated = 0;
    for entry in registry::arms_of(krate).into_iter().filter(|e| registry::selects(e, &profile)) {
        let mine =
            ledger.records.iter().find(|r| r.island == entry.site.id && r.arm == entry.label() && r.device == here);
        let Some(r) = mine else {
            return Err(format!("no record of {} on {here} was written", entry.name()).into());
        };
        if let Some(why) = island_runtime::staleness::arm(entry, r, &cpu) {
            return Err(format!("the record written for {} is stale: {why}", entry.name()).into());
        }
        gated += 1;
    }
    if gated == 0 {
        return Err(format!("{here} selects no arm of {krate}: the trial shows nothing").into());
    }
    if ledger.records.len() != others.len() + gated {
        return Err(format!("{} records written, {} kept and {gated} gated", ledger.records.len(), others.len()).into());
    }
    Ok(())
}
