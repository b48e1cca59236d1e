use cubecl::prelude::*;
use island_runtime::prelude::*;

// `dont_care` names lanes of the island's value; an island that only writes a slice has none.
#[islands]
#[cube]
fn helper(acc: &mut [i32], #[comptime] target: Target) {
    island! {
        proof(acc: &mut [i32; 64]), dont_care = UNIT_POS >= 32;
        cuda => acc[UNIT_POS as usize] = 1i32,
        default => acc[UNIT_POS as usize] = 1i32,
    }
}

fn main() {}
