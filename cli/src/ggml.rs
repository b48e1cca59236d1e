//! ggml's quantized matmuls measured in the same run as the islands (`islands bench --ggml
//! PATH`): a built `test-backend-ops` (llama.cpp's or ggml's tests) runs in its perf mode on the
//! CUDA backend for Q8_0 and Q4_1 weights at m = 4096, k = 14336: n = 1 (its matvec, `mmvq`)
//! and n = 512 (its batched kernel, `mmq`). Its console lines are read back; it times each case
//! itself (kernel-only, many runs, the mean per run).
//!
//! Build it on the device from a llama.cpp checkout: `cmake -S . -B build -DGGML_CUDA=ON
//! -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_TESTS=ON && cmake --build build --target
//! test-backend-ops` (`docs/perf.md`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The cases asked for: `test-backend-ops -p` takes a regular expression over the op's
/// parameters.
pub const FILTER: &str = "type_a=(q8_0|q4_1),type_b=f32,m=4096,n=(1|512),k=14336,";

/// One measured case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub type_a: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Microseconds per run, as ggml reports them.
    pub us: f64,
    pub runs: u64,
}

impl Case {
    /// Whether this is the case of `type_a` at `m × n × k`.
    pub fn is(&self, type_a: &str, m: usize, n: usize, k: usize) -> bool {
        self.type_a == type_a && (self.m, self.n, self.k) == (m, n, k)
    }
}

/// Why ggml gave no cases.
#[derive(Debug, thiserror::Error)]
pub enum GgmlError {
    #[error("--ggml {}: no such file (the path of a built `test-backend-ops`)", .0.display())]
    Missing(PathBuf),
    #[error("--ggml {}: {source}", path.display())]
    Spawn { path: PathBuf, source: std::io::Error },
    /// It ran, and printed no case (`what`: not a run this bench can read) or failed; its last
    /// line says why.
    #[error("--ggml {}: {what} (exit status {status}, no `MUL_MAT` case read): {why}", path.display())]
    Run { path: PathBuf, what: &'static str, status: ExitStatus, why: String },
}

/// Checks that `path` is a file before anything is launched.
pub fn check(path: &Path) -> Result<(), GgmlError> {
    if path.is_file() { Ok(()) } else { Err(GgmlError::Missing(path.to_path_buf())) }
}

/// Runs `path` (a `test-backend-ops`) on the CUDA backend and returns its `MUL_MAT` cases.
pub fn measure(path: &Path) -> Result<Vec<Case>, GgmlError> {
    let out = Command::new(path)
        .args(["perf", "-o", "MUL_MAT", "-b", "CUDA0", "-p", FILTER])
        .output()
        .map_err(|source| GgmlError::Spawn { path: path.to_path_buf(), source })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let cases = parse(&text);
    if !out.status.success() || cases.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        let why = err.lines().chain(text.lines()).rfind(|l| !l.trim().is_empty()).unwrap_or("no output");
        return Err(GgmlError::Run {
            path: path.to_path_buf(),
            what: if cases.is_empty() { "not a `test-backend-ops` run this bench can read" } else { "failed" },
            status: out.status,
            why: why.to_string(),
        });
    }
    Ok(cases)
}

/// The `MUL_MAT` perf lines of a `test-backend-ops` console output:
/// `  MUL_MAT(type_a=q8_0,type_b=f32,m=4096,n=1,k=14336,…):   45696 runs -    23.07 us/run - …`
/// (`cli/tests/settings.rs` runs the bench on a stand-in printing such lines).
pub fn parse(text: &str) -> Vec<Case> {
    text.lines().filter_map(line).collect()
}

fn line(l: &str) -> Option<Case> {
    let rest = l.trim_start().strip_prefix("MUL_MAT(")?;
    let (params, timing) = rest.split_once("):")?;
    let (runs, rest) = timing.split_once("runs -")?;
    let (us, _) = rest.split_once("us/run")?;
    let param = |name: &str| {
        params.split(',').find_map(|p| p.strip_prefix(name).and_then(|v| v.strip_prefix('='))).map(str::to_string)
    };
    Some(Case {
        type_a: param("type_a")?,
        m: param("m")?.parse().ok()?,
        n: param("n")?.parse().ok()?,
        k: param("k")?.parse().ok()?,
        us: us.trim().parse().ok()?,
        runs: runs.trim().parse().ok()?,
    })
}
