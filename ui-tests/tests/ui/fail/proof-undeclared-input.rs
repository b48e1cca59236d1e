use cubecl::prelude::*;
use island_runtime::prelude::*;

// An arm reads a local of the function that the proof signature does not declare.
#[islands]
#[cube(launch)]
fn kernel(a: &[i32], b: &[i32], out: &mut [i32]) {
    let (x, y) = (a[ABSOLUTE_POS], b[ABSOLUTE_POS]);
    out[ABSOLUTE_POS] = island! {
        proof(x: i32) -> i32;
        cuda => x + y,
        default => y + x,
    };
}

fn main() {}
