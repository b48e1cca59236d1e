//! The shapes the tile GEMMs take: whole 16×16 tiles, one 32-unit cube per output tile.

use crate::error::ShapeError;
use cubecl::prelude::CubeCount;

/// Tile edge.
pub const TILE: u32 = 16;
/// Units per cube: one plane of 32.
pub const UNITS: u32 = 32;

/// Checks a shape before launch: every dimension a positive multiple of 16.
pub fn check(gemm: &str, m: usize, k: usize, n: usize) -> Result<(), ShapeError> {
    if [m, k, n].iter().any(|&d| d == 0 || d % TILE as usize != 0) {
        return Err(ShapeError(format!(
            "the {gemm} GEMM works on whole 16×16 tiles: m, k, n must be positive multiples of 16, got {m}×{k}×{n}"
        )));
    }
    Ok(())
}

/// One cube per output tile: `n / 16` across, `m / 16` down.
pub fn cube_count(m: usize, n: usize) -> CubeCount {
    CubeCount::Static((n as u32) / TILE, (m as u32) / TILE, 1)
}

/// The `k` of a tile GEMM island's proof, in tiles: a 16×64 by 64×16 product, four tiles deep.
pub const PROOF_K_TILES: u32 = 4;
/// Values of the `a` and `b` tiles of a proof (`TILE` × the proof's `k`).
pub const PROOF_TILE_VALUES: usize = (TILE * TILE * PROOF_K_TILES) as usize;
/// Values of the output tile of a proof.
pub const PROOF_OUT_VALUES: usize = (TILE * TILE) as usize;
