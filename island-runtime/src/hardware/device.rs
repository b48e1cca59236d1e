//! The device behind a client, as islands sees it: who executes (the executor and its plane
//! width), the profile of arms it may take, and the fingerprint its ledger records are keyed by.
//! Built once per client and process ([`Device::of`]); the tag, the gate, conformance and the
//! ledger all take it from here.

use crate::hardware::fingerprint::Fingerprint;
use cubecl::prelude::Client;
use island_vocab::profile::{intern_name, intern_shapes};
use island_vocab::{Backend, Elem, Executor, Mma, Profile};
use serde::Serialize;
use std::sync::Mutex;

/// The runtime executing a kernel, as far as lowering needs to know.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
pub struct Exec {
    pub executor: Executor,
    /// The plane width the hardware really has (1 on the CPU).
    pub plane: u32,
}

/// What islands knows of the device behind a client.
#[derive(Clone, Debug)]
pub struct Device {
    pub exec: Exec,
    /// The profile of the arms it may take; `None` for the CPU and for runtimes this version
    /// does not recognise (those take `default` arms).
    pub profile: Option<Profile>,
    /// The identity its ledger records are keyed by; `None` where there is no profile.
    pub fingerprint: Option<Fingerprint>,
    /// The narrowest plane the driver may run a kernel with (`exec.plane` is the widest): equal
    /// on CUDA, NVIDIA's Vulkan driver and lavapipe; 8 to 32 on Intel's, 32 or 64 on AMD's.
    pub plane_min: u32,
}

impl Device {
    /// The device behind `client`, assembled on the first call for that device and kept for
    /// the process.
    pub fn of(client: &Client) -> &'static Device {
        type Seen = Vec<((&'static str, String, String), &'static Device)>;
        static SEEN: Mutex<Seen> = Mutex::new(Vec::new());
        let props = client.properties();
        let key = (runtime_name(client), props.identity.name.clone(), props.identity.fingerprint.clone());
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, device)) = seen.iter().find(|(k, _)| *k == key) {
            return device;
        }
        let device: &'static Device = Box::leak(Box::new(Device::assemble(client)));
        seen.push((key, device));
        device
    }

    fn assemble(client: &Client) -> Device {
        let executor = Executor::from_client_name(runtime_name(client));
        let props = client.properties();
        let exec = Exec {
            executor,
            plane: match executor {
                Executor::Cpu => 1,
                _ => props.hardware.plane_size_max.max(1),
            },
        };
        let profile = executor.backend().filter(|_| matches!(executor, Executor::Device(_))).map(|backend| {
            let sm = match backend {
                Backend::Cuda => sm_from_fingerprint(&props.identity.fingerprint),
                _ => 0,
            };
            let mut mma: Vec<Mma> = client
                .features()
                .matmul
                .cmma
                .iter()
                .filter_map(|c| {
                    Some(Mma::new(elem_of(c.a_type)?, elem_of(c.b_type)?, elem_of(c.cd_type)?, c.m, c.n, c.k))
                })
                .collect();
            mma.sort();
            mma.dedup();
            Profile {
                backend,
                name: intern_name(&props.identity.name),
                plane: props.hardware.plane_size_max,
                sm,
                dp4a: crate::hardware::quirks::dp4a(backend, sm),
                mma: intern_shapes(mma),
            }
        });
        let fingerprint = profile.as_ref().map(|p| {
            Fingerprint::new(runtime_name(client), &props.identity.name, &props.identity.fingerprint, p.plane, p.sm)
        });
        let plane_min = match executor {
            Executor::Cpu => 1,
            _ => props.hardware.plane_size_min.clamp(1, exec.plane),
        };
        Device { exec, profile, fingerprint, plane_min }
    }
}

/// The runtime behind `client` as CubeCL names it (`cuda`, `wgpu<spirv>`, …), except that a
/// wgpu client whose server compiles WGSL is `wgpu<wgsl>`: CubeCL 0.11 names a wgpu runtime
/// after the adapter's native compiler (`wgpu<spirv>` on a Vulkan adapter, in a build with
/// SPIR-V) whatever compiler its server was made with. The server's type tells.
pub fn runtime_name(client: &Client) -> &'static str {
    #[cfg(feature = "wgpu")]
    if client.service_id().service == std::any::TypeId::of::<cubecl::wgpu::WgpuServer<cubecl::wgpu::WgslCompiler>>() {
        return "wgpu<wgsl>";
    }
    client.name()
}

/// The profile of the device behind `client` ([`Device::of`]), or `None` for the CPU and for
/// runtimes this version does not recognise (those take `default` arms).
pub fn profile(client: &Client) -> Option<Profile> {
    Device::of(client).profile
}

fn sm_from_fingerprint(fingerprint: &str) -> u32 {
    // `ptx_sm90` → 90
    fingerprint.rsplit_once("sm").and_then(|(_, digits)| digits.trim_start_matches('_').parse().ok()).unwrap_or(0)
}

/// The vocabulary's element kind of a CubeCL element type, if it has one.
pub fn elem_of(ty: cubecl::ir::ElemType) -> Option<Elem> {
    use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
    Some(match ty {
        ElemType::Int(IntKind::I8) => Elem::I8,
        ElemType::Int(IntKind::I32) => Elem::I32,
        ElemType::UInt(UIntKind::U8) => Elem::U8,
        ElemType::Float(FloatKind::F16) => Elem::F16,
        ElemType::Float(FloatKind::BF16) => Elem::BF16,
        ElemType::Float(FloatKind::F32) => Elem::F32,
        _ => return None,
    })
}

/// The CubeCL element type of a vocabulary element kind.
pub fn elem_type(e: Elem) -> cubecl::ir::ElemType {
    use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
    match e {
        Elem::I8 => ElemType::Int(IntKind::I8),
        Elem::U8 => ElemType::UInt(UIntKind::U8),
        Elem::I32 => ElemType::Int(IntKind::I32),
        Elem::F16 => ElemType::Float(FloatKind::F16),
        Elem::BF16 => ElemType::Float(FloatKind::BF16),
        Elem::F32 => ElemType::Float(FloatKind::F32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_parses() {
        assert_eq!(sm_from_fingerprint("ptx_sm90"), 90);
        assert_eq!(sm_from_fingerprint("ptx_sm61"), 61);
        assert_eq!(sm_from_fingerprint("hip-kernel_gfx1151"), 0);
    }

    #[test]
    fn every_element_kind_round_trips_through_cubecl() {
        for e in Elem::ALL {
            assert_eq!(elem_of(elem_type(e)), Some(e), "{e:?}");
        }
    }
}
