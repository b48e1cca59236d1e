use cubecl::prelude::*;
use island_runtime::prelude::*;

// Islands in loops and branches, one of them computed before another that uses its value.
#[islands]
#[cube(launch)]
fn branches(a: &[u32], out: &mut [u32]) {
    let i = ABSOLUTE_POS;
    let mut acc = 0u32;
    for k in 0..4u32 {
        if a[i] > k {
            let doubled = island! {
                cuda if plane == 32 => k * 2,
                default => k + k,
            };
            acc += island! {
                cuda if sm >= 70 => doubled,
                vulkan => k << 1,
                default => 2 * k,
            };
        } else {
            island! {
                metal => { acc += 1; }
                default => { acc += 1u32; }
            }
        }
    }
    out[i] = acc;
}

#[test]
fn compiles() {}
