use cubecl::prelude::*;
use island_runtime::prelude::*;

#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, lowerings())]
pub mod first {
    use cubecl::prelude::*;

    #[cube]
    pub fn emulate(a: u32) -> u32 {
        a
    }
}

// A second intrinsic registering the same name.
#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, lowerings())]
pub mod second {
    use cubecl::prelude::*;

    #[cube]
    pub fn emulate(a: u32) -> u32 {
        a + 1
    }
}

#[islands]
#[cube]
pub fn check(a: u32, #[comptime] target: Target) -> u32 {
    island! {
        proof(a: u32) -> u32;
        cuda => first::call(a, target),
        default => a,
    }
}

fn main() {}
