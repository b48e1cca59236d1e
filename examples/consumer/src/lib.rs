//! A downstream kernel: byte-swapping 32-bit words (big-endian data to little-endian), with the
//! vendor's `byte_perm` in its CUDA arm. This crate writes no test for it: its `tests/islands.rs`
//! runs the proofs the registry generates. [`cell`] registers the kernel as a cell of "verify,
//! then delete", with the CUDA C++ kernel it replaces as the incumbent.

// This crate's evidence ledger (`ledger.json`): what `islands gate` measured per device, and
// what launches of its islands consult.
islands::ledger!();

pub mod cell;

use island_vendor_byteperm::byte_perm;
use islands::prelude::*;

#[islands]
#[cube(launch)]
pub fn byte_swap(words: &[u32], out: &mut [u32]) {
    let i = ABSOLUTE_POS;
    if i < out.len() {
        let w = words[i];
        out[i] = island! {
            proof(w: u32) -> u32;
            cuda => byte_perm::call(w, 0u32, 0x0123u32, target),
            default => (w << 24) | ((w << 8) & 0x00ff_0000) | ((w >> 8) & 0x0000_ff00) | (w >> 24),
        };
    }
}
