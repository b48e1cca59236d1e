//! How a subcommand ends when it ran to its verdict ([`Outcome`]), and the two errors several
//! subcommands share (a device without arms, a file). Each subcommand's own error type is its
//! module's; `main` gathers them in its `CliError` and turns every end into the exit code, in one
//! place: pass 0, fail 1, error 2.

use std::path::PathBuf;

/// The verdict of a subcommand that ran: everything held, or something it checks did not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Exit code 0.
    Pass,
    /// Exit code 1: a proof, a comparison or a lowering failed (reported on standard output).
    Fail,
}

impl From<bool> for Outcome {
    /// `true` passes.
    fn from(passed: bool) -> Outcome {
        if passed { Outcome::Pass } else { Outcome::Fail }
    }
}

/// A runtime whose device is none islands has arms for.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a device islands has arms for")]
pub struct NotADevice(pub String);

/// A file or folder that could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct FileError {
    pub path: PathBuf,
    pub source: std::io::Error,
}
