//! What a device of a backend can do: the facts a guard is evaluated against and an emulation
//! reproduces (plane width above all).

use crate::backend::Backend;
use crate::elem::Elem;
use crate::mma::Mma;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Mutex;

/// The capabilities of one device (or of a reference device of a backend).
///
/// A profile is part of the kernel's comptime tag, so a kernel compiled for one profile is
/// cached apart from the same kernel compiled for another. It is `Copy` (its strings and
/// shape lists are interned), so kernels pass the tag around freely.
#[derive(Clone, Copy, Debug, Eq, Serialize)]
pub struct Profile {
    /// The backend whose arms this device takes.
    pub backend: Backend,
    /// A short human name: the device's own, or the reference it stands for.
    pub name: &'static str,
    /// Plane width in lanes: 32 on NVIDIA, 32 or 64 on AMD, 8 on lavapipe, 32 on Apple.
    pub plane: u32,
    /// CUDA compute capability × 10 (90 on an H200); 0 on other backends.
    pub sm: u32,
    /// Whether `dp4a` lowers to a native instruction (`__dp4a`, `OpSDot`).
    pub dp4a: bool,
    /// Cooperative matrix shapes the device runs natively, sorted.
    pub mma: &'static [Mma],
}

/// Compares the interned name and shape list by address first, by content only when the
/// addresses differ: a launch compares its tag with the cached kernel's, and a GPU lists
/// dozens of shapes.
impl PartialEq for Profile {
    fn eq(&self, other: &Self) -> bool {
        self.backend == other.backend
            && self.plane == other.plane
            && self.sm == other.sm
            && self.dp4a == other.dp4a
            && (std::ptr::eq(self.name, other.name) || self.name == other.name)
            && (std::ptr::eq(self.mma, other.mma) || self.mma == other.mma)
    }
}

/// Hashes [`Profile::hash_word`]: names and shape lists are left to `Eq`.
impl std::hash::Hash for Profile {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash_word());
    }
}

impl Profile {
    /// The numeric fields packed into one word (the shape list by its count), for hashing: a
    /// profile is part of the tag CubeCL hashes several times per launch, and a GPU lists dozens
    /// of shapes. Equal profiles pack equal words; profiles that differ only in their name or
    /// their shapes are told apart by `Eq`.
    pub fn hash_word(&self) -> u64 {
        self.backend as u64
            | (self.plane as u64 & 0xff) << 3
            | (self.sm as u64 & 0xfff) << 11
            | (self.dp4a as u64) << 23
            | (self.mma.len() as u64 & 0xff) << 24
    }
}

/// Interns a device name: a process sees few distinct ones, and a `Copy` tag needs `'static`.
pub fn intern_name(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// Interns a sorted shape list, as [`intern_name`] does names.
pub fn intern_shapes(shapes: Vec<Mma>) -> &'static [Mma] {
    static SHAPES: Mutex<BTreeSet<&'static [Mma]>> = Mutex::new(BTreeSet::new());
    let mut all = SHAPES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = all.get(shapes.as_slice()) {
        return known;
    }
    let leaked: &'static [Mma] = Box::leak(shapes.into_boxed_slice());
    all.insert(leaked);
    leaked
}

const fn mma(a: Elem, b: Elem, acc: Elem, m: u32, n: u32, k: u32) -> Mma {
    Mma::new(a, b, acc, m, n, k)
}

/// Tile shapes every tensor-core generation since Turing runs through WMMA.
const CUDA_MMA: &[Mma] = &[
    mma(Elem::I8, Elem::I8, Elem::I32, 16, 16, 16),
    mma(Elem::U8, Elem::U8, Elem::I32, 16, 16, 16),
    mma(Elem::F16, Elem::F16, Elem::F16, 16, 16, 16),
    mma(Elem::F16, Elem::F16, Elem::F32, 16, 16, 16),
    mma(Elem::BF16, Elem::BF16, Elem::F32, 16, 16, 16),
];

const RDNA_MMA: &[Mma] =
    &[mma(Elem::I8, Elem::I8, Elem::I32, 16, 16, 16), mma(Elem::F16, Elem::F16, Elem::F32, 16, 16, 16)];

const METAL_MMA: &[Mma] = &[mma(Elem::F16, Elem::F16, Elem::F32, 8, 8, 8)];

impl Profile {
    const fn new(
        backend: Backend,
        name: &'static str,
        plane: u32,
        sm: u32,
        dp4a: bool,
        mma: &'static [Mma],
    ) -> Profile {
        Profile { backend, name, plane, sm, dp4a, mma }
    }

    /// The reference devices a proof emulates for `backend`: each arm is proven under every
    /// reference profile that selects it, so an arm for `hip` is proven at wave32 and wave64,
    /// and of tiered CUDA arms (`cuda if sm >= 90 => …, cuda => …`) each under a generation
    /// that takes it: Hopper, Ada and Ampere, the three a CUDA arm is written for today.
    pub fn references(backend: Backend) -> Vec<Profile> {
        match backend {
            Backend::Cuda => vec![
                Profile::new(backend, "sm_90 (H200)", 32, 90, true, CUDA_MMA),
                Profile::new(backend, "sm_89 (L40S)", 32, 89, true, CUDA_MMA),
                Profile::new(backend, "sm_80 (A100)", 32, 80, true, CUDA_MMA),
            ],
            Backend::Hip => vec![
                Profile::new(backend, "gfx1100 (wave32)", 32, 0, false, RDNA_MMA),
                Profile::new(backend, "gfx90a (wave64)", 64, 0, false, &[]),
            ],
            Backend::Vulkan => vec![
                Profile::new(backend, "lavapipe (subgroup 8)", 8, 0, true, &[]),
                Profile::new(backend, "desktop (subgroup 32)", 32, 0, true, &[]),
            ],
            Backend::Metal => vec![Profile::new(backend, "Apple GPU", 32, 0, false, METAL_MMA)],
            Backend::WebGpu => vec![Profile::new(backend, "WebGPU (subgroup 32)", 32, 0, false, &[])],
        }
    }

    /// A copy with another plane width (a device whose subgroup size can be chosen).
    pub fn with_plane(mut self, plane: u32) -> Profile {
        self.plane = plane;
        self
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A browser does not name its adapter.
        let name = if self.name.is_empty() { "(an unnamed adapter)" } else { self.name };
        write!(f, "{} {name} (plane {}", self.backend, self.plane)?;
        if self.sm > 0 {
            write!(f, ", sm {}", self.sm)?;
        }
        f.write_str(")")
    }
}
