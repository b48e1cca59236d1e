//! Reading results back from a runtime, and caught panics as text.

use cubecl::prelude::*;
use cubecl::server::Handle;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Reads a buffer back; a kernel that failed to compile surfaces here.
pub fn read(client: &Client, handle: Handle) -> Result<Vec<u8>, ReadError> {
    settle(|| client.read_one(handle)).map(|bytes| bytes.to_vec())
}

/// Waits for a read already enqueued (`Client::read_async`) and copies its buffers out of the
/// runtime's: as [`read`], for a read started earlier so that it overlaps other work.
pub fn wait<F>(read: F) -> Result<Vec<Vec<u8>>, ReadError>
where
    F: std::future::Future<Output = Result<Vec<cubecl::bytes::Bytes>, cubecl::server::ServerError>>,
{
    settle(|| cubecl::future::block_on(read)).map(|bytes| bytes.iter().map(|b| b.to_vec()).collect())
}

/// Runs a read, its runtime error or panic as a [`ReadError`].
fn settle<T>(read: impl FnOnce() -> Result<T, cubecl::server::ServerError>) -> Result<T, ReadError> {
    match catch_unwind(AssertUnwindSafe(read)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ReadError::Device(first_lines(&e.to_string(), 12))),
        Err(panic) => Err(ReadError::Panicked(panic_text(&panic))),
    }
}

/// Why a result could not be read back: the runtime's error (a kernel that did not compile or
/// launch surfaces here), or a panic inside the runtime.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Device(String),
    #[error("reading the result panicked: {0}")]
    Panicked(String),
}

/// The message of a caught panic.
pub fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "<non-string panic>".into());
    first_lines(&text, 12)
}

pub fn first_lines(text: &str, n: usize) -> String {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(n + 1).collect();
    if lines.len() > n {
        lines.truncate(n);
        lines.push("…");
    }
    lines.join("\n")
}
