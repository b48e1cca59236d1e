//! Floor 5, code generation: an island expanded for a backend without a GPU (lowering checks,
//! code hashes), what the GPU really executes (machine code), and hand-written incumbents.

pub mod code_hash;
pub mod float_arithmetic;
pub mod foreign;
pub mod glsl_kernel;
pub mod lowering;
pub mod machine_code;
pub mod missing_types;
