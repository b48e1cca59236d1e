use cubecl::prelude::*;
use island_runtime::prelude::*;

// An intrinsic function with a receiver.
#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, lowerings(cuda => "prmt.b32"))]
pub mod swizzle {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(a: u32) -> u32 {
        a
    }

    #[cube]
    pub fn emulate(self, a: u32) -> u32 {
        a
    }
}

fn main() {}
