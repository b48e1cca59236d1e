use cubecl::prelude::*;
use island_runtime::prelude::*;

// An island used as a statement, writing through a slice.
#[islands]
#[cube(launch)]
fn scale(out: &mut [f32]) {
    let i = ABSOLUTE_POS;
    island! {
        cuda | hip => {
            out[i] *= 2.0;
        }
        default => {
            out[i] = out[i] + out[i];
        }
    }
    out[i] += 1.0;
}

#[test]
fn compiles() {}
