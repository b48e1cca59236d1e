use cubecl::prelude::*;
use island_intrinsics::plane;
use island_runtime::prelude::*;

// An island in a #[cube] helper, which takes the kernel's tag explicitly.
#[islands]
#[cube]
fn wide_sum(v: f32, #[comptime] target: Target) -> f32 {
    island! {
        proof(v: f32) -> f32, cube_dim = 32;
        cuda | vulkan if plane == 32 => plane::sum::call::<f32>(v, target),
        default => island_intrinsics::portable::tree_sum::<f32>(v, 32u32),
    }
}

// The kernel names its tag with `tag = …` and passes it down.
#[islands(tag = t)]
#[cube(launch)]
fn kernel(a: &[f32], out: &mut [f32], #[comptime] t: Target) {
    out[ABSOLUTE_POS] = wide_sum(a[ABSOLUTE_POS], t);
}

#[test]
fn compiles() {
    let _ = kernel::launch_with;
}
