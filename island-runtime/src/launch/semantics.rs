//! Which device-defined semantics an arm lowers natively on a device: found by expanding the
//! arm's lifted kernel for the device's profile and recording each intrinsic that takes its
//! native lowering ([`note_native`], called by the code `#[intrinsic]` generates), with the
//! intrinsic's semantic class ([`Semantics`]) and its operand types.
//!
//! A launch uses this to decide whether an arm's CPU proof carries to a device nobody gated
//! (`crate::launch::policy`): only when every intrinsic it lowers natively there is defined for its
//! operands, its expansion holds no float arithmetic (`crate::codegen::float_arithmetic`), and
//! the arm's contract on the device's profile is bit equality; or when it lowers no intrinsic
//! at all and stands for a `default` the backend's language cannot express ([`carry`]).

use crate::hardware::device::Exec;
use crate::records::view::Carry;
use crate::tag::lifted::ProofSpec;
use crate::tag::registry::ArmEntry;
use crate::tag::target::Target;
use cubecl::prelude::Client;
use island_vocab::{Executor, Profile, Semantics};
use std::cell::RefCell;
use std::sync::Arc;

/// One native lowering of an intrinsic inside an arm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeUse {
    pub intrinsic: &'static str,
    pub semantics: Semantics,
    /// The intrinsic's type arguments (`f32`), as Rust names them.
    pub operands: Vec<&'static str>,
}

impl NativeUse {
    /// What the device decides in this use, if anything.
    pub fn device_defined(&self) -> Option<&'static str> {
        self.semantics.device_defined(&self.operands)
    }

    /// `plane::sum<f32>`.
    pub fn name(&self) -> String {
        if self.operands.is_empty() || self.intrinsic.contains('<') {
            return self.intrinsic.to_string();
        }
        let short: Vec<&str> = self.operands.iter().map(|t| t.rsplit("::").next().unwrap_or(t)).collect();
        format!("{}<{}>", self.intrinsic, short.join(", "))
    }
}

thread_local! {
    static TRACE: RefCell<Option<Vec<NativeUse>>> = const { RefCell::new(None) };
}

/// Called while a kernel expands, when intrinsic `name` takes its native lowering: recorded
/// when a [`trace`] is running on this thread, nothing otherwise.
pub fn note_native(name: &'static str, semantics: Semantics, operands: &[&'static str]) {
    TRACE.with(|t| {
        if let Some(uses) = t.borrow_mut().as_mut() {
            let used = NativeUse { intrinsic: name, semantics, operands: operands.to_vec() };
            if !uses.contains(&used) {
                uses.push(used);
            }
        }
    });
}

/// Runs `expand` (a kernel's expansion) and returns what it returned with the native
/// lowerings it recorded.
pub fn trace<R>(expand: impl FnOnce() -> R) -> (R, Vec<NativeUse>) {
    let outer = TRACE.with(|t| t.borrow_mut().replace(Vec::new()));
    let result = expand();
    let uses = TRACE.with(|t| std::mem::replace(&mut *t.borrow_mut(), outer)).unwrap_or_default();
    (result, uses)
}

/// What `entry`'s arm becomes on a device of a profile: the native lowerings it takes, the
/// float arithmetic of its expansion (`crate::codegen::float_arithmetic`), its own and its
/// intrinsics' alike, and the types it uses that the backend's language lacks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Native {
    pub uses: Vec<NativeUse>,
    /// The float operations of the arm's expansion (`math.f_add`, …).
    pub float_ops: Vec<String>,
    /// The types of the expansion the backend's language lacks (`crate::codegen::missing_types`).
    pub lacked: Vec<&'static str>,
}

/// The arm of `entry` expanded for a device of `profile` (its lifted kernel, natively; `host`
/// lends buffers, nothing runs).
pub fn native(
    entry: &'static ArmEntry,
    profile: &Profile,
    host: &Client,
) -> Result<Native, crate::codegen::lowering::LoweringError> {
    use crate::codegen::lowering::LoweringError;
    let ProofSpec::Lifted(lifted) = &entry.proof else {
        return Err(LoweringError::NoProofSignature(entry.name()));
    };
    let exec = Exec { executor: Executor::Device(profile.backend), plane: profile.plane };
    let target = Target::from_parts(Some(*profile), exec).only(entry.site.id);
    let expand = || {
        crate::codegen::lowering::define(lifted, target, Arc::new(crate::codegen::lowering::properties(profile)), host)
    };
    let (definition, uses) = trace(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(expand)));
    let definition = definition
        .map_err(|p| {
            LoweringError::Generator(format!("its expansion panicked: {}", crate::values::readback::panic_text(&p)))
        })?
        .map_err(|e| LoweringError::Generator(e.to_string()))?;
    let ir = definition.body.to_string();
    let float_ops = crate::codegen::float_arithmetic::float_ops(&ir);
    let lacked = crate::codegen::missing_types::used(profile.backend, &ir);
    Ok(Native { uses, float_ops, lacked })
}

/// How far `entry`'s CPU proof carries to a device of `profile` that no record covers.
///
/// [`Carry::AsDefault`] where the arm lowers no intrinsic natively there and `default` uses a
/// type the backend's language lacks which the arm avoids (`crate::codegen::missing_types`):
/// then the arm is the island's portable code on that backend. [`Carry::Record`], with why,
/// where the arm lowers device-defined or synchronizing semantics natively there, its expansion
/// holds float arithmetic, its plane operations may run at another width, its contract is
/// weaker than bit equality under `profile`, or it has no proof at all. [`Carry::Proof`]
/// otherwise.
///
/// `planes` is the range of plane widths the device's driver may pick (narrowest, widest): a
/// Vulkan, Metal or WebGPU driver may run a kernel at any subgroup width of its range unless the
/// width is fixed, so an arm that lowers plane operations there is proven at one width the
/// driver need not use.
pub fn carry(entry: &'static ArmEntry, profile: &Profile, host: &Client, planes: (u32, u32)) -> Carry {
    let ProofSpec::Lifted(lifted) = &entry.proof else {
        return Carry::Record("the island has no proof signature, so no CPU proof covers the arm".into());
    };
    let contract = lifted.contract_for(profile);
    if !contract.is_exact() {
        return Carry::Record(format!(
            "its contract on {profile} is {contract}, so its CPU proof does not make it bit-exact"
        ));
    }
    let native = match native(entry, profile, host) {
        Err(e) => return Carry::Record(format!("its native lowerings could not be traced ({e})")),
        Ok(native) => native,
    };
    if native.uses.is_empty() && native.lacked.is_empty() && default_lacks(entry, profile, host) {
        return Carry::AsDefault;
    }
    let (syncs, others): (Vec<&NativeUse>, Vec<&NativeUse>) =
        native.uses.iter().partition(|u| matches!(u.semantics, Semantics::Synchronizing(_)));
    // Each use whose result is not the specification's alone, with what decides it.
    let described = |uses: &[&NativeUse]| -> Vec<String> {
        uses.iter().filter_map(|u| u.device_defined().map(|what| format!("`{}` ({what})", u.name()))).collect()
    };
    let mut decided = described(&others);
    if !native.float_ops.is_empty() {
        decided.push(format!(
            "float arithmetic (`{}`: subnormal flushing and contraction)",
            native.float_ops.join("`, `")
        ));
    }
    let syncs = described(&syncs);
    let mut why = Vec::new();
    if !decided.is_empty() {
        why.push(format!("it lowers {} natively, which the device decides", decided.join(", ")));
    }
    if !syncs.is_empty() {
        why.push(format!("it synchronizes through {}, which a CPU proof cannot see", syncs.join(", ")));
    }
    if let Some(width) = varying_plane_width(&native.uses, profile, planes) {
        why.push(width);
    }
    if why.is_empty() { Carry::Proof } else { Carry::Record(why.join("; ")) }
}

/// Whether `entry`'s `default` uses a type `profile`'s language lacks
/// (`crate::codegen::missing_types`).
fn default_lacks(entry: &'static ArmEntry, profile: &Profile, host: &Client) -> bool {
    use crate::codegen::lowering::{Which, ir};
    let ProofSpec::Lifted(lifted) = &entry.proof else { return false };
    ir(entry, lifted, profile, Which::Default, host)
        .is_ok_and(|ir| !crate::codegen::missing_types::used(profile.backend, &ir).is_empty())
}

/// Why the plane width an arm was proven at may not be the one it runs at, if so: it lowers
/// plane operations natively, and the driver may pick any width in `planes` (narrowest,
/// widest), which is not one width. CUDA's warp is 32 lanes by definition.
pub fn varying_plane_width(uses: &[NativeUse], profile: &Profile, (min, max): (u32, u32)) -> Option<String> {
    let plane: Vec<String> = uses.iter().filter(|u| u.intrinsic.starts_with("plane::")).map(NativeUse::name).collect();
    (!plane.is_empty() && min != max && profile.backend != island_vocab::Backend::Cuda).then(|| {
        format!(
            "it lowers `{}` natively, proven at a plane of {} lanes, and this driver may run it at any subgroup width \
             from {min} to {max} (nothing fixes it)",
            plane.join("`, `"),
            profile.plane
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_records_native_uses_once_and_nests() {
        let ((), outer) = trace(|| {
            note_native("plane::sum", Semantics::FloatDeviceDefined("order"), &["f32"]);
            let ((), inner) = trace(|| note_native("dp4a", Semantics::Defined, &[]));
            assert_eq!(inner.len(), 1);
            note_native("plane::sum", Semantics::FloatDeviceDefined("order"), &["f32"]);
        });
        assert_eq!(outer.len(), 1, "{outer:?}");
        assert_eq!(outer[0].name(), "plane::sum<f32>");
        assert_eq!(outer[0].device_defined(), Some("order"));
        note_native("ignored", Semantics::Defined, &[]);
        let ((), none) = trace(|| ());
        assert!(none.is_empty());
    }

    #[test]
    fn a_plane_arm_needs_a_record_where_the_driver_picks_the_width() {
        let shuffle =
            NativeUse { intrinsic: "plane::shuffle_xor", semantics: Semantics::Defined, operands: vec!["f32"] };
        let dp4a = NativeUse { intrinsic: "dp4a", semantics: Semantics::Defined, operands: vec![] };
        let vulkan = Profile::references(island_vocab::Backend::Vulkan)[0];
        let why = varying_plane_width(std::slice::from_ref(&shuffle), &vulkan, (8, 32)).unwrap();
        assert!(why.contains("from 8 to 32") && why.contains("plane::shuffle_xor<f32>"), "{why}");
        assert_eq!(varying_plane_width(std::slice::from_ref(&shuffle), &vulkan, (32, 32)), None);
        assert_eq!(varying_plane_width(&[dp4a], &vulkan, (8, 32)), None);
        let cuda = Profile::references(island_vocab::Backend::Cuda)[0];
        assert_eq!(varying_plane_width(&[shuffle], &cuda, (8, 32)), None);
    }
}
