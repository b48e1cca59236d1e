//! The intrinsic's check: its CUDA arm against a `default` written another way (the eight bytes
//! in an array, indexed).

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
