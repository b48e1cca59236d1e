/// Scheduler based multi-stream support.
pub mod scheduler;

pub mod base;
mod capture;
mod execute_scope;
mod failures;

#[cfg(multi_threading)]
mod event;

pub use base::*;
pub use capture::*;
pub use execute_scope::*;
pub use failures::*;

#[cfg(multi_threading)]
pub use event::*;
