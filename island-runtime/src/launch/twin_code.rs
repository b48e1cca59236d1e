//! The code a cell's twin generates for a device, hashed into the cell's records: every kernel
//! the twin launches at every shape the gate runs, with the device's arms selected and with
//! `default` forced, each with its cube count, expanded and compiled by the device's code
//! generator (on the CPU runtime, CubeCL's printed IR). An edit anywhere that changes what a
//! twin's kernels compute (the kernel's file, a function it calls in another crate, a constant,
//! a launch's grid) changes the hash, so a record measured on other code is stale; no list of
//! source files decides it.
//!
//! The launches are taken instead of run (`cubecl_runtime::captured`) on a CPU-runtime client
//! with buffers of four bytes: nothing is allocated at a shape's size and nothing executes, so
//! the hash needs neither the device nor the inputs, and is the same on every machine.

use crate::codegen::code_hash::hash_profile;
use crate::codegen::lowering::Codegen;
use crate::hardware::device::Exec;
use crate::hardware::fingerprint::Fingerprint;
use crate::launch::cell::{Buffers, Op};
use crate::tag::target::Target;
use cubecl::prelude::Client;
use cubecl_runtime::server::CubeCount;
use island_vocab::{Executor, Profile};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// A twin's hash, or why it cannot be computed.
type Hashed = Result<String, String>;

/// The hash of the code `op`'s twin generates for `device` (see the module's documentation),
/// computed once per process for each op and device profile.
pub fn twin_hash(op: &Op, device: &Fingerprint) -> Result<String, String> {
    static HASHES: LazyLock<Mutex<HashMap<(String, String), Hashed>>> = LazyLock::new(Default::default);
    let profile = hash_profile(device);
    let key =
        (op.key.to_string(), profile.map_or_else(|| device.runtime.clone(), |p| format!("{} {p}", device.runtime)));
    if let Some(known) = HASHES.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return known.clone();
    }
    let hash = twin_code(op, profile).map(|code| crate::records::record::code_hash(&code));
    HASHES.lock().unwrap_or_else(|p| p.into_inner()).insert(key, hash.clone());
    hash
}

/// The text [`twin_hash`] hashes: for each shape and each of the two tags, each launch's cube
/// count and its kernel's code, in launch order. `profile`: the device's (its code generator
/// compiles); `None`: the CPU runtime (its IR).
pub fn twin_code(op: &Op, profile: Option<Profile>) -> Result<String, String> {
    let host = host()?;
    let tags = match profile {
        Some(p) => {
            let exec = Exec { executor: Executor::Device(p.backend), plane: p.plane };
            vec![("arms", Target::from_parts(Some(p), exec)), ("default", Target::from_parts(None, exec))]
        }
        None => vec![("default", Target::default_arms(&host))],
    };
    let inputs = input_count(op);
    let mut compiled: HashMap<cubecl_runtime::id::KernelId, String> = HashMap::new();
    let mut text = String::new();
    for shape in op.shapes {
        for (tag, target) in &tags {
            let ins: Vec<_> = (0..inputs).map(|_| host.empty(4)).collect();
            let scratch: Vec<_> = (op.scratch)(&shape.shape).iter().map(|_| host.empty(4)).collect();
            let out = host.empty(4);
            let buffers = Buffers { inputs: &ins, scratch: &scratch, out: &out };
            let capture = cubecl_runtime::captured::CapturedLaunches::new();
            let launched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                (op.twin)(&host, &shape.shape, &buffers, *target)
            }));
            let kernels = capture.finish();
            match launched {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(format!("the twin does not launch at shape `{}`: {e}", shape.name)),
                Err(p) => {
                    return Err(format!(
                        "the twin panicked at shape `{}`: {}",
                        shape.name,
                        crate::values::readback::panic_text(&p)
                    ));
                }
            }
            if kernels.is_empty() {
                return Err(format!("the twin launches nothing at shape `{}`", shape.name));
            }
            text.push_str(&format!("== {} {tag}\n", shape.name));
            for (kernel, count) in kernels {
                let id = kernel.id();
                if !compiled.contains_key(&id) {
                    let code = code_of(kernel.as_ref(), profile).map_err(|e| format!("{}: {e}", kernel.name()))?;
                    compiled.insert(id.clone(), code);
                }
                let count = match count {
                    CubeCount::Static(x, y, z) => format!("({x}, {y}, {z})"),
                    CubeCount::Dynamic(_) => "dynamic".to_string(),
                };
                text.push_str(&format!("-- {count}\n{}\n", compiled[&id]));
            }
        }
    }
    Ok(text)
}

/// How many input buffers `op` takes: the length of its inputs at its smallest shape, drawn once
/// per process (an op has no other word for it).
fn input_count(op: &Op) -> usize {
    static COUNTS: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Default::default);
    let key = op.key.to_string();
    if let Some(&n) = COUNTS.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return n;
    }
    let n = op.shapes.iter().min_by_key(|s| s.shape.rows * s.shape.cols).map_or(0, |s| (op.inputs)(&s.shape, 0).len());
    COUNTS.lock().unwrap_or_else(|p| p.into_inner()).insert(key, n);
    n
}

/// One kernel's code: compiled by `profile`'s generator, or CubeCL's IR without one.
fn code_of(kernel: &dyn cubecl_runtime::kernel::CubeKernel, profile: Option<Profile>) -> Result<String, String> {
    let definition = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernel.define()))
        .map_err(|p| format!("its expansion panicked: {}", crate::values::readback::panic_text(&p)))?;
    let dim = format!("cube dim {:?}\n", definition.settings.cube_dim);
    // The kernel's name carries a hash of its id, which differs between a debug and a release
    // build of the same source: the code is hashed without it.
    let name = definition.settings.kernel_name.clone();
    let code = match profile {
        Some(p) => Codegen::of(p.backend).compile(definition, &p).map_err(|e| e.to_string())?,
        None => definition.body.to_string(),
    };
    let code = if name.is_empty() { code } else { code.replace(&name, "kernel") };
    Ok(dim + &crate::values::canonical::canonical(&code))
}

/// The client the launches are taken from: the CPU runtime's, the same on every machine.
fn host() -> Result<Client, String> {
    crate::launch::runtimes::RuntimeName::Cpu
        .client()
        .map_err(|e| format!("a twin's code is hashed on the CPU runtime's client: {e}"))
}
