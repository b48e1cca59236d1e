//! What the GPU really executes. The lowering check and the gate look for the table's instruction
//! in the source CubeCL generates (`__dp4a(`, `mma.sync…`, `OpSDot`), but a GPU runs what comes
//! after: NVRTC's PTX, then `ptxas` or the driver's compiler, then machine code (SASS on NVIDIA).
//! A `__dp4a` the compiler folds away, or a tile split into FMA loops, passes every source check.
//!
//! On CUDA the gate compiles the exact source CubeCL generated for the device with NVRTC, with the
//! options CubeCL's own compilation uses (`--gpu-architecture=sm_XY[a]`, the CUDA include path,
//! `-lineinfo`), asks NVRTC for the CUBIN instead of the PTX, and disassembles it with the
//! toolkit's `cuobjdump -sass`. The driver compiles the PTX it is handed with its own compiler,
//! of the same generation; the record says which way the listing was obtained. Each lowering row
//! may name the machine instruction its instruction must become (`lowerings(cuda => "__dp4a("
//! sass "IDP.4A")`); an arm whose listing lacks one is declined. Vulkan drivers reached through
//! wgpu expose no pipeline internals, so their records say the code is not inspectable there.

use crate::records::record::MachineCodeEvidence;
use island_vocab::Backend;
use serde::{Deserialize, Serialize};

/// The machine code of one kernel: how it was obtained, and its distinct opcodes with their
/// modifiers (`IDP.4A.S8.S8`, `SHFL.BFLY`), in order of first appearance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineCode {
    pub how: String,
    pub opcodes: Vec<String>,
}

impl MachineCode {
    /// Whether an opcode starts with `prefix` (`IDP.4A` matches `IDP.4A.S8.S8`).
    pub fn has(&self, prefix: &str) -> bool {
        self.opcodes.iter().any(|o| MachineCode::matches(o, prefix))
    }

    /// Whether `opcode` is `prefix` or `prefix` with modifiers.
    pub fn matches(opcode: &str, prefix: &str) -> bool {
        opcode == prefix || opcode.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('.'))
    }
}

/// The evidence of an arm whose source holds the table's `instructions`: for each, the machine
/// instructions the table promises (`crate::tag::intrinsic::sass_of`), and those the arm's listing
/// lacks (none of a row's alternatives found); and the arm's opcodes that `default`'s lacks.
pub fn judge(
    backend: Backend,
    instructions: &[String],
    arm: &MachineCode,
    default: &MachineCode,
) -> MachineCodeEvidence {
    let mut evidence = MachineCodeEvidence {
        how: arm.how.clone(),
        arm_only: arm.opcodes.iter().filter(|o| !default.opcodes.contains(o)).cloned().collect(),
        ..Default::default()
    };
    for instruction in instructions {
        let promised = crate::tag::intrinsic::sass_of(backend, instruction);
        if promised.is_empty() {
            continue;
        }
        let row = format!("{instruction} → {}", promised.join(" or "));
        let seen: Vec<&String> =
            arm.opcodes.iter().filter(|o| promised.iter().any(|p| MachineCode::matches(o, p))).collect();
        if seen.is_empty() {
            evidence.missing.push(row.clone());
        }
        for o in seen {
            if !evidence.seen.contains(o) {
                evidence.seen.push(o.clone());
            }
        }
        evidence.expected.push(row);
    }
    evidence
}

/// The distinct opcodes of a `cuobjdump -sass` (or `nvdisasm`) listing: on each instruction line
/// (`/*0070*/   @!P0 IDP.4A.S8.S8 R5, R2, R3, R0 ;`), the first word after the address and the
/// predicate.
pub fn parse_sass(listing: &str) -> Vec<String> {
    let mut opcodes: Vec<String> = Vec::new();
    for line in listing.lines() {
        let Some(rest) = line.trim_start().strip_prefix("/*") else { continue };
        let Some((address, rest)) = rest.split_once("*/") else { continue };
        if !address.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let mut words = rest.split_whitespace().skip_while(|w| w.starts_with('@'));
        let Some(op) = words.next() else { continue };
        let op = op.trim_end_matches(';');
        if !op.is_empty()
            && op.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && !opcodes.iter().any(|o| o == op)
        {
            opcodes.push(op.to_string());
        }
    }
    opcodes
}

/// The SASS of CUDA C++ `source` (as CubeCL generated it for a device of compute capability
/// `sm`).
#[cfg(feature = "cuda")]
pub fn cuda(source: &str, sm: u32) -> Result<MachineCode, MachineCodeError> {
    let cubin = nvrtc_cubin(source, sm)?;
    let dir = std::env::temp_dir().join(format!("islands-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| MachineCodeError::Io(format!("{}: {e}", dir.display())))?;
    let file = dir.join(format!("{}.cubin", crate::records::record::code_hash(source)));
    std::fs::write(&file, &cubin).map_err(|e| MachineCodeError::Io(format!("{}: {e}", file.display())))?;
    let tool = cuda_tool("cuobjdump");
    let out = std::process::Command::new(&tool).arg("-sass").arg(&file).output().map_err(|e| {
        MachineCodeError::Disassembler(format!(
            "{} -sass: {e} (the CUDA toolkit's cuobjdump disassembles the kernel)",
            tool.display()
        ))
    })?;
    let _ = std::fs::remove_file(&file);
    if !out.status.success() {
        return Err(MachineCodeError::Disassembler(format!(
            "{} -sass failed: {}",
            tool.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let version = crate::hardware::nvrtc::version().unwrap_or_else(|| "?".into());
    Ok(MachineCode {
        how: format!(
            "NVRTC {version} CUBIN for {}, same source and options as the launch; `cuobjdump -sass`",
            arch(sm)
        ),
        opcodes: parse_sass(&String::from_utf8_lossy(&out.stdout)),
    })
}

#[cfg(feature = "cuda")]
fn arch(sm: u32) -> String {
    // CubeCL compiles for the architecture-specific target from Hopper on.
    if sm >= 90 { format!("sm_{sm}a") } else { format!("sm_{sm}") }
}

/// The CUDA toolkit's `bin/name`, where CubeCL finds the toolkit; else `name` on the path.
#[cfg(feature = "cuda")]
fn cuda_tool(name: &str) -> std::path::PathBuf {
    cubecl::cuda::install::cuda_path()
        .map(|home| home.join("bin").join(name))
        .filter(|p| p.exists())
        .unwrap_or_else(|| name.into())
}

#[cfg(feature = "cuda")]
fn nvrtc_cubin(source: &str, sm: u32) -> Result<Vec<u8>, MachineCodeError> {
    use cudarc::nvrtc::{result, sys};
    // The include paths CubeCL's own compilation passes (`CUDA_PATH`, then the usual install
    // places), which panic without a toolkit: asked only after one was found.
    use cubecl::cuda::install::{cccl_include_path, cuda_path, include_path};
    if cuda_path().is_none() {
        return Err(MachineCodeError::NoToolkit);
    }
    let cccl = cccl_include_path();
    let mut options = vec![
        format!("--gpu-architecture={}", arch(sm)),
        format!("--include-path={}", include_path().display()),
        "-lineinfo".to_string(),
    ];
    if cccl.exists() {
        options.push(format!("--include-path={}", cccl.display()));
    }
    let c_source = std::ffi::CString::new(source).map_err(|e| MachineCodeError::Nvrtc(e.to_string()))?;
    let program =
        result::create_program(c_source.as_c_str(), None).map_err(|e| MachineCodeError::Nvrtc(e.to_string()))?;
    // SAFETY: `program` was created above and is destroyed once, below; the CUBIN buffer is sized
    // by NVRTC's own report of its size.
    unsafe {
        let outcome = (|| {
            if result::compile_program(program, &options).is_err() {
                let log = result::get_program_log(program).map_err(|e| MachineCodeError::Nvrtc(e.to_string()))?;
                let log = std::ffi::CStr::from_ptr(log.as_ptr()).to_string_lossy().into_owned();
                return Err(MachineCodeError::Nvrtc(format!("refused the source: {log}")));
            }
            let mut size = 0usize;
            sys::nvrtcGetCUBINSize(program, &mut size)
                .result()
                .map_err(|e| MachineCodeError::Nvrtc(format!("CUBIN size: {e}")))?;
            let mut cubin = vec![0u8; size];
            sys::nvrtcGetCUBIN(program, cubin.as_mut_ptr().cast())
                .result()
                .map_err(|e| MachineCodeError::Nvrtc(format!("CUBIN: {e}")))?;
            Ok(cubin)
        })();
        let _ = result::destroy_program(program);
        outcome
    }
}

/// Without CUDA in the build, no CUDA machine code.
#[cfg(not(feature = "cuda"))]
pub fn cuda(_source: &str, _sm: u32) -> Result<MachineCode, MachineCodeError> {
    Err(MachineCodeError::NotBuilt)
}

/// Why the machine code of a kernel could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MachineCodeError {
    #[error("this build has no CUDA runtime (`--features cuda`)")]
    NotBuilt,
    #[error("no CUDA toolkit found (set CUDA_PATH): NVRTC needs its headers")]
    NoToolkit,
    #[error("NVRTC: {0}")]
    Nvrtc(String),
    #[error("{0}")]
    Disassembler(String),
    #[error("{0}")]
    Io(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_read_off_a_listing() {
        let listing = "\
	code for sm_90a
		Function : k
	.headerflags	@\"EF_CUDA_TEXMODE_UNIFIED\"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
        /*0070*/                   IDP.4A.S8.S8 R5, R2, R3, R0 ;          /* 0x0000000302057226 */
        /*0080*/              @!P0 SHFL.BFLY PT, R7, R6, 0x1, 0x1f ;      /* 0x0c201f0006077f89 */
        /*0090*/                   IDP.4A.S8.S8 R9, R2, R3, R5 ;
        /*00a0*/                   EXIT ;
";
        let code = MachineCode { how: String::new(), opcodes: parse_sass(listing) };
        assert_eq!(code.opcodes, ["LDC", "IDP.4A.S8.S8", "SHFL.BFLY", "EXIT"]);
        assert!(code.has("IDP.4A") && code.has("SHFL.BFLY") && code.has("EXIT"));
        assert!(!code.has("IDP.4") && !code.has("HMMA"));
    }
}
