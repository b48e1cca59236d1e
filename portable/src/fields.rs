//! The fields of a finite non-zero binary32, normalised: what the integer formulations of
//! division, square root and the products start from.

use cubecl::prelude::*;

/// The significand of a finite non-zero binary32 with its implicit bit, normalised into
/// `[2^23, 2^24)` (subnormals shifted up).
#[cube]
pub(crate) fn significand(e: u32, f: u32) -> u32 {
    let mut m = f | 0x80_0000u32;
    if e == 0 {
        m = f << (f.leading_zeros() - 8);
    }
    m
}

/// The biased exponent that goes with [`significand`]: below 1 for subnormals.
#[cube]
pub(crate) fn exponent(e: u32, f: u32) -> i32 {
    let mut x = i32::cast_from(e);
    if e == 0 {
        x = 9 - i32::cast_from(f.leading_zeros());
    }
    x
}
