use cubecl::prelude::*;
use island_runtime::prelude::*;

// Machine code (`sass`) is NVIDIA's: a Vulkan row cannot name it.
#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, semantics = defined, lowerings(vulkan => "OpBitFieldInsert" sass "PRMT"))]
pub mod swizzle {
    use cubecl::prelude::*;

    #[cube]
    pub fn vulkan(a: u32) -> u32 {
        a
    }

    #[cube]
    pub fn emulate(a: u32) -> u32 {
        a
    }
}

#[islands]
#[cube]
pub fn check(a: u32, #[comptime] target: Target) -> u32 {
    island! {
        proof(a: u32) -> u32;
        vulkan => swizzle::call(a, target),
        default => a,
    }
}

fn main() {}
