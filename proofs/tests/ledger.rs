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
use island_runtime::record::{CodeHashes, ConformanceEvidence, Decision, ProofEvidence, Record};
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
            launches_default(Decision::DeclinedSlow, Policy::Trust, true)
        }),
        Trial::test("ledger::a_failed_record_runs_default", || launches_default(Decision::Failed, Policy::Trust, true)),
        Trial::test("ledger::a_declined_machine_code_record_runs_default", || {
            launches_default(Decision::DeclinedMachineCode, Policy::Trust, true)
        }),
        Trial::test("machine_code::a_promised_instruction_missing_from_the_listing_is_named", machine_code_judged),
        Trial::test("ledger::the_strict_policy_runs_default_without_a_passing_record", || {
            launches_default(Decision::Unverified, Policy::Strict, true)
        }),
        Trial::test("ledger::an_unverified_record_whose_exact_half_failed_runs_default", || {
            launches_default(Decision::Unverified, Policy::Trust, true)
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
        Trial::test("policy::a_declined_record_declines_under_a_new_driver", declines_survive_driver_updates),
        Trial::test("policy::a_stale_flipped_record_is_not_taken", stale_flips_are_not_taken),
        Trial::test("policy::the_committed_h200_records_select_their_arms", committed_flips_select),
        Trial::test("policy::a_ledger_that_cannot_be_read_or_parsed_is_an_error", bad_ledgers_are_errors),
        Trial::test("policy::design_md_states_every_intrinsics_class", design_table_is_the_registry),
    ];
    if RuntimeName::Device(island_runtime::Backend::Vulkan).built() {
        trials.push(Trial::test("ledger::gate_declines_a_slow_arm", gate_declines_a_slow_arm));
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
            machine_code: None,
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
    let cpu = proofs::cpu()?;
    let entries: Vec<&'static ArmEntry> = ids.iter().map(|id| arm(id)).collect::<Result<_, _>>()?;
    let facts = island_runtime::evidence::facts_of(&entries, device, &profile, &records, &cpu);
    let view = DeviceLedger::leak(device.clone(), profile, policy, records, facts);
    let target = Target::forced(profile, &cpu).with_ledger(view);
    Ok(entries.iter().map(|e| (e.site.id.to_string(), target.explain(e.site))).collect())
}

fn expect_default(selection: &(String, Selection), words: &[&str]) -> Result<(), Failed> {
    match &selection.1 {
        Selection::Default(DefaultReason::Ledger { reason, .. }) if words.iter().all(|w| reason.contains(w)) => Ok(()),
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
        Policy::Trust,
        vec![],
        &["mma::mma_f16#0", "gemm_f16::gemm_f16#0", "mma::mma_i8#0", "dp4a::check#0"],
    )?;
    expect_default(&got[0], &["no record of this device"])?;
    expect_default(&got[1], &["no record of this device"])?;
    expect_arm(&got[2])?;
    expect_arm(&got[3])
}

/// An NVIDIA GPU other than the H200 under Vulkan, 32-lane subgroups, no records: the float
/// plane reductions take `default` (device-defined for floats), the integer sum and the
/// shuffles keep their arms.
fn float_plane_reductions_elsewhere() -> Result<(), Failed> {
    let device = Fingerprint {
        runtime: "wgpu<spirv>".into(),
        device: "NVIDIA GeForce RTX 4090".into(),
        identity: String::new(),
        plane: 32,
        sm: 0,
        driver: "nvidia 580.95.05".into(),
    };
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
    let got = selections(&device, profile, Policy::Trust, vec![], &ids)?;
    for s in &got[..3] {
        expect_default(s, &["plane::", "f32", "device decides"])?;
    }
    expect_arm(&got[3])?;
    expect_arm(&got[4])
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
    let got = selections(&updated, profile, Policy::Trust, vec![old], &["dp4a::check#0"])?;
    expect_default(&got[0], &["under driver `nvidia 580.95.05`", "declined"])?;
    // Without the record the arm runs there: the record decided.
    expect_arm(&selections(&updated, profile, Policy::Trust, vec![], &["dp4a::check#0"])?[0])
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
    let got = selections(&device, profile, Policy::Trust, vec![tampered], &["plane::plane_sum_f32_w32#0"])?;
    expect_default(&got[0], &["stale", "the arm's code changed"])?;
    expect_arm(&selections(&device, profile, Policy::Trust, vec![h200], &["plane::plane_sum_f32_w32#0"])?[0])
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
