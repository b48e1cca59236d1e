//! `byte_perm`: pick four bytes out of eight, the way CUDA's `prmt.b32` does, packaged as an
//! islands intrinsic. Kernels in other crates call `island_vendor_byteperm::byte_perm::call`
//! inside an island arm; the emulation makes that arm provable on the CPU.

// This crate's evidence ledger (`ledger.json`): what `islands gate` measured per device, and
// what launches of its islands consult.
islands::ledger!();

/// `byte_perm(a, b, s)`: the bytes of `b:a` are numbered 0–7 (`a`'s low byte is 0, `b`'s high
/// byte is 7); byte `i` of the result is the byte that nibble `i` of `s` selects with its low
/// three bits, or, if the nibble's top bit is set, that byte's sign (0x00 or 0xff) repeated.
#[islands::intrinsic(
    name = "byte_perm",
    semantics = defined,
    summary = "four bytes picked out of eight by selector nibbles, with sign replication (PTX prmt.b32)",
    check = crate::checks::byte_perm,
    lowerings(cuda => "prmt.b32" sass "PRMT"),
)]
pub mod byte_perm {
    use islands::prelude::*;

    /// Native on CUDA: one `prmt.b32`.
    #[cube]
    pub fn cuda(a: u32, b: u32, s: u32) -> u32 {
        let r: u32;
        gpu_asm!("prmt.b32 {}, {}, {}, {};", out(_) r, in(_) a, in(_) b, in(_) s, options(pure, nomem));
        r
    }

    /// The emulation: the instruction's definition, byte by byte.
    #[cube]
    pub fn emulate(a: u32, b: u32, s: u32) -> u32 {
        let mut r = 0u32;
        #[unroll]
        for i in 0..4u32 {
            let nibble = (s >> (4 * i)) & 0xf;
            let index = nibble & 7;
            let mut byte = (a >> (8 * (index % 4))) & 0xff;
            if index >= 4 {
                byte = (b >> (8 * (index % 4))) & 0xff;
            }
            if nibble & 8 != 0 {
                byte = ((byte >> 7) & 1) * 0xff;
            }
            r |= byte << (8 * i);
        }
        r
    }
}

pub mod checks;
