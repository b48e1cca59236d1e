mod base;
mod capture;
mod handle;

pub use base::*;
pub use capture::*;
pub use handle::*;
