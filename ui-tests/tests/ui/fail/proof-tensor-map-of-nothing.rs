use cubecl::prelude::*;
use island_runtime::prelude::*;
use island_runtime::tensor_map::TmaTile;

const TILE: TmaTile = TmaTile { row_bytes: 128, box_rows: 8, box_bytes: 128, swizzle: 128 };

// A tensor map must map a per-cube slice input of the same proof signature.
#[islands]
#[cube(launch)]
fn kernel(src: &[i32], lane: u32, map: &[u32], other: &[u32], out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(src: &[i32; 256], lane: u32, map: tensor_map(source, crate::TILE), other: tensor_map(lane, crate::TILE)) -> i32;
        cuda => src[0] + map[0] as i32 + other[0] as i32 + lane as i32,
        default => src[1],
    };
}

fn main() {}
