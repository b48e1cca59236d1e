use cubecl::prelude::*;
use island_runtime::prelude::*;

// Islands in loops and branches, and an island inside an arm of another.
#[islands]
#[cube(launch)]
fn nested(a: &[u32], out: &mut [u32]) {
    let i = ABSOLUTE_POS;
    let mut acc = 0u32;
    for k in 0..4u32 {
        if a[i] > k {
            acc += island! {
                cuda if sm >= 70 => island! {
                    cuda if plane == 32 => k * 2,
                    default => k + k,
                },
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
