//! Things said once per process: a launch that takes `default` for a reason of the ledger says so
//! once, and tests read back what was said.

use std::sync::Mutex;

/// The messages [`log_once`] has logged, in order (what launches said about the ledger).
pub fn logged() -> Vec<String> {
    LOGGED.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(_, m)| m.clone()).collect()
}

static LOGGED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Logs `message` for `key` once per process, as a warning.
pub fn log_once(key: String, message: impl FnOnce() -> String) {
    log_once_at(log::Level::Warn, key, message)
}

/// Logs `message` for `key` once per process, at `level`.
pub fn log_once_at(level: log::Level, key: String, message: impl FnOnce() -> String) {
    let mut seen = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.iter().any(|(k, _)| *k == key) {
        let message = message();
        log::log!(level, "{message}");
        seen.push((key, message));
    }
}
