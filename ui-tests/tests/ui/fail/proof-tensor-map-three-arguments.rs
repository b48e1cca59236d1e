use cubecl::prelude::*;
use island_runtime::prelude::*;
use island_runtime::tensor_map::TmaTile;

const TILE: TmaTile = TmaTile { row_bytes: 128, box_rows: 8, box_bytes: 128, swizzle: 128 };

// `tensor_map` takes the input it maps and the box's layout, and nothing else.
#[islands]
#[cube(launch)]
fn kernel(src: &[i32], map: &[u32], out: &mut [i32]) {
    out[ABSOLUTE_POS] = island! {
        proof(src: &[i32; 256], map: tensor_map(src, crate::TILE, 128)) -> i32;
        cuda => src[0] + map[0] as i32,
        default => src[1],
    };
}

fn main() {}
