//! The profile of a real device: what CubeCL's client reports, in the vocabulary's terms.

use cubecl::prelude::Client;
use island_vocab::profile::{intern_name, intern_shapes};
use island_vocab::{Backend, Elem, Executor, Mma, Profile};

/// The profile of the device behind `client`, or `None` for the CPU and for runtimes this
/// version does not recognise (those take `default` arms).
pub fn profile(client: &Client) -> Option<Profile> {
    let backend = Executor::from_client_name(client.name()).backend()?;
    let props = client.properties();
    let plane = props.hardware.plane_size_max;
    let sm = match backend {
        Backend::Cuda => sm_from_fingerprint(&props.identity.fingerprint),
        _ => 0,
    };
    let dp4a = match backend {
        // `__dp4a` exists from sm_61 on.
        Backend::Cuda => sm >= 61,
        // shaderIntegerDotProduct is a required Vulkan 1.3 feature; CubeCL falls back to its
        // polyfill where a driver lacks it, which is still the same integer function.
        Backend::Vulkan => true,
        // CubeCL 0.11 lowers dp4a to its polyfill on HIP, Metal and WGSL.
        Backend::Hip | Backend::Metal | Backend::WebGpu => false,
    };
    let mut mma: Vec<Mma> = client
        .features()
        .matmul
        .cmma
        .iter()
        .filter_map(|c| Some(Mma::new(elem_of(c.a_type)?, elem_of(c.b_type)?, elem_of(c.cd_type)?, c.m, c.n, c.k)))
        .collect();
    mma.sort();
    mma.dedup();
    Some(Profile { backend, name: intern_name(&props.identity.name), plane, sm, dp4a, mma: intern_shapes(mma) })
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
