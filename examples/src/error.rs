//! The errors every example reports before launch when it cannot run: a shape its kernels do
//! not handle, a runtime they cannot run on, or a tuning setting of the environment.

/// A shape (or runtime) the kernels cannot handle, reported before anything is launched.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShapeError(pub String);

/// Why a problem's buffers were not set up: its shape, or a tuning setting its launch shape
/// reads (`ISLANDS_MATVEC_PLANES`, …) that is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProblemError {
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error(transparent)]
    Setting(#[from] island_runtime::settings::SettingError),
}
