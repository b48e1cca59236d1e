//! The registry of intrinsics: the one table of backend ↔ capability ↔ instruction.
//!
//! An intrinsic crate registers each intrinsic with [`register_intrinsic!`](crate::register_intrinsic):
//! its native lowerings (which backend, under which capability, emits which instruction) and its
//! check, a `#[islands]` function whose island calls the intrinsic in its accelerated arm. The
//! check is what the CPU proves (emulation against an independent `default`), what the device
//! conformance runs natively, and what the lowering check compiles.

use crate::capability::Guard;
use crate::registry::{self, ArmEntry};
use crate::Backend;
use std::sync::OnceLock;

/// One native lowering: on `backend`, where the device meets `requires`, the intrinsic emits
/// `instruction` (a substring of the generated source).
#[derive(Debug)]
pub struct Lowering {
    pub backend: Backend,
    pub requires: Guard,
    pub instruction: &'static str,
}

/// A registered intrinsic.
#[derive(Debug)]
pub struct Intrinsic {
    /// `dp4a`, `plane::sum`, …
    pub name: &'static str,
    /// The crate that registers it.
    pub krate: &'static str,
    /// One line: what it computes.
    pub summary: &'static str,
    /// Its native lowerings. A backend without a row runs the emulation (or CubeCL's polyfill).
    pub lowerings: &'static [Lowering],
    /// The path of its check function (`crate::module::function`).
    pub check: fn() -> &'static str,
}

inventory::collect!(Intrinsic);

impl Intrinsic {
    /// The accelerated arms of its check island.
    pub fn check_arms(&self) -> Vec<&'static ArmEntry> {
        let path = (self.check)();
        registry::arms().iter().copied().filter(|e| e.function == path).collect()
    }
}

/// Called while a kernel expands, when intrinsic `name` runs its emulation: if the tag says the
/// arm runs natively on its device, the intrinsic declares no lowering for that backend (an arm
/// of a backend it does not declare). That is the documented fall back, correct but not
/// accelerated; it is logged here, and the lowering check reports the arm.
pub fn note_emulated(name: &str, target: &crate::Target) {
    if target.is_native() {
        log::warn!("islands: intrinsic `{name}` has no lowering for {target}; running its emulation");
    }
}

/// Every registered intrinsic, sorted by name.
pub fn intrinsics() -> &'static [&'static Intrinsic] {
    static ALL: OnceLock<Vec<&'static Intrinsic>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<&'static Intrinsic> = inventory::iter::<Intrinsic>.into_iter().collect();
        all.sort_by_key(|i| (i.name, i.krate));
        all
    })
}

/// Every instruction the table names for `backend`.
pub fn instructions(backend: Backend) -> Vec<&'static str> {
    let mut all: Vec<&'static str> = intrinsics()
        .iter()
        .flat_map(|i| i.lowerings.iter())
        .filter(|l| l.backend == backend)
        .map(|l| l.instruction)
        .collect();
    all.sort();
    all.dedup();
    all
}

/// Names registered by two intrinsics.
pub fn duplicates() -> Vec<&'static str> {
    let all = intrinsics();
    let mut dup: Vec<&'static str> =
        all.windows(2).filter(|w| w[0].name == w[1].name).map(|w| w[0].name).collect();
    dup.dedup();
    dup
}

/// Registers an intrinsic in the table.
///
/// ```ignore
/// island_runtime::register_intrinsic! {
///     name: "dp4a",
///     summary: "c + Σ a[i]·b[i] over four packed signed bytes",
///     check: checks::dp4a,
///     lowerings: [
///         cuda if dp4a => "__dp4a(",
///         vulkan if dp4a => "OpSDot",
///     ],
/// }
/// ```
#[macro_export]
macro_rules! register_intrinsic {
    (
        name: $name:literal,
        summary: $summary:literal,
        check: $check:path,
        lowerings: [ $( $backend:ident $(if $cap:ident)? => $instruction:literal ),* $(,)? ] $(,)?
    ) => {
        $crate::__private::inventory::submit! {
            $crate::intrinsic::Intrinsic {
                name: $name,
                krate: env!("CARGO_PKG_NAME"),
                summary: $summary,
                lowerings: &[ $( $crate::intrinsic::Lowering {
                    backend: $crate::__backend!($backend),
                    requires: $crate::Guard(&[ $( $crate::__capability!($cap) )? ]),
                    instruction: $instruction,
                } ),* ],
                check: || ::std::any::type_name_of_val(&$check),
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __backend {
    (cuda) => { $crate::Backend::Cuda };
    (hip) => { $crate::Backend::Hip };
    (vulkan) => { $crate::Backend::Vulkan };
    (metal) => { $crate::Backend::Metal };
    (webgpu) => { $crate::Backend::WebGpu };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __capability {
    (dp4a) => { $crate::Atom::Dp4a };
}
