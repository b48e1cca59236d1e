//! Backends an island arm can be written for, and the runtimes that execute kernels.

use serde::Serialize;
use std::fmt;

/// A GPU backend an island arm is keyed by (`cuda => …`).
///
/// The CPU is not a backend in this sense: it always takes the normative `default` arm, and
/// executes accelerated arms only through their emulation, inside proofs.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// NVIDIA, through CubeCL's CUDA runtime.
    Cuda,
    /// AMD, through CubeCL's HIP runtime.
    Hip,
    /// Vulkan, through wgpu with CubeCL's SPIR-V compiler.
    Vulkan,
    /// Apple, through wgpu's MSL path or CubeCL's native Metal runtime.
    Metal,
    /// WebGPU, through wgpu with CubeCL's WGSL compiler.
    WebGpu,
}

impl Backend {
    /// Every backend, in the order the CLI and the docs list them.
    pub const ALL: [Backend; 5] = [Backend::Cuda, Backend::Hip, Backend::Vulkan, Backend::Metal, Backend::WebGpu];

    /// The keyword an arm uses for this backend.
    pub const fn keyword(self) -> &'static str {
        match self {
            Backend::Cuda => "cuda",
            Backend::Hip => "hip",
            Backend::Vulkan => "vulkan",
            Backend::Metal => "metal",
            Backend::WebGpu => "webgpu",
        }
    }

    /// The backend an arm keyword names.
    pub fn from_keyword(word: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.keyword() == word)
    }

    /// The variant's name, as generated code spells it (`Backend::Cuda`).
    pub const fn variant(self) -> &'static str {
        match self {
            Backend::Cuda => "Cuda",
            Backend::Hip => "Hip",
            Backend::Vulkan => "Vulkan",
            Backend::Metal => "Metal",
            Backend::WebGpu => "WebGpu",
        }
    }
}

/// Whether a backend's compiler contracts a multiply and an add into one fused multiply-add
/// (one rounding instead of two) where the code does not ask for it. CubeCL's own optimiser
/// already fuses a product whose only use is an add into `Fma` on every backend, the CPU
/// runtime included; this is what the backend's compiler does beyond that, to a product with
/// other uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Contraction {
    /// It contracts: CUDA (NVRTC compiles with `--fmad=true` unless told otherwise, and CubeCL
    /// 0.11 does not tell it; `mul.rn` and `add.rn`, with an explicit rounding, never are).
    Contracts,
    /// The driver decides: Vulkan without the `NoContraction` decoration (CubeCL 0.11's SPIR-V
    /// emits none), HIP, Metal, WebGPU. Measured per device: its `default` against the CPU's.
    DriverDefined,
}

impl Backend {
    /// What the backend's compiler does with a multiply feeding an add (the CPU runtime never
    /// contracts: its LLVM lowering sets the contraction flag for GPU targets only).
    pub const fn contraction(self) -> Contraction {
        match self {
            Backend::Cuda => Contraction::Contracts,
            Backend::Hip | Backend::Vulkan | Backend::Metal | Backend::WebGpu => Contraction::DriverDefined,
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// The runtime that actually executes a kernel.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Executor {
    /// CubeCL's CPU runtime: the oracle. Plane width 1, no plane operations, no cmma.
    Cpu,
    /// A GPU runtime of the given backend.
    Device(Backend),
    /// A runtime this version does not recognise (its `client.name()`); only `default` arms run.
    Unknown(&'static str),
}

impl Executor {
    /// Every client name CubeCL 0.11's runtimes report that [`Executor::from_client_name`] knows.
    pub const CLIENT_NAMES: [&'static str; 7] =
        ["cpu", "cuda", "hip", "metal", "wgpu<msl>", "wgpu<spirv>", "wgpu<wgsl>"];

    /// Classifies a CubeCL client name (`client.name()`).
    pub fn from_client_name(name: &'static str) -> Executor {
        match name {
            "cpu" => Executor::Cpu,
            "cuda" => Executor::Device(Backend::Cuda),
            "hip" => Executor::Device(Backend::Hip),
            "metal" | "wgpu<msl>" => Executor::Device(Backend::Metal),
            "wgpu<spirv>" => Executor::Device(Backend::Vulkan),
            "wgpu<wgsl>" => Executor::Device(Backend::WebGpu),
            other => Executor::Unknown(other),
        }
    }

    /// The backend, for a GPU runtime.
    pub const fn backend(self) -> Option<Backend> {
        match self {
            Executor::Device(b) => Some(b),
            _ => None,
        }
    }
}

impl fmt::Display for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Executor::Cpu => f.write_str("cpu"),
            Executor::Device(b) => write!(f, "{b}"),
            Executor::Unknown(name) => write!(f, "unknown runtime `{name}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_client_name_is_classified() {
        for name in Executor::CLIENT_NAMES {
            assert!(!matches!(Executor::from_client_name(name), Executor::Unknown(_)), "{name}");
        }
        // Every backend is reached by some client name.
        for b in Backend::ALL {
            assert!(Executor::CLIENT_NAMES.iter().any(|n| Executor::from_client_name(n).backend() == Some(b)), "{b}");
        }
        assert_eq!(Executor::from_client_name("wgpu<glsl>"), Executor::Unknown("wgpu<glsl>"));
    }

    #[test]
    fn keywords_round_trip() {
        for b in Backend::ALL {
            assert_eq!(Backend::from_keyword(b.keyword()), Some(b));
            assert_eq!(format!("{b:?}"), b.variant());
        }
    }
}
