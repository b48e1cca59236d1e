use cubecl::prelude::*;
use island_runtime::prelude::*;

// An emulation whose parameter is a pattern.
#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, lowerings(cuda => "prmt.b32"))]
pub mod swizzle {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(a: u32) -> u32 {
        a
    }

    #[cube]
    pub fn emulate((a, _b): (u32, u32)) -> u32 {
        a
    }
}

fn main() {}
