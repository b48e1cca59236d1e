//! The tags a launch fills in by itself: [`Target::for_client`], the arms of the device behind
//! the client, each one only where `crate::launch::policy` finds it shown exact there; and
//! [`Target::default_for_client`], `default` as that device can run it.

use crate::hardware::fingerprint::Fingerprint;
use crate::launch::policy::{self, Settings};
use crate::records::view::{Carry, DeviceLedger, Policy};
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

impl Target {
    /// `default` in every island, as the device behind `client` can run it: on a backend whose
    /// language lacks a type some `default` uses (`crate::codegen::missing_types`: binary64 on
    /// WGSL), an island whose arm there is a formulation takes it, which stands where `default`
    /// stands (`crate::launch::semantics::carry`). Elsewhere, [`Target::default_arms`].
    pub fn default_for_client(client: &Client) -> Target {
        let device = crate::hardware::device::Device::of(client);
        let lacks =
            device.exec.executor.backend().is_some_and(|b| !crate::codegen::missing_types::lacked(b).is_empty());
        match device.profile {
            Some(profile) if lacks => {
                Target::from_parts(Some(profile), device.exec).only_formulations(formulations(client, profile))
            }
            _ => Target::default_arms(client),
        }
    }
}

/// `make`'s value for the device behind `client`, made on the first call for that device and
/// kept in `seen` for the process (keyed by the device's view, which `Device::of` builds once).
fn once_per_device<T: Copy>(seen: &Mutex<Vec<(usize, T)>>, client: &Client, make: impl FnOnce() -> T) -> T {
    let key = std::ptr::from_ref(crate::hardware::device::Device::of(client)) as usize;
    let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, value)) = seen.iter().find(|(k, _)| *k == key) {
        return *value;
    }
    let value = make();
    seen.push((key, value));
    value
}

/// The islands whose selected arm on the device behind `client` (of `profile`) is a
/// formulation, found once per device and process.
fn formulations(client: &Client, profile: Profile) -> &'static [&'static str] {
    static SEEN: Mutex<Vec<(usize, &'static [&'static str])>> = Mutex::new(Vec::new());
    once_per_device(&SEEN, client, || {
        let device = crate::hardware::device::Device::of(client);
        let planes = (device.plane_min, device.exec.plane);
        let mut ids: Vec<&'static str> = crate::tag::registry::arms()
            .iter()
            .filter(|e| e.expect == island_vocab::Expect::Equal && crate::tag::registry::selects(e, &profile))
            .filter(|e| crate::launch::semantics::carry(e, &profile, client, planes) == Carry::AsDefault)
            .map(|e| e.site.id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        Box::leak(ids.into_boxed_slice())
    })
}

/// The ledger view of the device behind `client`, built once per device and process.
fn view(client: &Client, profile: Profile, settings: &Settings) -> Option<&'static DeviceLedger> {
    static SEEN: Mutex<Vec<(usize, Option<&'static DeviceLedger>)>> = Mutex::new(Vec::new());
    once_per_device(&SEEN, client, || {
        let device = crate::hardware::device::Device::of(client).fingerprint.clone()?;
        Some(build_view(client, device, profile, settings))
    })
}

/// The view of `device`, the device behind `client`: its records and the facts of its arms.
fn build_view(client: &Client, device: Fingerprint, profile: Profile, settings: &Settings) -> &'static DeviceLedger {
    let records: Vec<_> = settings.records.iter().filter(|r| r.device.same_device(&device)).cloned().collect();
    let facts = crate::launch::evidence::facts(&device, &profile, &records, client);
    let unproven = facts.iter().filter(|(_, f)| f.needs_device_evidence().is_some()).count();
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
}
