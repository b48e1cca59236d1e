//! The CubeCL runtimes this build can execute on, by name.

use cubecl::prelude::Client;
#[allow(unused_imports)]
use cubecl_runtime::runtime::Runtime;
use std::fmt;

/// A runtime a proof, a check or a bench can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuntimeName {
    /// CubeCL's CPU runtime, the oracle.
    Cpu,
    /// wgpu with CubeCL's SPIR-V compiler (Vulkan; lavapipe on a machine without a GPU).
    Vulkan,
    /// wgpu with CubeCL's WGSL compiler.
    Wgsl,
    /// CUDA, C++ code generation compiled by NVRTC.
    Cuda,
    /// HIP (AMD), C++ code generation compiled by HIPRTC.
    Hip,
    /// wgpu with CubeCL's MSL compiler (Apple).
    Metal,
}

impl RuntimeName {
    pub const ALL: [RuntimeName; 6] =
        [RuntimeName::Cpu, RuntimeName::Vulkan, RuntimeName::Wgsl, RuntimeName::Cuda, RuntimeName::Hip, RuntimeName::Metal];

    pub fn parse(name: &str) -> Option<RuntimeName> {
        RuntimeName::ALL.into_iter().find(|r| r.as_str() == name)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            RuntimeName::Cpu => "cpu",
            RuntimeName::Vulkan => "vulkan",
            RuntimeName::Wgsl => "wgsl",
            RuntimeName::Cuda => "cuda",
            RuntimeName::Hip => "hip",
            RuntimeName::Metal => "metal",
        }
    }

    /// Whether this build includes the runtime (its cargo feature).
    pub const fn built(self) -> bool {
        match self {
            RuntimeName::Cpu => cfg!(feature = "cpu"),
            RuntimeName::Vulkan => cfg!(feature = "vulkan"),
            RuntimeName::Wgsl => cfg!(feature = "wgpu"),
            RuntimeName::Cuda => cfg!(feature = "cuda"),
            RuntimeName::Hip => cfg!(feature = "hip"),
            RuntimeName::Metal => cfg!(feature = "metal"),
        }
    }

    /// A client of the runtime's default device. Fails, rather than panics, when the runtime
    /// is not built in or no device of its kind is present.
    pub fn client(self) -> Result<Client, String> {
        if !self.built() {
            return Err(format!("this build has no `{self}` runtime (enable its cargo feature)"));
        }
        let make = move || -> Client {
            match self {
                #[cfg(feature = "cpu")]
                RuntimeName::Cpu => cubecl::cpu::CpuRuntime::client(&Default::default()),
                #[cfg(feature = "vulkan")]
                RuntimeName::Vulkan => {
                    let device = cubecl::wgpu::WgpuDevice::default().on(cubecl::wgpu::WgpuBackend::Vulkan);
                    <cubecl::wgpu::WgpuRuntime<cubecl::wgpu::AutoCompiler> as Runtime>::client(&device)
                }
                #[cfg(feature = "wgpu")]
                RuntimeName::Wgsl => <cubecl::wgpu::WgpuRuntime<cubecl::wgpu::AutoCompiler> as Runtime>::client(&Default::default()),
                #[cfg(feature = "cuda")]
                RuntimeName::Cuda => cubecl::cuda::CudaRuntime::client(&Default::default()),
                #[cfg(feature = "hip")]
                RuntimeName::Hip => cubecl::hip::HipRuntime::client(&Default::default()),
                #[cfg(feature = "metal")]
                RuntimeName::Metal => {
                    let device = cubecl::wgpu::WgpuDevice::default().on(cubecl::wgpu::WgpuBackend::Metal);
                    <cubecl::wgpu::WgpuRuntime<cubecl::wgpu::AutoCompiler> as Runtime>::client(&device)
                }
                #[allow(unreachable_patterns)]
                _ => unreachable!("checked by `built`"),
            }
        };
        std::panic::catch_unwind(make).map_err(|p| {
            format!("no `{self}` device could be opened: {}", crate::proof::panic_text(&p))
        })
    }
}

impl fmt::Display for RuntimeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
