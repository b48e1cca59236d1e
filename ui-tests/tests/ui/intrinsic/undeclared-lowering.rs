fn check() {}

// A native lowering the attribute does not declare, and a declared one without its function.
#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, lowerings(vulkan => "OpBitReverse"))]
pub mod swizzle {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(a: u32) -> u32 {
        a
    }

    #[cube]
    pub fn emulate(a: u32) -> u32 {
        a
    }
}

fn main() {}
