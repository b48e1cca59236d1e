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

/// The intrinsic's check: its CUDA arm against a `default` written another way (the eight bytes
/// in an array, indexed).
///
/// It lives in this file beside the intrinsic, as the built-in intrinsics' checks do: the
/// intrinsic names its check and the check calls the intrinsic.
pub mod checks {
    use islands::prelude::*;

    #[cube]
    fn permute_by_table(a: u32, b: u32, s: u32) -> u32 {
        let mut bytes = Array::<u32>::new(8usize);
        #[unroll]
        for i in 0..4u32 {
            bytes[i as usize] = (a >> (8 * i)) & 0xff;
            bytes[(i + 4) as usize] = (b >> (8 * i)) & 0xff;
        }
        let mut r = 0u32;
        #[unroll]
        for i in 0..4u32 {
            let nibble = (s >> (4 * i)) & 0xf;
            let picked = bytes[(nibble & 7) as usize];
            let sign = select(picked >= 0x80, 0xffu32, 0u32);
            r |= select(nibble >= 8, sign, picked) << (8 * i);
        }
        r
    }

    #[islands]
    #[cube]
    pub fn byte_perm(a: u32, b: u32, s: u32, #[comptime] target: Target) -> u32 {
        island! {
            proof(a: u32, b: u32, s: u32) -> u32;
            cuda => crate::byte_perm::call(a, b, s, target),
            default => permute_by_table(a, b, s),
        }
    }
}
