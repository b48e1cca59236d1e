use cubecl::prelude::*;
use island_runtime::prelude::*;

#[islands]
#[cube(launch)]
fn misspelt_exact_where(out: &mut [f32]) {
    out[ABSOLUTE_POS] = island! {
        proof() -> f32, contract = ulp(1, "reason", exact_if = modelled);
        cuda => 1.0f32,
        default => 2.0f32,
    };
}

fn main() {}
