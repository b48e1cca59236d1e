//! What a launch runs on a device: the ledger's records of that device, what the arm lowers
//! natively there, and the policy (`ISLANDS_POLICY`).
//!
//! The policy's table of what runs is [`crate::records::view`]'s; this module reads this
//! process's settings once.

use crate::records::embedded::LedgerError;
use crate::records::record::Record;
use std::sync::OnceLock;

use crate::records::view::Policy;

/// A setting of this process that launches cannot honour.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("ISLANDS_POLICY=`{0}` is not a policy; expected trust, strict or off")]
    Policy(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl Policy {
    pub fn parse(s: &str) -> Result<Policy, SettingsError> {
        match s.trim() {
            "" | "trust" => Ok(Policy::Trust),
            "strict" => Ok(Policy::Strict),
            "off" => Ok(Policy::Off),
            other => Err(SettingsError::Policy(other.to_string())),
        }
    }
}

/// What this process's launches consult: `ISLANDS_POLICY` and the ledger, read once.
#[derive(Debug)]
pub struct Settings {
    pub policy: Policy,
    pub records: &'static [Record],
}

/// This process's [`Settings`], or why they are wrong. A launch under wrong settings takes
/// `default` in every island and says so on standard error (`crate::launch::for_client`); the CLI refuses
/// to start.
pub fn settings() -> Result<&'static Settings, &'static SettingsError> {
    static SETTINGS: OnceLock<Result<Settings, SettingsError>> = OnceLock::new();
    SETTINGS
        .get_or_init(|| {
            let policy = Policy::parse(&std::env::var("ISLANDS_POLICY").unwrap_or_default())?;
            let records = crate::records::embedded::records().map_err(|e| SettingsError::Ledger(e.clone()))?;
            Ok(Settings { policy, records })
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_errors_that_name_the_value() {
        assert_eq!(Policy::parse(" strict ").unwrap(), Policy::Strict);
        assert_eq!(Policy::parse("").unwrap(), Policy::Trust);
        let e = Policy::parse("strcit").unwrap_err().to_string();
        assert!(e.contains("strcit") && e.contains("trust, strict or off"), "{e}");
    }
}
