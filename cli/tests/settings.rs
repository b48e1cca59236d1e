//! Settings are checked before the CLI does anything: every `ISLANDS_*` variable of the table
//! (`docs/settings.md`) given a value it refuses, a policy that does not exist, a ledger path
//! that cannot be read, a ledger that does not parse and a candidate that names no incumbent
//! each stop it with status 2 and a message naming the value; a misspelt `ISLANDS_` name is
//! warned about once. So does a `--ggml` path of the bench that is not there stop it, and the
//! bench reads ggml's cases from a stand-in of `test-backend-ops`. (This test binary spawns the
//! CLI; it links no runtime.)

use island_vocab::settings::TABLE;
use std::process::Command;

/// `islands list` with `env` and no other `ISLANDS_` variable: its status and standard error.
fn islands(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_islands"));
    cmd.arg("list");
    for (k, _) in std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("ISLANDS_")) {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the islands binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_misspelt_policy_stops_the_cli() {
    let (code, err) = islands(&[("ISLANDS_POLICY", "strcit")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ISLANDS_POLICY=`strcit`") && err.contains("trust, strict or off"), "{err}");
}

#[test]
fn a_missing_ledger_file_stops_the_cli() {
    let (code, err) = islands(&[("ISLANDS_LEDGER", "/nonexistent/ledger.json")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("/nonexistent/ledger.json"), "{err}");
}

#[test]
fn a_ledger_of_invalid_json_stops_the_cli() {
    let dir = std::env::temp_dir().join(format!("islands-cli-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ledger.json");
    std::fs::write(&path, "{ not json").unwrap();
    let (code, err) = islands(&[("ISLANDS_LEDGER", path.to_str().unwrap())]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("does not parse") && err.contains("ledger.json"), "{err}");
}

/// The settings trial, run on the binary: each row's bad value stops it naming the variable and
/// the value (not another variable's name), and a misspelt name is warned about, once, with the
/// name it is closest to, while the CLI runs.
#[test]
fn every_setting_refuses_a_bad_value_and_a_misspelt_name_is_warned_about() {
    for s in TABLE {
        let (code, err) = islands(&[(s.name, s.bad)]);
        assert_eq!(code, Some(2), "{}=`{}` did not stop the CLI: {err}", s.name, s.bad);
        let named = format!("{}=`{}`", s.name, s.bad);
        assert!(err.contains(&named), "{}=`{}`: the error does not say `{named}`: {err}", s.name, s.bad);
    }
    let (code, err) = islands(&[("ISLANDS_DEPHT", "4")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("did you mean ISLANDS_DEPTH?"), "{err}");
    assert_eq!(err.matches("ISLANDS_DEPHT").count(), 1, "not warned about once: {err}");
}

#[test]
fn a_candidate_that_names_no_incumbent_stops_the_cli() {
    let (code, err) = islands(&[("ISLANDS_CANDIDATE", "no such kernel")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ISLANDS_CANDIDATE=`no such kernel`") && err.contains("registered incumbent"), "{err}");
}

#[test]
fn good_settings_run() {
    let (code, err) = islands(&[("ISLANDS_POLICY", "strict")]);
    assert_eq!(code, Some(0), "{err}");
}

/// What `test-backend-ops perf` prints (its console printer: colours, a case it does not
/// support, another op's line), for a stand-in of it.
const GGML_OUTPUT: &str = "Testing 2 devices\n\nBackend 1/2: CUDA0\n  Device description: NVIDIA H200\n  \
MUL_MAT(type_a=q8_0,type_b=f32,m=4096,n=1,k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3],v=0,o=1):                   \
45696 runs -    23.07 us/run - 117.44 MFLOP/run - \x1b[1;34m  5.09 TFLOPS\x1b[0m\n  \
MUL_MAT(type_a=q4_1,type_b=f32,m=4096,n=512,k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3],v=0,o=1):                  \
  372 runs -   344.10 us/run -  60.13 GFLOP/run - \x1b[1;34m174.74 TFLOPS\x1b[0m\n  \
MUL_MAT(type_a=q4_1,type_b=f32,m=4096,n=2,k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3],v=0,o=1): not supported\n  \
ADD(type=f32,ne=[10,5,4,3]):         8192 runs -     2.50 us/run -      1 kB/run -    0.40 GB/s\n  \
Backend CUDA0: OK\n";

/// `islands bench --ggml PATH` with a stand-in for `test-backend-ops` that prints `output`.
fn bench_with_ggml(output: &str) -> (Option<i32>, String, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("islands-cli-ggml-{}-{}", std::process::id(), output.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let (fake, text) = (dir.join("test-backend-ops"), dir.join("output.txt"));
    std::fs::write(&text, output).unwrap();
    std::fs::write(&fake, format!("#!/bin/sh\ncat '{}'\n", text.display())).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_islands"))
        .args(["bench", "--runtime", "cpu", "--small", "--only", "rmsnorm", "--iters", "1", "--rounds", "1", "--ggml"])
        .arg(&fake)
        .env_remove("ISLANDS_POLICY")
        .env_remove("ISLANDS_LEDGER")
        .output()
        .expect("the islands binary runs");
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_bench_reads_ggml_s_cases_from_its_output() {
    let (code, out, err) = bench_with_ggml(GGML_OUTPUT);
    assert_eq!(code, Some(0), "{out}{err}");
    let ggml: Vec<&str> = out.lines().filter(|l| l.contains("k=14336")).collect();
    assert_eq!(ggml.len(), 2, "{out}");
    assert!(ggml[0].contains("q8_0 m=4096 n=1 k=14336") && ggml[0].contains("23.07 µs (45696 runs)"), "{out}");
    assert!(ggml[1].contains("q4_1 m=4096 n=512 k=14336") && ggml[1].contains("344.10 µs (372 runs)"), "{out}");
}

#[test]
fn a_ggml_that_prints_no_case_is_an_error() {
    let (code, out, err) = bench_with_ggml("usage: test-backend-ops [mode]\n");
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("not a `test-backend-ops` run this bench can read"), "{err}");
}

#[test]
fn a_missing_ggml_stops_the_bench_before_it_runs() {
    let out = Command::new(env!("CARGO_BIN_EXE_islands"))
        .args(["bench", "--runtime", "cpu", "--ggml", "/nonexistent/test-backend-ops"])
        .output()
        .expect("the islands binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/nonexistent/test-backend-ops") && !String::from_utf8_lossy(&out.stdout).contains("bench on"),
        "{err}"
    );
}
