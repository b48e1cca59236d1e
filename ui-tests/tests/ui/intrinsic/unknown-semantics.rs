use cubecl::prelude::*;
use island_runtime::prelude::*;

// A semantic class the attribute does not know.
#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, semantics = exact, lowerings(cuda => "prmt.b32"))]
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

#[islands]
#[cube]
pub fn check(a: u32, #[comptime] target: Target) -> u32 {
    island! {
        proof(a: u32) -> u32;
        cuda => swizzle::call(a, target),
        default => a,
    }
}

fn main() {}
