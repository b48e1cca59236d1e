//! The CubeCL runtimes this build can execute on, by name.

use cubecl::prelude::Client;
#[allow(unused_imports)]
use cubecl_runtime::runtime::Runtime;
use island_vocab::Backend;
use std::fmt;

/// A runtime a proof, a check or a bench can run on: the CPU (the oracle) or a backend's,
/// named as the backend is (`cpu`, `cuda`, `hip`, `vulkan`, `metal`, `webgpu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuntimeName {
    /// CubeCL's CPU runtime, the oracle.
    Cpu,
    /// The runtime of a backend: CUDA and HIP through CubeCL's C++ path (NVRTC, HIPRTC);
    /// Vulkan, Metal and WebGPU through wgpu with CubeCL's SPIR-V, MSL and WGSL compilers.
    Device(Backend),
}

impl RuntimeName {
    /// Every runtime: the CPU, then each backend's.
    pub const ALL: [RuntimeName; 1 + Backend::ALL.len()] = {
        let mut all = [RuntimeName::Cpu; 1 + Backend::ALL.len()];
        let mut i = 0;
        while i < Backend::ALL.len() {
            all[i + 1] = RuntimeName::Device(Backend::ALL[i]);
            i += 1;
        }
        all
    };

    pub fn parse(name: &str) -> Option<RuntimeName> {
        RuntimeName::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The names `parse` accepts, for error messages (`cpu, cuda, hip, …`).
    pub fn list() -> String {
        RuntimeName::ALL.map(RuntimeName::as_str).join(", ")
    }

    /// The device runtimes' names alone (`cuda, hip, …`), for error messages.
    pub fn devices() -> String {
        Backend::ALL.map(Backend::keyword).join(", ")
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            RuntimeName::Cpu => "cpu",
            RuntimeName::Device(b) => b.keyword(),
        }
    }

    /// The backend, for a device runtime.
    pub const fn backend(self) -> Option<Backend> {
        match self {
            RuntimeName::Cpu => None,
            RuntimeName::Device(b) => Some(b),
        }
    }

    /// Whether this build includes the runtime (its cargo feature).
    pub const fn built(self) -> bool {
        match self {
            RuntimeName::Cpu => cfg!(feature = "cpu"),
            RuntimeName::Device(Backend::Vulkan) => cfg!(feature = "vulkan"),
            RuntimeName::Device(Backend::WebGpu) => cfg!(feature = "wgpu"),
            RuntimeName::Device(Backend::Cuda) => cfg!(feature = "cuda"),
            RuntimeName::Device(Backend::Hip) => cfg!(feature = "hip"),
            RuntimeName::Device(Backend::Metal) => cfg!(feature = "metal"),
        }
    }

    /// A client of the runtime's default device. Fails, rather than panics, when the runtime
    /// is not built in or no device of its kind is present.
    pub fn client(self) -> Result<Client, ClientError> {
        if !self.built() {
            return Err(ClientError::NotBuilt(self));
        }
        let make = move || -> Client {
            match self {
                #[cfg(feature = "cpu")]
                RuntimeName::Cpu => cubecl::cpu::CpuRuntime::client(&Default::default()),
                #[cfg(feature = "vulkan")]
                RuntimeName::Device(Backend::Vulkan) => {
                    // Opened through its setup, whose wgpu device and queue hand-written GLSL
                    // kernels run on (`crate::codegen::glsl_kernel`); once per process.
                    static DEVICE: std::sync::OnceLock<cubecl::wgpu::WgpuDevice> = std::sync::OnceLock::new();
                    let device = DEVICE.get_or_init(|| {
                        let device = cubecl::wgpu::WgpuDevice::default().on(cubecl::wgpu::WgpuBackend::Vulkan);
                        let setup =
                            cubecl::wgpu::init_setup::<cubecl::wgpu::AutoGraphicsApi>(&device, Default::default());
                        let info = setup.adapter.get_info();
                        crate::hardware::fingerprint::note_adapter_driver("wgpu<spirv>", &info.name, info.driver_info);
                        crate::codegen::glsl_kernel::keep(setup.device, setup.queue);
                        device
                    });
                    <cubecl::wgpu::WgpuRuntime<cubecl::wgpu::AutoCompiler> as Runtime>::client(device)
                }
                #[cfg(feature = "wgpu")]
                RuntimeName::Device(Backend::WebGpu) => {
                    // WGSL named as the compiler: on a Vulkan adapter CubeCL's automatic choice
                    // would take SPIR-V, which is the `vulkan` runtime.
                    let client =
                        <cubecl::wgpu::WgpuRuntime<cubecl::wgpu::WgslCompiler> as Runtime>::client(&Default::default());
                    #[cfg(not(target_family = "wasm"))]
                    note_wgsl_driver(&client.properties().identity.name);
                    client
                }
                #[cfg(feature = "cuda")]
                RuntimeName::Device(Backend::Cuda) => cubecl::cuda::CudaRuntime::client(&Default::default()),
                #[cfg(feature = "hip")]
                RuntimeName::Device(Backend::Hip) => cubecl::hip::HipRuntime::client(&Default::default()),
                #[cfg(feature = "metal")]
                RuntimeName::Device(Backend::Metal) => {
                    let device = cubecl::wgpu::WgpuDevice::default().on(cubecl::wgpu::WgpuBackend::Metal);
                    <cubecl::wgpu::WgpuRuntime<cubecl::wgpu::AutoCompiler> as Runtime>::client(&device)
                }
                #[allow(unreachable_patterns)]
                _ => unreachable!("checked by `built`"),
            }
        };
        std::panic::catch_unwind(make)
            .map_err(|p| ClientError::NoDevice { runtime: self, reason: crate::values::readback::panic_text(&p) })
    }

    /// [`RuntimeName::client`] where the host cannot block on the device (the web): the
    /// browser's WebGPU adapter and device are requested and awaited, then registered as the
    /// `webgpu` runtime's (WGSL is the only language a page hands the browser). On every other
    /// target, and for every other runtime, this is `client`.
    pub async fn client_async(self) -> Result<Client, ClientError> {
        #[cfg(all(target_family = "wasm", feature = "wgpu"))]
        if self == RuntimeName::Device(Backend::WebGpu) {
            let device = cubecl::wgpu::WgpuDevice::default();
            cubecl::wgpu::try_init_setup_async::<cubecl::wgpu::WebGpu>(&device, Default::default())
                .await
                .map_err(|e| ClientError::NoDevice { runtime: self, reason: e.to_string() })?;
            return std::panic::catch_unwind(|| {
                <cubecl::wgpu::WgpuRuntime<cubecl::wgpu::AutoCompiler> as Runtime>::client(&device)
            })
            .map_err(|p| ClientError::NoDevice { runtime: self, reason: crate::values::readback::panic_text(&p) });
        }
        self.client()
    }
}

/// Notes the driver of the adapter named `name` that the WGSL runtime opened, for its
/// fingerprint: CubeCL opens that adapter itself, so it is found among wgpu's adapters by name;
/// once per process, as the runtime's default device is one adapter.
#[cfg(all(feature = "wgpu", not(target_family = "wasm")))]
fn note_wgsl_driver(name: &str) {
    static NOTED: std::sync::Once = std::sync::Once::new();
    NOTED.call_once(|| {
        let instance = wgpu_glsl::Instance::new(wgpu_glsl::InstanceDescriptor::new_without_display_handle_from_env());
        let adapters = cubecl_environment::future::block_on(instance.enumerate_adapters(wgpu_glsl::Backends::all()));
        if let Some(info) = adapters.iter().map(|a| a.get_info()).find(|i| i.name == name) {
            crate::hardware::fingerprint::note_adapter_driver("wgpu<wgsl>", name, info.driver_info);
        }
    });
}

/// Why a runtime's client could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("this build has no `{0}` runtime (enable its cargo feature)")]
    NotBuilt(RuntimeName),
    #[error("no `{runtime}` device could be opened: {reason}")]
    NoDevice { runtime: RuntimeName, reason: String },
}

impl fmt::Display for RuntimeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use island_vocab::Executor;

    /// The runtime names are the vocabulary's: `cpu` and the backend keywords, each naming
    /// the executor its client reports.
    #[test]
    fn runtime_names_come_from_the_vocabulary() {
        let names: Vec<&str> = RuntimeName::ALL.iter().map(|r| r.as_str()).collect();
        let mut want = vec!["cpu"];
        want.extend(Backend::ALL.map(Backend::keyword));
        assert_eq!(names, want);
        for r in RuntimeName::ALL {
            assert_eq!(RuntimeName::parse(r.as_str()), Some(r));
        }
        // Each backend's runtime is the executor CubeCL's client names map to.
        for (client, backend) in [
            ("cuda", Backend::Cuda),
            ("hip", Backend::Hip),
            ("wgpu<spirv>", Backend::Vulkan),
            ("wgpu<msl>", Backend::Metal),
            ("wgpu<wgsl>", Backend::WebGpu),
        ] {
            assert_eq!(Executor::from_client_name(client).backend(), Some(backend));
            assert!(RuntimeName::ALL.contains(&RuntimeName::Device(backend)));
        }
    }
}
