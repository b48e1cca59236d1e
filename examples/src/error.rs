//! The error every example reports before launch when it cannot run: a shape its kernels do
//! not handle, or a runtime they cannot run on.

/// A shape (or runtime) the kernels cannot handle, reported before anything is launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError(pub String);

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShapeError {}
