//! Hand-written kernels ("incumbents") run on a CubeCL client's own device, stream and buffers,
//! so that they are compared with an island kernel on equal terms: the same allocations, the
//! same launch path, the same synchronisation.
//!
//! **CUDA C++.** CubeCL 0.11's CUDA runtime accepts a kernel that brings its own text
//! (`CubeKernel::source` returning a `PrecompiledSource` tagged `"cuda"`): it compiles the text
//! with NVRTC, with the options of its own kernels (`--gpu-architecture=sm_XX[a]`, the toolkit's
//! include paths, `-lineinfo`), loads the entry point, and launches it on the client's stream
//! with the launch's buffers as the kernel's pointer parameters, in order. Hence the rules for an
//! incumbent's text: an `extern "C" __global__` entry, every parameter a pointer to one buffer
//! (scalars go in a buffer of their own), a block of exactly [`CudaKernel::cube_dim`] threads,
//! and static `__shared__` memory only (a precompiled kernel is launched with no dynamic shared
//! memory). This needs CubeCL's C++ code path, which islands' `cuda` feature selects.
//!
//! **Vulkan.** CubeCL 0.11's SPIR-V compiler refuses a precompiled kernel, and its wgpu path
//! takes precompiled text only as WGSL or MSL, so a GLSL incumbent cannot go through a CubeCL
//! launch; `crate::codegen::glsl_kernel` runs it on the `wgpu` device and queue behind the client.

use cubecl::CubeKernel;
use cubecl::PrecompiledSource;
use cubecl::ir::settings::Dim3;
use cubecl::ir::{AddressType, ElemType, Scope, UIntKind, metadata::Info, settings::ExecutionMode};
use cubecl::prelude::*;
use cubecl::server::{Handle, KernelArguments};

/// A CUDA C++ kernel written by hand: its translation unit, its `extern "C"` entry point and its
/// block size.
#[derive(Clone, Copy, Debug)]
pub struct CudaKernel {
    pub source: &'static str,
    pub entry: &'static str,
    /// Threads per block, as the text assumes (`__launch_bounds__`, shared arrays, strides).
    pub cube_dim: (u32, u32, u32),
}

/// Why a hand-written kernel was not launched.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForeignError {
    #[error("a CUDA C++ kernel runs on the `cuda` runtime only, not on `{0}`")]
    NotCuda(&'static str),
    #[error("`{entry}` is not an `extern \"C\"` entry point of its source")]
    NoEntry { entry: &'static str },
    #[error("a GLSL kernel runs on a wgpu runtime only, not on `{0}`")]
    NotWgpu(&'static str),
    #[error("no wgpu device is kept for this client: open it with `RuntimeName::client`")]
    NoWgpuDevice,
    #[error("the GLSL kernel does not compile: {0}")]
    Compile(String),
    #[error("{0}")]
    Runtime(String),
}

/// The kernel as CubeCL sees it: its own text (and its hash), an empty definition for the launch
/// settings.
struct Precompiled {
    kernel: CudaKernel,
    hash: u64,
}

impl Precompiled {
    fn dim(&self) -> Dim3 {
        let (x, y, z) = self.kernel.cube_dim;
        Dim3 { x, y, z }
    }
}

impl KernelMetadata for Precompiled {
    fn name(&self) -> &'static str {
        self.kernel.entry
    }

    fn id(&self) -> KernelId {
        // Every compilation cache is keyed by the id alone: it must cover the text.
        KernelId::new::<Self>().cube_dim(self.dim()).mode(ExecutionMode::Unchecked).info((self.kernel.entry, self.hash))
    }

    fn address_type(&self) -> ElemType {
        ElemType::UInt(UIntKind::U32)
    }
}

impl CubeKernel for Precompiled {
    fn define(&self) -> KernelDefinition {
        let settings = KernelSettings::new(self.dim(), ExecutionMode::Unchecked, AddressType::U32);
        KernelDefinition { body: Scope::root(settings.clone()), settings, info: Info::default() }
    }

    fn source(&self) -> Option<PrecompiledSource> {
        Some(PrecompiledSource {
            source: self.kernel.source.to_string(),
            entrypoint_name: self.kernel.entry.to_string(),
            lang: "cuda",
        })
    }
}

impl CudaKernel {
    /// Launches the kernel on `client` (a `cuda` client) over `count` blocks, with `buffers` as
    /// its parameters in order. Like a CubeCL launch it only enqueues: a compilation error
    /// surfaces when a result is read or the client synchronised.
    pub fn launch(&self, client: &Client, count: CubeCount, buffers: &[&Handle]) -> Result<(), ForeignError> {
        if client.name() != "cuda" {
            return Err(ForeignError::NotCuda(client.name()));
        }
        let hash = self.checked_hash()?;
        let args = buffers.iter().fold(KernelArguments::new(), |args, h| args.with_buffer((*h).clone().binding()));
        client.launch(Box::new(Precompiled { kernel: *self, hash }), count, args);
        Ok(())
    }

    /// The text's hash, after checking once per text and entry that the entry is there: hashing
    /// and scanning a few kilobytes at every launch would cost microseconds a CubeCL kernel's
    /// launch does not pay, and the comparison would measure launch paths.
    fn checked_hash(&self) -> Result<u64, ForeignError> {
        type Seen = Vec<((usize, usize, &'static str), u64)>;
        static SEEN: std::sync::Mutex<Seen> = std::sync::Mutex::new(Vec::new());
        let key = (self.source.as_ptr() as usize, self.source.len(), self.entry);
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, hash)) = seen.iter().find(|(k, _)| *k == key) {
            return Ok(*hash);
        }
        if !self.source.contains("extern \"C\"") || !self.source.contains(&format!("{}(", self.entry)) {
            return Err(ForeignError::NoEntry { entry: self.entry });
        }
        let hash = crate::values::hash::fnv1a(self.source.as_bytes());
        seen.push((key, hash));
        Ok(hash)
    }
}
