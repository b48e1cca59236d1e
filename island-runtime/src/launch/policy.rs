//! What a launch runs on a device: the ledger's records of that device, what the arm lowers
//! natively there, and the policy (`ISLANDS_POLICY`, read through `island_vocab::settings`).
//!
//! The policy's table of what runs is [`crate::records::view`]'s; this module reads this
//! process's settings once.

use crate::records::embedded::LedgerError;
use crate::records::record::Record;
use crate::records::view::Policy;
use island_vocab::settings::{self, POLICY, SettingError};
use std::sync::OnceLock;

/// A setting of this process that launches cannot honour.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Policy(#[from] SettingError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl Policy {
    /// A value of `ISLANDS_POLICY` (empty: the default, `evidence`).
    pub fn parse(s: &str) -> Result<Policy, SettingError> {
        let word = POLICY.word(s)?;
        [Policy::Evidence, Policy::Trust, Policy::Strict, Policy::Off]
            .into_iter()
            .find(|p| p.to_string() == word)
            .ok_or_else(|| POLICY.error(s))
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
            settings::warn_unknown();
            let policy = Policy::parse(settings::policy()?)?;
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
        assert_eq!(Policy::parse("").unwrap(), Policy::Evidence);
        let e = Policy::parse("strcit").unwrap_err().to_string();
        assert!(e.contains("ISLANDS_POLICY=`strcit`") && e.contains("evidence, trust, strict or off"), "{e}");
        // Every word of the settings table is a policy.
        let island_vocab::settings::Kind::Choice(words) = POLICY.kind else { panic!("{:?}", POLICY.kind) };
        for word in words {
            assert_eq!(Policy::parse(word).unwrap().to_string(), *word);
        }
    }
}
