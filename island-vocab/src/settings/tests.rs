//! The settings trial: every row refuses its bad value and one of each way a parser could fall
//! back, accepts its default, and `docs/settings.md` shows the same rows; unknown names are
//! found with their closest setting; no Rust file but this module's reads an `ISLANDS_` name.

use super::*;
use std::path::Path;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("island-vocab lies in the workspace")
}

#[test]
fn every_setting_refuses_its_bad_value_naming_it() {
    for s in TABLE {
        let e = s.check(s.bad).expect_err(s.name);
        assert_eq!((e.name, e.value.as_str()), (s.name, s.bad), "{e}");
        assert_eq!(e.to_string(), format!("{}=`{}` is not {}", s.name, s.bad, s.kind.describe()));
        // Not only the one value: what a lax parser would take for the default is refused too.
        for lax in [format!("  {}  ", s.bad), "\u{7}".to_string()] {
            assert!(s.check(&lax).is_err(), "{}=`{lax}` was accepted", s.name);
        }
    }
}

#[test]
fn every_kind_refuses_what_a_lax_parser_would_default() {
    let flag = Kind::Flag;
    for bad in ["yes", "true", "2", "01", "on"] {
        assert_eq!(flag.flag(bad), None, "{bad}");
    }
    let count = Kind::Count { min: 32, max: 1024, step: 32 };
    for bad in ["0", "16", "48", "1056", "-32", "thirty-two", "32.0"] {
        assert_eq!(count.count(bad), None, "{bad}");
    }
    assert_eq!(count.count("64"), Some(64));
    for bad in ["0xfg", "0x", "-1", "18446744073709551616", "1e3"] {
        assert_eq!(Kind::Seed.seed(bad), None, "{bad}");
    }
    assert_eq!(Kind::Seed.seed("0x10"), Some(16));
    for bad in ["vulkn", "vulkan,", "cpu", "vulkan,none", "Vulkan"] {
        assert_eq!(Kind::Backends.backends(bad), None, "{bad}");
    }
    assert_eq!(Kind::Backends.backends("cuda, vulkan"), Some(vec![Backend::Cuda, Backend::Vulkan]));
    assert_eq!(Kind::Backends.backends("none"), Some(vec![]));
    assert_eq!(POLICY.kind.word("Strict"), None);
    // A parser of another kind refuses every value: never a default.
    assert_eq!(Kind::Flag.count("1"), None);
    assert_eq!(Kind::Seed.flag("1"), None);
}

#[test]
fn an_empty_value_is_the_default_and_defaults_are_values() {
    for s in TABLE {
        assert_eq!(s.check(""), Ok(()), "{}", s.name);
        assert_eq!(s.check("  "), Ok(()), "{}", s.name);
        match s.kind {
            Kind::Choice(_) => assert_eq!(s.word(""), Ok(s.default), "{}", s.name),
            // The one default that is not a value: the island's own lane count.
            Kind::Count { .. } if s.name == LANES.name => {}
            Kind::Flag | Kind::Seed | Kind::Count { .. } => assert_eq!(s.check(s.default), Ok(()), "{}", s.name),
            _ => {}
        }
    }
    assert_eq!(POLICY.word(" strict "), Ok("strict"));
}

#[test]
fn names_are_unique_and_in_the_namespace() {
    for (i, s) in TABLE.iter().enumerate() {
        assert!(s.name.starts_with("ISLANDS_") && s.name[8..].chars().all(|c| c.is_ascii_uppercase() || c == '_'));
        assert!(TABLE[..i].iter().all(|t| t.name != s.name), "{} twice", s.name);
        assert!(
            ![s.meaning, s.default, s.read_by].iter().any(|t| t.contains('|')),
            "{}: a `|` breaks the docs",
            s.name
        );
    }
}

#[test]
fn unknown_names_are_found_with_the_closest_setting() {
    let found = unknown_among(
        ["ISLANDS_DEPHT", "ISLANDS_POLICY", "PATH", "MY_ISLANDS_SEED", "ISLANDS_SOMETHING_ELSE_ENTIRELY"]
            .map(String::from),
    );
    assert_eq!(
        found,
        [
            Unknown { name: "ISLANDS_DEPHT".into(), closest: Some("ISLANDS_DEPTH") },
            Unknown { name: "ISLANDS_SOMETHING_ELSE_ENTIRELY".into(), closest: None },
        ]
    );
    assert!(found[0].to_string().contains("did you mean ISLANDS_DEPTH?"), "{}", found[0]);
    // Every setting, one letter dropped, is unknown and points back to it.
    for s in TABLE {
        let typo = format!("{}{}", &s.name[..s.name.len() - 2], &s.name[s.name.len() - 1..]);
        let found = unknown_among([typo.clone()]);
        assert_eq!(found, [Unknown { name: typo, closest: Some(s.name) }]);
    }
    assert!(unknown_among(TABLE.iter().map(|s| s.name.to_string())).is_empty());
}

/// `docs/settings.md`'s table is this one: the same rows, in the same order.
#[test]
fn the_docs_table_is_the_code_table() {
    let docs = std::fs::read_to_string(workspace().join("docs/settings.md")).expect("docs/settings.md");
    let rows: Vec<&str> = docs.lines().filter(|l| l.starts_with("| `ISLANDS_")).collect();
    let want: Vec<String> = TABLE.iter().map(|s| s.doc_row()).collect();
    assert!(rows == want, "docs/settings.md's table differs from the code's, whose rows are:\n{}", want.join("\n"));
}

/// No Rust source but this module reads an `ISLANDS_` variable itself, and every name a script
/// reads is in the table.
#[test]
fn the_table_is_the_only_reader() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() && !["target", "patches", ".git"].contains(&name.as_str()) {
                walk(&path, out);
            } else if name.ends_with(".rs") || name.ends_with(".sh") || name == "run" {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(workspace(), &mut files);
    let mut failures = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let shown = file.strip_prefix(workspace()).unwrap().display().to_string();
        if file.extension().is_some_and(|e| e == "rs") {
            if file.starts_with(workspace().join("island-vocab/src/settings")) {
                continue;
            }
            for line in text.lines() {
                if line.contains("\"ISLANDS_")
                    && ["env::var(", "var_os(", "var(\"ISLANDS_"].iter().any(|r| line.contains(r))
                {
                    failures.push(format!("{shown} reads the environment itself: {}", line.trim()));
                }
            }
        } else {
            for (at, _) in text.match_indices("ISLANDS_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !TABLE.iter().any(|s| s.name == name) {
                    failures.push(format!("{shown} names {name}, which is in no row of the table"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
