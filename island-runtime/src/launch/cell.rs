//! Cells of "verify, then delete" at the kernel level: an [`Op`] is one (op, quant type,
//! element types) cell of an engine, with the shapes it runs at, a plain-Rust reference, and its
//! single-source *twin* (the island kernel); [`Incumbent`]s are hand-written kernels of the same
//! op in a backend's own language (`crate::codegen::foreign`), registered by any crate.
//!
//! Every candidate of a cell reads the same device buffers in the same layout and writes the
//! same output, so `islands gate --ops` (`crate::verify::cell_gate`) compares them bit for bit and times
//! them on equal terms, and an engine's op function runs whichever one the device's record
//! selects (`crate::launch::dispatch`).
//!
//! ```
//! use island_runtime::cell::{Buffers, CellError, CellKey, Incumbent, Lang, Shape};
//! use cubecl::prelude::Client;
//!
//! fn launch(_client: &Client, _shape: &Shape, _buffers: &Buffers) -> Result<(), CellError> {
//!     Ok(())
//! }
//!
//! /// A hand-written RMSNorm of the SDK's examples' cell, in CUDA C++.
//! const MINE: Incumbent = Incumbent {
//!     cell: CellKey { op: "rmsnorm", quant: "none", elems: "f32" },
//!     name: "my engine's rmsnorm",
//!     lang: Lang::CudaCpp,
//!     runtime: "cuda",
//!     source: "extern \"C\" __global__ void rmsnorm(float* x) {}",
//!     launch,
//! };
//! island_runtime::incumbent!(MINE);
//! ```

use crate::tag::target::Target;
use crate::values::value::ValueKind;
use cubecl::prelude::Client;
use cubecl::server::Handle;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A cell's key: the op, its quant type (`none` for float ops) and its element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey {
    pub op: &'static str,
    pub quant: &'static str,
    pub elems: &'static str,
}

impl CellKey {
    /// Whether `record` is of this cell.
    pub fn matches(&self, record: &crate::records::cell_record::CellRecord) -> bool {
        record.op == self.op && record.quant == self.quant && record.elems == self.elems
    }
}

impl fmt::Display for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.op, self.quant, self.elems)
    }
}

/// A shape a cell runs at: `rows` independent rows of `cols` values (a matrix's rows, a
/// batch's tokens, a vector's blocks), named after where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shape {
    pub rows: usize,
    pub cols: usize,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}×{}", self.rows, self.cols)
    }
}

/// A shape with where it comes from (`SmolLM2-135M ffn_down`, `DRAM-bound`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedShape {
    pub name: &'static str,
    pub shape: Shape,
}

/// The device buffers of one launch of a cell: its inputs in the op's layout, its scratch
/// buffers (sizes from [`Op::scratch`]) and its output.
pub struct Buffers<'a> {
    pub inputs: &'a [Handle],
    pub scratch: &'a [Handle],
    pub out: &'a Handle,
}

/// Why a candidate could not be launched, read or compared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CellError {
    #[error("cell {cell}: {reason}")]
    Shape { cell: String, reason: String },
    #[error("cell {cell}, candidate `{candidate}`: {reason}")]
    Launch { cell: String, candidate: String, reason: String },
    /// `ISLANDS_CANDIDATE` or `ISLANDS_CELLS` is wrong (the error names which).
    #[error(transparent)]
    Setting(#[from] island_vocab::settings::SettingError),
    #[error("{0}")]
    Runtime(String),
}

/// Why a cell's kernels do not take a shape, in the op's own words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShapeRefused(pub String);

/// The host-side inputs of one problem: each input buffer's bytes, in the op's layout.
pub type Inputs = Vec<Vec<u8>>;

/// A cell of an engine and its single-source twin.
#[derive(Debug)]
pub struct Op {
    pub key: CellKey,
    /// One line: what the op computes, with its constants (`eps = 1e-5`).
    pub summary: &'static str,
    /// The shapes the gate runs: a model's real ones and one DRAM-bound shape.
    pub shapes: &'static [NamedShape],
    /// Rows of each shape the CPU runtime's `default` runs (it is slow); the plain-Rust
    /// reference must equal it there, and every device candidate must equal the reference on
    /// every row.
    pub oracle_rows: usize,
    /// Checks a shape before anything is allocated.
    pub check: fn(&Shape) -> Result<(), ShapeRefused>,
    /// Inputs of `shape` drawn from `seed`, built to decide (edge values, ties, wide ranges).
    pub inputs: fn(&Shape, u64) -> Inputs,
    /// Bytes of each scratch buffer at `shape`.
    pub scratch: fn(&Shape) -> Vec<usize>,
    /// Bytes of the output at `shape`.
    pub out_bytes: fn(&Shape) -> usize,
    /// For an op that updates a buffer in place (a softmax over its scores, a residual add into
    /// its stream): the input whose bytes the output starts as. Every candidate gets its own copy
    /// (the input itself stays as drawn); `None`: the output starts poisoned (NaN bytes).
    pub in_place: Option<usize>,
    /// What the output's values are (for distances in ulps).
    pub output: ValueKind,
    /// The plain-Rust reference of `default`: the output's bytes.
    pub reference: fn(&Shape, &Inputs) -> Vec<u8>,
    /// Launches the twin with `target` as its tag (`Target::for_client`, or `default` forced).
    /// The code it launches is hashed into the records (`crate::launch::twin_code`): a record
    /// whose hash differs was measured on other code.
    pub twin: fn(&Client, &Shape, &Buffers, Target) -> Result<(), CellError>,
}

/// The language an incumbent is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    /// CUDA C++, compiled by NVRTC (`crate::codegen::foreign::CudaKernel`).
    CudaCpp,
    /// A GLSL compute shader compiled to SPIR-V.
    Glsl,
    /// A CubeCL kernel written without islands (an engine's existing portable kernel).
    CubeCl,
}

impl Lang {
    pub fn word(self) -> &'static str {
        match self {
            Lang::CudaCpp => "CUDA C++",
            Lang::Glsl => "GLSL",
            Lang::CubeCl => "CubeCL",
        }
    }
}

/// A hand-written kernel of a cell: what an engine runs today.
#[derive(Debug)]
pub struct Incumbent {
    pub cell: CellKey,
    /// Unique within its cell (`block per row`, `tuned`).
    pub name: &'static str,
    pub lang: Lang,
    /// The CubeCL runtime it runs on (`cuda`, `wgpu<spirv>`).
    pub runtime: &'static str,
    /// Its text (hashed into the records).
    pub source: &'static str,
    pub launch: fn(&Client, &Shape, &Buffers) -> Result<(), CellError>,
}

/// An [`Op`] as registered, with the crate that registered it (whose ledger keeps its records).
#[derive(Debug)]
pub struct RegisteredOp {
    pub op: &'static Op,
    pub krate: &'static str,
}

/// An [`Incumbent`] as registered, with the crate that registered it.
#[derive(Debug)]
pub struct RegisteredIncumbent {
    pub incumbent: &'static Incumbent,
    pub krate: &'static str,
}

inventory::collect!(RegisteredOp);
inventory::collect!(RegisteredIncumbent);

/// Registers an [`Op`] (a `const` or `static`) with the crate's name.
#[macro_export]
macro_rules! op {
    ($op:path) => {
        $crate::__private::inventory::submit! {
            $crate::launch::cell::RegisteredOp { op: &$op, krate: env!("CARGO_PKG_NAME") }
        }
    };
}

/// Registers an [`Incumbent`] (a `const` or `static`) with the crate's name.
#[macro_export]
macro_rules! incumbent {
    ($incumbent:path) => {
        $crate::__private::inventory::submit! {
            $crate::launch::cell::RegisteredIncumbent { incumbent: &$incumbent, krate: env!("CARGO_PKG_NAME") }
        }
    };
}

/// Every registered op, by key.
pub fn ops() -> Vec<&'static RegisteredOp> {
    let mut all: Vec<_> = inventory::iter::<RegisteredOp>.into_iter().collect();
    all.sort_by_key(|r| r.op.key);
    all
}

/// The op of `key`, if registered.
pub fn op(key: &CellKey) -> Option<&'static RegisteredOp> {
    inventory::iter::<RegisteredOp>.into_iter().find(|r| r.op.key == *key)
}

/// The incumbents of `key` on `runtime` (every runtime: `None`), by name.
pub fn incumbents(key: &CellKey, runtime: Option<&str>) -> Vec<&'static Incumbent> {
    let mut all: Vec<&'static Incumbent> = inventory::iter::<RegisteredIncumbent>
        .into_iter()
        .map(|r| r.incumbent)
        .filter(|i| i.cell == *key && runtime.is_none_or(|rt| i.runtime == rt))
        .collect();
    all.sort_by_key(|i| i.name);
    all
}

/// Every registered incumbent, with its crate.
pub fn all_incumbents() -> Vec<&'static RegisteredIncumbent> {
    inventory::iter::<RegisteredIncumbent>.into_iter().collect()
}

/// The device a cell record is keyed by: the device's fingerprint, or for the CPU runtime (which
/// has no arms of its own, but may have incumbents) one built the same way with plane 1.
pub fn fingerprint(client: &Client) -> crate::hardware::fingerprint::Fingerprint {
    crate::hardware::device::Device::of(client).fingerprint.clone().unwrap_or_else(|| {
        let id = &client.properties().identity;
        crate::hardware::fingerprint::Fingerprint::new(
            crate::hardware::device::runtime_name(client),
            &id.name,
            &id.fingerprint,
            1,
            0,
        )
    })
}

/// The hash of an incumbent's code, as records keep it.
pub fn incumbent_hash(incumbent: &Incumbent) -> String {
    crate::records::record::code_hash(incumbent.source)
}

/// What a registry of cells must hold: unique keys, incumbents of registered ops, unique
/// incumbent names within a cell, shapes the op accepts. Each problem is one line.
pub fn registry_problems() -> Vec<String> {
    let mut problems = Vec::new();
    let all = ops();
    for pair in all.windows(2) {
        if pair[0].op.key == pair[1].op.key {
            problems
                .push(format!("cell {} is registered twice ({}, {})", pair[0].op.key, pair[0].krate, pair[1].krate));
        }
    }
    for r in &all {
        if r.op.shapes.is_empty() {
            problems.push(format!("cell {} ({}) names no shape", r.op.key, r.krate));
        }
        for s in r.op.shapes {
            if let Err(e) = (r.op.check)(&s.shape) {
                problems.push(format!("cell {} ({}): its shape `{}` {}: {e}", r.op.key, r.krate, s.name, s.shape));
            }
        }
    }
    let incumbents = all_incumbents();
    for (i, r) in incumbents.iter().enumerate() {
        let inc = r.incumbent;
        if op(&inc.cell).is_none() {
            problems
                .push(format!("incumbent `{}` of {} ({}): no such cell is registered", inc.name, inc.cell, r.krate));
        }
        if incumbents[..i].iter().any(|o| o.incumbent.cell == inc.cell && o.incumbent.name == inc.name) {
            problems.push(format!("incumbent `{}` of {} is registered twice", inc.name, inc.cell));
        }
        if matches!(inc.name, "twin" | "default") {
            problems.push(format!("incumbent of {} is named `{}`, a candidate's reserved name", inc.cell, inc.name));
        }
    }
    problems
}
