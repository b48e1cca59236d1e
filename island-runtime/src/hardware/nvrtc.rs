//! The NVRTC that compiles CUDA launches: its version names the compiler in a CUDA device's
//! fingerprint and in the machine-code line of a record.

/// The version of the NVRTC that compiles CUDA launches (`13.0`), once per process; `None`
/// where it cannot be loaded or does not answer.
#[cfg(feature = "cuda")]
pub fn version() -> Option<String> {
    static VERSION: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| {
            // cudarc loads NVRTC on first use and panics where the library is missing.
            std::panic::catch_unwind(|| {
                let (mut major, mut minor) = (0i32, 0i32);
                // SAFETY: NVRTC writes two integers.
                unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
                    .result()
                    .ok()
                    .map(|()| format!("{major}.{minor}"))
            })
            .ok()
            .flatten()
        })
        .clone()
}

/// Without the `cuda` feature there is no NVRTC to ask.
#[cfg(not(feature = "cuda"))]
pub fn version() -> Option<String> {
    None
}
