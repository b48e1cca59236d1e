//! Intrinsics for islands. Each one carries a native lowering per backend that has the
//! instruction, and an emulation of each target's exact semantics that runs anywhere, the
//! CPU runtime included, so any arm can be proven against `default` on the CPU.
//!
//! Every function takes the kernel's tag: it lowers natively when the tag's executor is the
//! device the arm was selected for, and to its emulation otherwise.
//!
//! The table of native lowerings (backend ↔ capability ↔ instruction) is registered below and
//! listed by `islands intrinsics`; [`checks`] holds the island that exercises each one.

// This crate's evidence ledger (`ledger.json`): what `islands gate` measured per device, and
// what launches of its islands consult.
island_runtime::ledger!();

pub mod checks;
pub mod dp4a;
pub mod exact;
pub mod mma;
pub mod plane;
pub mod portable;
pub mod stream;
pub mod tensor_core;

island_runtime::register_intrinsic! {
    name: "dp4a",
    summary: "c + Σ a[i]·b[i] over four packed signed bytes, wrapping i32",
    check: checks::dp4a,
    lowerings: [
        cuda if dp4a => "__dp4a(",
        vulkan if dp4a => "OpSDot",
    ],
}

island_runtime::register_intrinsic! {
    name: "plane::sum<f32>",
    summary: "sum over the plane in butterfly order (xor 1, 2, 4, …), every lane receives it",
    check: checks::plane_sum_f32_w32,
    lowerings: [
        cuda => "__shfl_xor_sync",
        hip => "__shfl_xor",
        vulkan => "OpGroupNonUniformFAdd",
        metal => "simd_sum",
        webgpu => "subgroupAdd",
    ],
}

island_runtime::register_intrinsic! {
    name: "plane::sum<i32>",
    summary: "integer sum over the plane, wrapping, every lane receives it",
    check: checks::plane_sum_i32_w32,
    lowerings: [
        cuda => "__shfl_xor_sync",
        vulkan => "OpGroupNonUniformIAdd",
    ],
}

island_runtime::register_intrinsic! {
    name: "plane::max<f32>",
    summary: "maximum over the plane, every lane receives it",
    check: checks::plane_max_f32_w32,
    lowerings: [
        cuda => "__shfl_xor_sync",
        vulkan => "OpGroupNonUniformFMax",
    ],
}

island_runtime::register_intrinsic! {
    name: "plane::group_max<f32>",
    summary: "maximum over each aligned group of lanes (8 in the check), every lane of the group receives it",
    check: checks::group_max_f32_g8,
    lowerings: [
        cuda => "__shfl_xor_sync",
        vulkan => "OpGroupNonUniformShuffleXor",
        metal => "simd_shuffle_xor",
        webgpu => "subgroupShuffleXor",
    ],
}

island_runtime::register_intrinsic! {
    name: "plane::shuffle_xor",
    summary: "the value of lane `lane ^ mask`",
    check: checks::shuffle_xor_w32,
    lowerings: [
        cuda => "__shfl_xor_sync",
        vulkan => "OpGroupNonUniformShuffleXor",
        metal => "simd_shuffle_xor",
        webgpu => "subgroupShuffleXor",
    ],
}

island_runtime::register_intrinsic! {
    name: "plane::broadcast",
    summary: "the value of a given lane",
    check: checks::broadcast_w32,
    lowerings: [
        cuda => "__shfl_sync",
        vulkan => "OpGroupNonUniformBroadcast",
    ],
}

island_runtime::register_intrinsic! {
    name: "mma::tile_i8",
    summary: "16×16 i32 tile += 16×k i8 · k×16 i8, one plane",
    check: checks::mma_i8,
    lowerings: [
        cuda => "wmma::mma_sync",
        hip => "rocwmma::mma_sync",
    ],
}

island_runtime::register_intrinsic! {
    name: "mma::tile_f16",
    summary: "16×16 f32 tile += 16×k f16 · k×16 f16, one plane (bit-exact on sm_90's measured model, a tolerance elsewhere)",
    check: checks::mma_f16,
    lowerings: [
        cuda => "wmma::mma_sync",
    ],
}

island_runtime::register_intrinsic! {
    name: "stream::load<i32>",
    summary: "a read-only load that does not allocate in L1 (data read once)",
    check: checks::stream_load,
    lowerings: [
        cuda => "ld.global.nc.L1::no_allocate.b32",
    ],
}

island_runtime::register_intrinsic! {
    name: "stream::load<i32x4>",
    summary: "a read-only 16-byte load that does not allocate in L1 (data read once)",
    check: checks::stream_load_x4,
    lowerings: [
        cuda => "ld.global.nc.L1::no_allocate.v4.b32",
    ],
}

island_runtime::register_intrinsic! {
    name: "exact::div<f32>",
    summary: "a / b in binary32, correctly rounded (CUDA's `/` without fast math is div.rn.f32)",
    check: exact::div,
    lowerings: [
        cuda => " / ",
    ],
}

island_runtime::register_intrinsic! {
    name: "exact::sqrt<f32>",
    summary: "sqrt(x) in binary32, correctly rounded (CUDA's `sqrt` without fast math is sqrt.rn.f32)",
    check: exact::sqrt,
    lowerings: [
        cuda => "sqrt(",
    ],
}
