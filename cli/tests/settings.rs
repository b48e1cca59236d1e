//! Settings launches would consult are checked before the CLI does anything: a policy that does
//! not exist, a ledger path that cannot be read and a ledger that does not parse each stop it
//! with status 2 and a message naming the value. (This test binary spawns the CLI; it links no
//! runtime.)

use std::process::Command;

fn islands(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_islands"));
    cmd.arg("list").env_remove("ISLANDS_POLICY").env_remove("ISLANDS_LEDGER");
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

#[test]
fn good_settings_run() {
    let (code, err) = islands(&[("ISLANDS_POLICY", "strict")]);
    assert_eq!(code, Some(0), "{err}");
}
