//! A recorded run (`--record`, `--expect`): the prompt, and per step the token and the logits'
//! SHA-256 as 64 hexadecimal digits. The logits themselves are not kept, so a difference is
//! reported by step only.

use crate::error::LlmError;
use crate::generate::{Generation, Step};
use crate::model_file::hex;
use serde::Deserialize;
use serde::de::{Deserializer, Error as _};
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    prompt: Vec<u32>,
    steps: Vec<FileStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStep {
    token: u32,
    sha256: Sha256Hex,
}

/// A SHA-256 written as 64 hexadecimal digits; anything else is refused where it stands (the
/// JSON reader's error names the line and column).
struct Sha256Hex([u8; 32]);

impl<'de> Deserialize<'de> for Sha256Hex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_hash(&s).map(Sha256Hex).ok_or_else(|| D::Error::custom(format!("{s:?} is not 64 hexadecimal digits")))
    }
}

/// 64 hexadecimal digits as 32 bytes, read byte by byte (no slicing of the string).
fn parse_hash(s: &str) -> Option<[u8; 32]> {
    let digits = s.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let nibble = |b: u8| (b as char).to_digit(16).filter(|_| b.is_ascii()).map(|v| v as u8);
    let mut hash = [0u8; 32];
    for (i, h) in hash.iter_mut().enumerate() {
        *h = nibble(digits[2 * i])? << 4 | nibble(digits[2 * i + 1])?;
    }
    Some(hash)
}

/// The run as the file's text.
pub fn format(g: &Generation) -> String {
    let mut out = format!("{{\n  \"prompt\": {:?},\n  \"steps\": [\n", g.prompt);
    for (i, s) in g.steps.iter().enumerate() {
        let sep = if i + 1 < g.steps.len() { "," } else { "" };
        out += &format!("    {{\"token\": {}, \"sha256\": \"{}\"}}{sep}\n", s.token, hex(&s.hash));
    }
    out + "  ]\n}\n"
}

/// A run from the file's text.
pub fn parse(text: &str) -> Result<Generation, serde_json::Error> {
    let file: File = serde_json::from_str(text)?;
    let steps = file.steps.into_iter().map(|s| Step { token: s.token, hash: s.sha256.0, logits: Vec::new() }).collect();
    Ok(Generation {
        prompt: file.prompt,
        steps,
        prefill: Default::default(),
        decode: Default::default(),
        host: Default::default(),
    })
}

pub fn write(path: &Path, g: &Generation) -> Result<(), LlmError> {
    std::fs::write(path, format(g)).map_err(|source| LlmError::RecordFile {
        path: path.to_path_buf(),
        doing: "write",
        source,
    })
}

pub fn read(path: &Path) -> Result<Generation, LlmError> {
    let text = std::fs::read_to_string(path).map_err(|source| LlmError::RecordFile {
        path: path.to_path_buf(),
        doing: "read",
        source,
    })?;
    parse(&text).map_err(|source| LlmError::Record { path: path.to_path_buf(), source })
}
