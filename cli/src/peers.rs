//! The peers a user would pick instead of an island kernel, timed in the same run through torch
//! (when `python3` has torch and a CUDA device): `torch._int_mm` with B row-major and
//! column-major (cuBLASLt's int8 kernels take B column-major: the layout decides its speed),
//! `torch.matmul` on f16,
//! `torch.nn.functional.rms_norm` eager and replayed from a CUDA graph, and torch's device copy.
//! Each is timed kernel-only as the bench times the islands: inputs created once, N calls
//! back to back between two events, the median of several rounds.

use serde::Deserialize;

/// Microseconds per call, from one run of the script.
#[derive(Debug, Deserialize)]
pub struct Peers {
    pub torch: String,
    pub int_mm_b_row_major: f64,
    pub int_mm_b_col_major: f64,
    pub rms_norm_eager: f64,
    pub rms_norm_graph: f64,
    pub copy: f64,
    /// `torch.matmul` on f16 `size²` matrices (f16 out).
    pub matmul_f16: f64,
}

/// ggml's `mmvq` on the Q8_0 matvec 4096×14336, quoted: measured on an H200 with ggml built
/// from source, in the same run as the island (2026-11-30, `docs/perf.md`).
pub const GGML_MMVQ_4096X14336_US: f64 = 22.86;

const SCRIPT: &str = r#"
import json, sys, torch
import torch.nn.functional as F
size, rows, cols, rounds = (int(v) for v in sys.argv[1:5])
def timed(fn, n):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n): fn()
        e.record(); torch.cuda.synchronize()
        out.append(s.elapsed_time(e) / n * 1e3)
    return sorted(out)[len(out) // 2]
g = torch.Generator(device='cuda').manual_seed(7)
a = torch.randint(-128, 127, (size, size), dtype=torch.int8, device='cuda', generator=g)
b = torch.randint(-128, 127, (size, size), dtype=torch.int8, device='cuda', generator=g)
b_col = b.t().contiguous().t()
ha = torch.randn(size, size, device='cuda', generator=g).half()
hb = torch.randn(size, size, device='cuda', generator=g).half()
x = torch.randn(rows, cols, device='cuda', generator=g)
w = torch.randn(cols, device='cuda', generator=g)
y = torch.empty_like(x)
rms = lambda: F.rms_norm(x, (cols,), w, 1e-6)
graph = torch.cuda.CUDAGraph()
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    for _ in range(3): rms()
torch.cuda.synchronize()
with torch.cuda.graph(graph):
    out = rms()
print(json.dumps({
    "torch": torch.__version__,
    "int_mm_b_row_major": timed(lambda: torch._int_mm(a, b), 20),
    "int_mm_b_col_major": timed(lambda: torch._int_mm(a, b_col), 20),
    "rms_norm_eager": timed(rms, 200),
    "rms_norm_graph": timed(graph.replay, 200),
    "copy": timed(lambda: y.copy_(x), 200),
    "matmul_f16": timed(lambda: torch.matmul(ha, hb), 20),
}))
"#;

/// Why there are no torch peers (no Python, no torch, no GPU).
#[derive(Debug, thiserror::Error)]
pub enum PeersError {
    #[error("python3: {0}")]
    Spawn(std::io::Error),
    /// The script failed: its last line of standard error.
    #[error("{0}")]
    Script(String),
    #[error("torch peers: {0}")]
    Output(serde_json::Error),
}

/// Runs the peers on the given shapes; `Err` says why there are none.
pub fn measure(gemm_size: usize, rows: usize, cols: usize, rounds: usize) -> Result<Peers, PeersError> {
    let out = std::process::Command::new("python3")
        .args(["-c", SCRIPT, &gemm_size.to_string(), &rows.to_string(), &cols.to_string(), &rounds.to_string()])
        .output()
        .map_err(PeersError::Spawn)?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(PeersError::Script(err.lines().last().unwrap_or("torch peers failed").to_string()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim().lines().last().unwrap_or("")).map_err(PeersError::Output)
}
