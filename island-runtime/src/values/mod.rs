//! Floor 1, values: the scalars and slices a proof draws, compares and prints, their contracts,
//! hashes and canonical text, and reading results back. Names nothing above it.

pub mod canonical;
pub mod contract;
pub mod hash;
pub mod inputs;
pub mod readback;
pub mod said;
pub mod tensor_map;
pub mod value;
