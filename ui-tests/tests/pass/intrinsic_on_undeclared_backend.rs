use cubecl::prelude::*;
use island_runtime::prelude::*;

#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = kernel, lowerings(cuda => "prmt.b32"))]
pub mod swizzle {
    use cubecl::prelude::*;

    #[cube]
    pub fn cuda(a: u32) -> u32 {
        let r: u32;
        gpu_asm!("prmt.b32 {}, {}, 0, 0x0123;", out(_) r, in(_) a, options(pure, nomem));
        r
    }

    #[cube]
    pub fn emulate(a: u32) -> u32 {
        (a << 24) | ((a << 8) & 0x00ff_0000) | ((a >> 8) & 0x0000_ff00) | (a >> 24)
    }
}

// The documented fallback: a `vulkan` arm may call an intrinsic that declares only a `cuda`
// lowering. It compiles, and on Vulkan runs the intrinsic's emulation: correct (the proof holds
// it to `default`) but not accelerated, which the lowering check reports for that arm.
#[islands]
#[cube(launch)]
fn kernel(a: &[u32], out: &mut [u32]) {
    let x = a[ABSOLUTE_POS];
    out[ABSOLUTE_POS] = island! {
        proof(x: u32) -> u32;
        cuda | vulkan => swizzle::call(x, target),
        default => (x << 24) | ((x << 8) & 0x00ff_0000) | ((x >> 8) & 0x0000_ff00) | (x >> 24),
    };
}

#[test]
fn compiles() {}
