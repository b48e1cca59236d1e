fn check() {}

// An intrinsic must carry its emulation: without it no arm using it could be proven on the CPU.
#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, lowerings(cuda => "prmt.b32"))]
pub mod swizzle {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(a: u32) -> u32 {
        a
    }
}

fn main() {}
