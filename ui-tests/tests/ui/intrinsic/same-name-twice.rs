fn check() {}

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

fn main() {}
