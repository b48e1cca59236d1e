//! Which device a piece of evidence was measured on.
//!
//! Native semantics belong to a device and its driver, not to a backend name: float subgroup
//! reductions are ordered by the driver, dp4a may be a polyfill, tensor cores differ by
//! generation. A [`Fingerprint`] names the runtime, the device as it names itself, CubeCL's
//! compilation fingerprint (`ptx_sm90`, …), the plane width, the compute capability and the
//! driver, so a ledger record holds for that device only.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The identity of a device, as ledger records key it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Fingerprint {
    /// CubeCL's client name: `cuda`, `wgpu<spirv>`, …
    pub runtime: String,
    /// The device as it names itself (`NVIDIA H200`, `llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub device: String,
    /// CubeCL's compilation fingerprint of the device (`ptx_sm90`; empty where CubeCL gives none).
    pub identity: String,
    /// Plane (warp, subgroup) width in lanes.
    pub plane: u32,
    /// CUDA compute capability × 10; 0 elsewhere.
    pub sm: u32,
    /// The driver, where the platform tells it: NVIDIA's kernel module version on Linux
    /// (`nvidia 580.159.04`), else what the wgpu adapter reports for the `wgpu<spirv>` and
    /// `wgpu<wgsl>` runtimes (`mesa 22.3.6` for lavapipe, whose device name gives only its LLVM);
    /// otherwise `unknown`.
    /// On CUDA it names the compiler of the launch's source too, NVRTC, whose version decides
    /// the machine code as much as the driver's (`nvidia 580.159.04, nvrtc 13.0`), so a new
    /// toolkit makes a record stale like a new driver.
    pub driver: String,
}

impl Fingerprint {
    /// The fingerprint of a device from what its client reports (see `crate::hardware::device::Device`,
    /// which builds it once per client) and the driver the platform reports.
    pub fn new(runtime: &str, device: &str, identity: &str, plane: u32, sm: u32) -> Fingerprint {
        Fingerprint {
            runtime: runtime.to_string(),
            device: device.to_string(),
            identity: identity.to_string(),
            plane,
            sm,
            driver: driver_of(runtime, device),
        }
    }

    /// Whether `self` and `other` are the same device and driver.
    pub fn matches(&self, other: &Fingerprint) -> bool {
        self == other
    }

    /// Whether only the driver differs: a record of another driver version is stale, not absent.
    pub fn same_device(&self, other: &Fingerprint) -> bool {
        Fingerprint { driver: String::new(), ..self.clone() } == Fingerprint { driver: String::new(), ..other.clone() }
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A browser does not name its adapter.
        let device = if self.device.is_empty() { "an unnamed adapter" } else { &self.device };
        write!(f, "{} on {device} (plane {}", self.runtime, self.plane)?;
        if self.sm > 0 {
            write!(f, ", sm {}", self.sm)?;
        }
        write!(f, ", driver {})", self.driver)
    }
}

/// The driver version the platform reports for `device` on `runtime` (with NVRTC's on CUDA).
fn driver_of(runtime: &str, device: &str) -> String {
    let driver = platform_driver(runtime, device);
    match runtime {
        "cuda" => with_compiler(driver, super::nvrtc::version().as_deref()),
        _ => driver,
    }
}

/// `driver` followed by the NVRTC version that compiles CUDA launches (`unknown` where NVRTC
/// does not answer: a record then binds nothing a later NVRTC could match by accident).
fn with_compiler(driver: String, nvrtc: Option<&str>) -> String {
    format!("{driver}, nvrtc {}", nvrtc.unwrap_or("unknown"))
}

fn platform_driver(runtime: &str, device: &str) -> String {
    if device.contains("NVIDIA")
        && let Ok(text) = std::fs::read_to_string("/proc/driver/nvidia/version")
        && let Some(version) = nvidia_version(&text)
    {
        return format!("nvidia {version}");
    }
    if let Some(info) = adapter_driver(runtime, device)
        && let Some(version) = mesa_version(&info)
    {
        return format!("mesa {version}");
    }
    "unknown".to_string()
}

/// What wgpu adapters report as their driver (`Mesa 22.3.6 (LLVM 15.0.6)`; NVIDIA's reports its
/// version), by (runtime, adapter name), noted where a wgpu runtime opens its device.
static ADAPTER_DRIVERS: std::sync::Mutex<Vec<(String, String, String)>> = std::sync::Mutex::new(Vec::new());

/// Notes the driver info of the adapter `device` that `runtime` (`wgpu<spirv>`, `wgpu<wgsl>`)
/// opened (`crate::launch::runtimes`, before its first client and so before its fingerprint).
pub fn note_adapter_driver(runtime: &str, device: &str, info: String) {
    let mut noted = ADAPTER_DRIVERS.lock().unwrap_or_else(|e| e.into_inner());
    if !noted.iter().any(|(r, d, _)| r == runtime && d == device) {
        noted.push((runtime.to_string(), device.to_string(), info));
    }
}

fn adapter_driver(runtime: &str, device: &str) -> Option<String> {
    let noted = ADAPTER_DRIVERS.lock().unwrap_or_else(|e| e.into_inner());
    noted.iter().find(|(r, d, _)| r == runtime && d == device).map(|(_, _, info)| info.clone())
}

/// `22.3.6` from a Vulkan adapter's driver info `Mesa 22.3.6 (LLVM 15.0.6)`: the digits and dots
/// that open the word after "Mesa" (a distribution's suffix, `-1ubuntu1`, is not the version).
fn mesa_version(info: &str) -> Option<&str> {
    let mut words = info.split_whitespace();
    words.find(|w| *w == "Mesa")?;
    let word = words.next()?;
    let version = &word[..word.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(word.len())];
    version.contains('.').then_some(version.trim_end_matches('.'))
}

/// `580.95.05` from `NVRM version: NVIDIA UNIX … Kernel Module … 580.95.05  Release Build …`: the
/// first word after "Kernel Module" made of digits and dots.
fn nvidia_version(text: &str) -> Option<&str> {
    let line = text.lines().next()?;
    let after = line.split("Kernel Module").nth(1)?;
    after.split_whitespace().find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_nvidia_module_version() {
        let text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16)  Thu Sep 25 2025\nGCC version: gcc";
        assert_eq!(super::nvidia_version(text), Some("580.95.05"));
        let closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  575.57.08  Sat May 24 2025";
        assert_eq!(super::nvidia_version(closed), Some("575.57.08"));
        assert_eq!(super::nvidia_version("garbage"), None);
    }

    #[test]
    fn cuda_names_its_compiler() {
        assert_eq!(super::with_compiler("nvidia 580.159.04".into(), Some("13.0")), "nvidia 580.159.04, nvrtc 13.0");
        assert_eq!(super::with_compiler("unknown".into(), None), "unknown, nvrtc unknown");
    }

    #[test]
    fn reads_the_mesa_version() {
        assert_eq!(super::mesa_version("Mesa 22.3.6 (LLVM 15.0.6)"), Some("22.3.6"));
        assert_eq!(super::mesa_version("Mesa 24.2.8-1ubuntu1~24.04.1"), Some("24.2.8"));
        assert_eq!(super::mesa_version("Mesa git"), None);
        assert_eq!(super::mesa_version("580.159.04"), None);
        assert_eq!(super::mesa_version(""), None);
    }

    #[test]
    fn an_adapter_driver_belongs_to_the_runtime_that_noted_it() {
        super::note_adapter_driver("wgpu<wgsl>", "llvmpipe (test)", "Mesa 24.2.8 (LLVM 19.1.7)".into());
        assert_eq!(super::platform_driver("wgpu<wgsl>", "llvmpipe (test)"), "mesa 24.2.8");
        assert_eq!(super::platform_driver("wgpu<spirv>", "llvmpipe (test)"), "unknown");
    }
}
