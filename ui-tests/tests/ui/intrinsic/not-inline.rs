use cubecl::prelude::*;
use island_runtime::prelude::*;

// A module that is not written inline.
#[island_runtime::intrinsic(name = "swizzle", summary = "…", check = check, lowerings(cuda => "prmt.b32"))]
pub mod swizzle;

fn main() {}
