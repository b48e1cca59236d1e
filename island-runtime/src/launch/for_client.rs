//! The tag a launch fills in by itself ([`Target::for_client`]): the arms of the device behind
//! the client, each one only where `crate::launch::policy` finds it shown exact there.

use crate::launch::policy::{self, Settings};
use crate::records::view::{DeviceLedger, Policy};
use crate::tag::target::Target;
use cubecl::prelude::Client;
use island_vocab::{Executor, Profile};
use std::sync::{Mutex, Once};

impl Target {
    /// The tag a launch fills in by itself: the arms of the device behind `client` where it is
    /// a GPU this version recognises, each consulted against the device's evidence under
    /// `ISLANDS_POLICY` (`crate::launch::policy`); `default` everywhere otherwise. Wrong settings (a
    /// policy that does not exist, a ledger that does not parse) make every island take
    /// `default`, said once on standard error.
    pub fn for_client(client: &Client) -> Target {
        let device = crate::hardware::device::Device::of(client);
        let exec = device.exec;
        if let Executor::Unknown(name) = exec.executor {
            log::warn!("islands: runtime `{name}` is not recognised; every island takes `default`");
        }
        // Read before anything else, so that a wrong setting is said on any device, the CPU's
        // included, and not only where an arm could run.
        let settings = policy::settings();
        if let Err(e) = settings {
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                eprintln!("islands: {e}; every island takes `default` until it is fixed");
                log::error!("islands: {e}");
            });
        }
        let Some(profile) = device.profile else { return Target::from_parts(None, exec) };
        match settings {
            Err(_) => Target::from_parts(None, exec),
            Ok(s) if s.policy == Policy::Off => Target::from_parts(Some(profile), exec),
            Ok(s) => match view(client, profile, s) {
                Some(view) => Target::from_parts(Some(profile), exec).with_ledger(view),
                None => Target::from_parts(None, exec),
            },
        }
    }
}

/// The ledger view of the device behind `client`, built once per device and process (keyed by
/// the device's view, which `Device::of` builds once).
fn view(client: &Client, profile: Profile, settings: &Settings) -> Option<&'static DeviceLedger> {
    type Seen = Vec<(usize, Option<&'static DeviceLedger>)>;
    static SEEN: Mutex<Seen> = Mutex::new(Vec::new());
    let device = crate::hardware::device::Device::of(client);
    let key = std::ptr::from_ref(device) as usize;
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, view)) = seen.iter().find(|(k, _)| *k == key) {
        return *view;
    }
    let view = device.fingerprint.clone().map(|device| {
        let records: Vec<_> = settings.records.iter().filter(|r| r.device.same_device(&device)).cloned().collect();
        let facts = crate::launch::evidence::facts(&device, &profile, &records, client);
        let unproven = facts.iter().filter(|(_, f)| f.needs_device_evidence.is_some()).count();
        log::info!(
            "islands: {device}: {} records, {} arms admitted, {unproven} of them need evidence of this device ({} policy)",
            records.len(),
            facts.len(),
            settings.policy
        );
        let view = DeviceLedger::leak(device, profile, settings.policy, settings.records.to_vec(), facts);
        if view.runtime_witness.is_none() && settings.policy == Policy::Trust {
            log::warn!(
                "islands: {}: ISLANDS_POLICY=trust: no device of runtime `{}` has run an island natively, so its arms \
                 whose semantic class carries their CPU proofs run on trust alone",
                view.device,
                view.device.runtime
            );
        }
        view
    });
    seen.push((key, view));
    view
}
