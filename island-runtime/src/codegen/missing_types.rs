//! The types a backend's shading language lacks, found in a kernel's printed IR: WGSL has no
//! binary64 and no integers but 32-bit ones, the Metal Shading Language no binary64. A kernel that uses
//! one cannot run there. An island stands on such a backend through an arm that lowers no
//! intrinsic and avoids what its `default` uses (a formulation: `portable::fma_rn32`, in 32-bit
//! words, where `default` is the binary64 `portable::fma_rn`), proven equal to `default` on the
//! CPU like any arm.

use island_vocab::Backend;

/// A type a language lacks: its name in messages, and how CubeCL's IR prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lacked {
    pub name: &'static str,
    pub ir: &'static str,
}

const BINARY64: Lacked = Lacked { name: "f64", ir: "cube.f64" };
const I64: Lacked = Lacked { name: "i64", ir: "builtin.integer si64" };
const U64: Lacked = Lacked { name: "u64", ir: "builtin.integer ui64" };
const I16: Lacked = Lacked { name: "i16", ir: "builtin.integer si16" };
const U16: Lacked = Lacked { name: "u16", ir: "builtin.integer ui16" };
const I8: Lacked = Lacked { name: "i8", ir: "builtin.integer si8" };
const U8: Lacked = Lacked { name: "u8", ir: "builtin.integer ui8" };

/// The types `backend`'s language lacks.
pub const fn lacked(backend: Backend) -> &'static [Lacked] {
    match backend {
        Backend::WebGpu => &[BINARY64, I64, U64, I16, U16, I8, U8],
        Backend::Metal => &[BINARY64],
        Backend::Cuda | Backend::Hip | Backend::Vulkan => &[],
    }
}

/// The types of `lacked(backend)` that a kernel's printed IR (`KernelDefinition::body`) uses.
pub fn used(backend: Backend, ir: &str) -> Vec<&'static str> {
    lacked(backend).iter().filter(|t| mentions(ir, t.ir)).map(|t| t.name).collect()
}

/// The types of `types` (by name: `i8`) that the language of the runtime behind `client` lacks:
/// a kernel with buffers of one cannot be launched there.
pub fn lacked_by(client: &cubecl::prelude::Client, types: &[&str]) -> Vec<&'static str> {
    let backend = crate::hardware::device::Device::of(client).exec.executor.backend();
    backend.map_or(&[][..], lacked).iter().filter(|t| types.contains(&t.name)).map(|t| t.name).collect()
}

/// Whether `ir` holds `spelling` as a whole word (`cube.f64` is not `cube.f64x`).
fn mentions(ir: &str, spelling: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    ir.match_indices(spelling).any(|(at, _)| {
        let before = ir[..at].chars().next_back();
        let after = ir[at + spelling.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_words_of_the_backend_s_lacked_types_count() {
        let ir = "v3 = arith.mul (v1, v2) : <(cube.f64 ...)>";
        assert_eq!(used(Backend::WebGpu, ir), vec!["f64"]);
        assert_eq!(used(Backend::Metal, ir), vec!["f64"]);
        assert!(used(Backend::Vulkan, ir).is_empty());
        assert!(used(Backend::WebGpu, "cube.f64x2 cube.f32").is_empty());
        assert!(used(Backend::WebGpu, "v1 : cube.f32").is_empty());
    }
}
