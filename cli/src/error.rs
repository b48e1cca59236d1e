//! How a subcommand ends: [`Outcome`] when it ran to its verdict, [`CliError`] when it could not.
//! `main` turns them into the exit code, in one place: pass 0, fail 1, error 2.

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

/// Why a subcommand could not run to a verdict (exit code 2). Its text is the whole message
/// `main` prints on standard error.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A setting every launch would consult (`ISLANDS_POLICY`, `ISLANDS_LEDGER`) is wrong: the
    /// CLI refuses to start.
    #[error("islands: {0}")]
    Settings(String),
    /// No runtime, device, ledger or file it needs, or nothing to do.
    #[error("{0}")]
    Run(String),
    /// A runtime's client could not be made.
    #[error(transparent)]
    Client(#[from] island_runtime::runtimes::ClientError),
    /// An `ISLANDS_*` setting of the environment is refused (`docs/settings.md`).
    #[error("islands: {0}")]
    Setting(#[from] island_runtime::settings::SettingError),
    /// The device failed while kernels were timed.
    #[error(transparent)]
    Sync(#[from] island_runtime::bench::SyncError),
}

impl From<String> for CliError {
    fn from(message: String) -> CliError {
        CliError::Run(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> CliError {
        CliError::Run(message.to_string())
    }
}
