//! Floor 4, tag: the comptime target tag every island matches on, the registries of arms and
//! intrinsics `#[islands]` fills, lifted islands and the building blocks of emulations.

pub mod emulation;
pub mod intrinsic;
pub mod lifted;
pub mod registry;
pub mod target;
