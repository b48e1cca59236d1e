use cubecl::prelude::*;
use island_intrinsics::{dp4a, portable};
use island_runtime::prelude::*;

// An island with a value, in a launch kernel whose tag the attribute adds.
#[islands]
#[cube(launch)]
fn dot(a: &[i32], b: &[i32], out: &mut [i32]) {
    let i = ABSOLUTE_POS;
    let (x, y) = (a[i], b[i]);
    out[i] = island! {
        proof(x: i32, y: i32) -> i32;
        cuda | vulkan if dp4a => dp4a::call(x, y, 0i32, target),
        default => portable::dot4_i8(x, y, 0i32),
    };
}

#[test]
fn compiles() {
    // Both launch paths exist: one fills the tag, one takes it.
    let _auto = dot::launch;
    let _forced = dot::launch_with;
}
