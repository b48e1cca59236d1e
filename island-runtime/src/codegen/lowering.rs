//! Lowering without a GPU: an island's lifted kernel, expanded for a backend's reference device
//! and compiled by that backend's code generator (CUDA C++, HIP C++, Metal, SPIR-V, WGSL),
//! to see which instructions an arm really emits.

use crate::codegen::missing_types;
use crate::hardware::device::Exec;
use crate::tag::lifted::{LaunchArgs, Lifted};
use crate::tag::registry::ArmEntry;
use crate::tag::target::Target;
use cubecl::prelude::*;
use cubecl_runtime::compiler::Compiler;
use cubecl_runtime::kernel::KernelDefinition;
use island_vocab::{Backend, Executor, Guard, Profile};
use std::sync::Arc;

/// A code generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codegen {
    /// CUDA C++ (CubeCL's C++ path, compiled by NVRTC at run time).
    CudaCpp,
    /// HIP C++.
    HipCpp,
    /// Metal Shading Language.
    Msl,
    /// SPIR-V, disassembled (Vulkan). Needs the `spirv` feature (`vulkan` brings it).
    Spirv,
    /// WGSL (WebGPU). Needs the `wgpu` feature.
    Wgsl,
}

impl Codegen {
    pub const ALL: [Codegen; 5] = [Codegen::CudaCpp, Codegen::HipCpp, Codegen::Msl, Codegen::Spirv, Codegen::Wgsl];

    /// The code generator of a backend.
    pub const fn of(backend: Backend) -> Codegen {
        match backend {
            Backend::Cuda => Codegen::CudaCpp,
            Backend::Hip => Codegen::HipCpp,
            Backend::Metal => Codegen::Msl,
            Backend::Vulkan => Codegen::Spirv,
            Backend::WebGpu => Codegen::Wgsl,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Codegen::CudaCpp => "CUDA C++",
            Codegen::HipCpp => "HIP C++",
            Codegen::Msl => "MSL",
            Codegen::Spirv => "SPIR-V",
            Codegen::Wgsl => "WGSL",
        }
    }

    /// The feature this build lacks for the generator, if it lacks one.
    pub const fn missing_feature(self) -> Option<&'static str> {
        match self {
            Codegen::Wgsl if !cfg!(feature = "wgpu") => Some("wgpu"),
            Codegen::Spirv if !cfg!(feature = "spirv") => Some("spirv"),
            _ => None,
        }
    }

    /// Whether this build can run the generator.
    pub const fn available(self) -> bool {
        self.missing_feature().is_none()
    }

    /// Compiles `kernel` as the device of `profile` would.
    pub fn compile(self, kernel: KernelDefinition, profile: &Profile) -> Result<String, LoweringError> {
        use cubecl_cpp::shared::{CompilationOptions, CppCompiler, CppSupportedFeatures};
        if let Some(feature) = self.missing_feature() {
            return Err(LoweringError::MissingFeature { generator: self.name(), feature });
        }
        let cpp = CompilationOptions {
            warp_size: profile.plane as usize,
            supports_features: CppSupportedFeatures { dp4a: profile.dp4a, ..Default::default() },
            ..Default::default()
        };
        let text = match self {
            Codegen::CudaCpp => {
                CppCompiler::<cubecl_cpp::target::Cuda>::default().compile(kernel, &cpp).map(|k| k.to_string())
            }
            Codegen::HipCpp => {
                CppCompiler::<cubecl_cpp::target::Hip>::default().compile(kernel, &cpp).map(|k| k.to_string())
            }
            Codegen::Msl => {
                CppCompiler::<cubecl_cpp::target::Metal>::default().compile(kernel, &cpp).map(|k| k.to_string())
            }
            #[cfg(feature = "spirv")]
            Codegen::Spirv => {
                let mut options =
                    cubecl::codegen::WgpuCompilationOptions { supports_vulkan_compiler: true, ..Default::default() };
                options.vulkan.supports_dp4a = profile.dp4a;
                options.vulkan.max_spirv_version = (1, 6);
                options.vulkan.max_vector_size = 4;
                cubecl_spirv::SpirvCompiler.compile(kernel, &options).map(|k| k.to_string())
            }
            #[cfg(feature = "wgpu")]
            Codegen::Wgsl => {
                let options = cubecl::codegen::WgpuCompilationOptions::default();
                cubecl::wgpu::WgslCompiler.compile(kernel, &options).map(|k| k.to_string())
            }
            // `missing_feature` refused the generators this build lacks.
            #[cfg(not(feature = "spirv"))]
            Codegen::Spirv => unreachable!("the SPIR-V generator is not built"),
            #[cfg(not(feature = "wgpu"))]
            Codegen::Wgsl => unreachable!("the WGSL generator is not built"),
        };
        text.map_err(|e| LoweringError::Generator(e.to_string()))
    }
}

/// Why a kernel could not be lowered, or a lowering check failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoweringError {
    #[error("the {generator} generator needs the `{feature}` feature")]
    MissingFeature { generator: &'static str, feature: &'static str },
    /// The code generator's own error.
    #[error("{0}")]
    Generator(String),
    #[error("{profile} does not select arm `{arm}` of {island} (another arm, or `default`, is taken there)")]
    NotSelected { profile: String, arm: String, island: &'static str },
    #[error("{0} has no proof signature, so it cannot be compiled on its own")]
    NoProofSignature(String),
    #[error("not a device islands has arms for")]
    NotADevice,
    /// A lowering check of the table (an intrinsic's row, or an arm's instructions) failed.
    #[error("{0}")]
    Check(String),
}

/// The properties of a reference device of `profile`: what kernel expansion consults (types,
/// plane width, cooperative-matrix shapes).
pub fn properties(profile: &Profile) -> DeviceProperties {
    use cubecl::ir::{DeviceIdentity, HardwareProperties, MemoryDeviceProperties};
    let hardware = HardwareProperties {
        load_width: 128,
        vector_register_count: None,
        plane_size_min: profile.plane,
        plane_size_max: profile.plane,
        max_bindings: 32,
        max_shared_memory_size: 48 * 1024,
        max_cube_count: (65535, 65535, 65535),
        max_units_per_cube: 1024,
        max_cube_dim: (1024, 1024, 64),
        num_streaming_multiprocessors: None,
        num_cpu_cores: None,
        last_level_cache_size: None,
        num_tensor_cores: None,
        min_tensor_cores_dim: if profile.mma.is_empty() { None } else { Some(8) },
        max_vector_size: 16,
        cube_mma_reserved_shared_memory: 0,
    };
    let mut props = DeviceProperties::new(
        Default::default(),
        MemoryDeviceProperties::new(1 << 30, 256),
        hardware,
        cubecl_common::profile::TimingMethod::System,
        DeviceIdentity {
            name: profile.name.to_string(),
            fingerprint: format!("islands-reference-{}", profile.backend),
            physical: None,
        },
    );
    cubecl_cpp::register_supported_types(&mut props);
    props.features.plane.insert(cubecl::features::Plane::Ops);
    props.features.plane.insert(cubecl::features::Plane::Sync);
    for m in profile.mma {
        props.features.matmul.cmma.insert(cubecl::features::MmaConfig {
            a_type: crate::hardware::device::elem_type(m.a),
            b_type: crate::hardware::device::elem_type(m.b),
            cd_type: crate::hardware::device::elem_type(m.acc),
            m: m.m,
            n: m.n,
            k: m.k,
        });
    }
    props
}

/// Which arm to lower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The entry's arm, selected by `profile` and lowered natively.
    Arm,
    /// `default`.
    Default,
    /// The entry's arm, selected by `profile` and expanded as the CPU runtime runs it: each
    /// intrinsic's emulation of the profile's semantics (what a CPU proof compares).
    Emulated,
}

/// The source `entry`'s island compiles to on `profile`'s backend, with its arm or `default`
/// selected. `host` lends buffers to describe the kernel's arguments (nothing runs).
pub fn source(
    entry: &ArmEntry,
    lifted: &'static Lifted,
    profile: &Profile,
    which: Which,
    host: &Client,
) -> Result<String, LoweringError> {
    let target = target(entry, profile, which)?;
    compile(lifted, target, Arc::new(properties(profile)), profile, Codegen::of(profile.backend), host)
}

/// CubeCL's printed IR of `entry`'s island expanded for `profile`, with its arm or `default`
/// selected: what the code generators start from, types included.
pub fn ir(
    entry: &ArmEntry,
    lifted: &'static Lifted,
    profile: &Profile,
    which: Which,
    host: &Client,
) -> Result<String, LoweringError> {
    let target = target(entry, profile, which)?;
    let definition = define(lifted, target, Arc::new(properties(profile)), host)
        .map_err(|e| LoweringError::Generator(e.to_string()))?;
    Ok(definition.body.to_string())
}

/// The tag that selects `which` of `entry`'s island on `profile`.
fn target(entry: &ArmEntry, profile: &Profile, which: Which) -> Result<Target, LoweringError> {
    // The source of an arm is compiled with a tag that selects it: with several arms for one
    // backend (`cuda if sm >= 90 => …, cuda => …`) another profile's tag compiles another arm.
    if which != Which::Default && entry.site.selected_arm(profile) != Some(entry.arm) {
        return Err(LoweringError::NotSelected {
            profile: profile.to_string(),
            arm: entry.label().into_owned(),
            island: entry.site.id,
        });
    }
    let exec = Exec { executor: Executor::Device(profile.backend), plane: profile.plane };
    Ok(match which {
        Which::Arm => Target::from_parts(Some(*profile), exec).only(entry.site.id),
        Which::Default => Target::from_parts(None, exec),
        Which::Emulated => {
            Target::from_parts(Some(*profile), Exec { executor: Executor::Cpu, plane: 1 }).only(entry.site.id)
        }
    })
}

/// The source CubeCL generates for `lifted` with `target` on the device behind `device`, with
/// that device's own properties (what its runtime compiles, before the driver's compiler).
pub fn device_source(lifted: &'static Lifted, target: Target, device: &Client) -> Result<String, LoweringError> {
    let profile = crate::hardware::device::profile(device).ok_or(LoweringError::NotADevice)?;
    compile(lifted, target, device.properties_shared(), &profile, Codegen::of(profile.backend), device)
}

/// Why `lifted` must not run on `client` with `target`, if it must not.
///
/// A kernel is not launched whose inputs or value are of a type the runtime reports no support
/// for (bf16 on a Vulkan driver without `VK_KHR_shader_bfloat16`): a driver may reject its
/// shader, and lavapipe then loses the device for every later launch. Nor one that uses a type
/// its backend's language lacks (`crate::codegen::missing_types`: binary64 on WGSL).
pub fn launch_hazard(lifted: &'static Lifted, target: Target, client: &Client) -> Option<String> {
    let kinds = lifted.params.iter().map(|p| p.kind).chain(lifted.output);
    if let Some(kind) = kinds.into_iter().find(|k| !client.properties().supports_type(k.elem_type())) {
        return Some(format!(
            "{NOT_LAUNCHED}the kernel reads or writes {} values, which `{}` reports no support for",
            kind.name(),
            crate::hardware::device::runtime_name(client)
        ));
    }
    if let Some(backend) = crate::hardware::device::Device::of(client).exec.executor.backend()
        && !missing_types::lacked(backend).is_empty()
    {
        let ir = define(lifted, target, client.properties_shared(), client)
            .map(|d| d.body.to_string())
            .map_err(|e| e.to_string());
        match ir.map(|ir| missing_types::used(backend, &ir)) {
            Ok(used) if used.is_empty() => {}
            Ok(used) => {
                return Some(format!(
                    "{NOT_LAUNCHED}the kernel uses {}, which {} lacks",
                    used.join(", "),
                    Codegen::of(backend).name()
                ));
            }
            Err(e) => return Some(format!("{NOT_LAUNCHED}the kernel does not expand: {e}")),
        }
    }
    None
}

/// How every reason [`launch_hazard`] gives begins.
pub const NOT_LAUNCHED: &str = "not launched: ";

/// Whether targets `a` and `b` expand `lifted` to the same program on `client`'s runtime (its
/// properties, compared as CUDA C++ text): then running both compares a program with itself.
pub fn same_program(lifted: &'static Lifted, a: Target, b: Target, client: &Client) -> Result<bool, LoweringError> {
    let profile = a.arms().or(b.arms()).copied().unwrap_or(Profile::references(Backend::Cuda)[0]);
    // Kernel names hash the tag, which always differs between the two: compare the code alone.
    let text = |t: Target| {
        compile(lifted, t, client.properties_shared(), &profile, Codegen::CudaCpp, client)
            .map(|c| crate::values::canonical::canonical(&c))
    };
    Ok(text(a)? == text(b)?)
}

fn compile(
    lifted: &'static Lifted,
    target: Target,
    device: Arc<DeviceProperties>,
    profile: &Profile,
    codegen: Codegen,
    host: &Client,
) -> Result<String, LoweringError> {
    codegen.compile(define(lifted, target, device, host).map_err(|e| LoweringError::Generator(e.to_string()))?, profile)
}

/// `lifted` expanded with `target` for a device of `device`'s properties (`host` lends
/// buffers to describe the arguments; nothing runs).
pub fn define(
    lifted: &'static Lifted,
    target: Target,
    device: Arc<DeviceProperties>,
    host: &Client,
) -> crate::tag::lifted::Definition {
    let cubes = 1;
    let lanes = lifted.cube_dim as usize;
    let mut buffers: Vec<(cubecl::server::Handle, usize)> = lifted
        .params
        .iter()
        .map(|p| {
            let n = p.shape.per_cube(lanes);
            (host.empty(n * p.value_size()), n)
        })
        .collect();
    if let Some(size) = lifted.output_value_size() {
        buffers.push((host.empty(lanes * size), lanes));
    }
    if lifted.dont_care.is_some() {
        buffers.push((host.empty(lanes * 4), lanes));
    }
    let args = LaunchArgs { client: host, cubes, cube_dim: lifted.cube_dim, buffers, target };
    (lifted.define)(&args, device, Arc::new(Default::default()))
}

/// A reference profile of `backend` that selects `entry`'s arm and meets `requires`.
fn profile_for(entry: &ArmEntry, backend: Backend, requires: Guard) -> Option<Profile> {
    Profile::references(backend)
        .into_iter()
        .find(|p| entry.site.selected_arm(p) == Some(entry.arm) && requires.holds(p))
}

/// The arm's and `default`'s sources for `profile`.
fn both_sources(entry: &'static ArmEntry, profile: &Profile, host: &Client) -> Result<(String, String), LoweringError> {
    let crate::tag::lifted::ProofSpec::Lifted(lifted) = &entry.proof else {
        return Err(LoweringError::NoProofSignature(entry.name()));
    };
    Ok((source(entry, lifted, profile, Which::Arm, host)?, source(entry, lifted, profile, Which::Default, host)?))
}

/// One row of the intrinsic table: one of the intrinsic's check arms, compiled for the row's
/// backend, contains the row's instruction and that check's `default` does not. (An intrinsic
/// with several checks, one per element type say, may emit a different instruction in each.)
pub fn check_row(
    i: &'static crate::tag::intrinsic::Intrinsic,
    row: &'static crate::tag::intrinsic::Lowering,
    host: &Client,
) -> Result<(), LoweringError> {
    let entries: Vec<&'static ArmEntry> =
        i.check_arms().into_iter().filter(|e| e.spec().backends.contains(&row.backend)).collect();
    if entries.is_empty() {
        return Err(LoweringError::Check(format!(
            "{}: its check `{}` has no arm for {}",
            i.name, i.check_path, row.backend
        )));
    }
    let codegen = Codegen::of(row.backend).name();
    let mut failures = Vec::new();
    for entry in entries {
        let Some(profile) = profile_for(entry, row.backend, row.requires) else {
            failures.push(format!(
                "{}: no reference {} device meets the guard of `{}`",
                i.name,
                row.backend,
                entry.name()
            ));
            continue;
        };
        let (arm, default) = both_sources(entry, &profile, host)?;
        if !arm.contains(row.instruction) {
            failures.push(format!(
                "{} did not generate `{}` for {profile} ({codegen}) in `{}`; the arm compiled to:\n{}",
                i.name,
                row.instruction,
                entry.name(),
                excerpt(&arm)
            ));
        } else if default.contains(row.instruction) {
            failures.push(format!(
                "`{}` appears in the {codegen} of `{}`'s `default` too: the arm leaves a trace",
                row.instruction,
                entry.name()
            ));
        } else {
            return Ok(());
        }
    }
    Err(LoweringError::Check(failures.join("\n")))
}

/// A registered arm, compiled for one of its backends, emits at least one instruction of the
/// table for that backend that `default` does not; or, emitting none, it is a formulation:
/// `default` uses a type the backend's language lacks and the arm does not
/// (`crate::codegen::missing_types`).
pub fn check_arm(entry: &'static ArmEntry, backend: Backend, host: &Client) -> Result<(), LoweringError> {
    let Some(profile) = profile_for(entry, backend, Guard::NONE) else {
        return Err(LoweringError::Check(format!(
            "no reference {backend} device meets the guard `{}`",
            entry.spec().guard
        )));
    };
    let crate::tag::lifted::ProofSpec::Lifted(lifted) = &entry.proof else {
        return Err(LoweringError::NoProofSignature(entry.name()));
    };
    let codegen = Codegen::of(backend);
    // Types first: a generator may print a type its language lacks (WGSL's `f64`) or refuse it.
    let lacked = |which| ir(entry, lifted, &profile, which, host).map(|ir| missing_types::used(backend, &ir));
    let (arm_lacks, default_lacks) = (lacked(Which::Arm)?, lacked(Which::Default)?);
    if !arm_lacks.is_empty() {
        return Err(LoweringError::Check(format!(
            "the arm uses {arm_lacks:?}, which {} lacks: it cannot run on {backend}",
            codegen.name()
        )));
    }
    if !default_lacks.is_empty() {
        // A formulation: the arm is how the island runs where `default` cannot.
        return Ok(());
    }
    let (arm, default) = both_sources(entry, &profile, host)?;
    if arm == default {
        return Err(LoweringError::Check(format!(
            "the arm and `default` compile to the same {} source",
            codegen.name()
        )));
    }
    let table = crate::tag::intrinsic::instructions(backend);
    let emitted: Vec<&str> = table.iter().copied().filter(|p| arm.contains(p)).collect();
    if emitted.is_empty() {
        return Err(LoweringError::Check(format!(
            "the arm emits none of the table's {backend} instructions {table:?}, nor does `default` use a type {} \
             lacks (which an arm without intrinsics would stand in for); it compiled to:\n{}",
            codegen.name(),
            excerpt(&arm)
        )));
    }
    // The table holds every intrinsic of the backend, generic operators among them (`exact::div`
    // is ` / `): what the arm must show is an instruction `default` lacks, not that it shares none.
    if emitted.iter().all(|p| default.contains(p)) {
        return Err(LoweringError::Check(format!(
            "{emitted:?} also appear in `default`: the arm emits no instruction of the table that `default` does not"
        )));
    }
    Ok(())
}

/// How much of `entry`'s `default` is its arm's emulation under other names: the share of the
/// lines of the two programs (CUDA C++ of the lifted island with the arm emulated as the CPU
/// proof runs it, and with `default`; canonical, so names and numbering do not count) that
/// their longest common subsequence holds, from 0 (nothing shared) to 1 (the same program).
/// A CPU proof of an arm whose emulation and `default` are nearly the same program shows
/// little: what they share cancels out of the comparison.
pub fn shared_lines(
    entry: &ArmEntry,
    lifted: &'static Lifted,
    profile: &Profile,
    host: &Client,
) -> Result<f64, LoweringError> {
    let emulated = crate::values::canonical::canonical(&source(entry, lifted, profile, Which::Emulated, host)?);
    let default = crate::values::canonical::canonical(&source(entry, lifted, profile, Which::Default, host)?);
    let (a, b): (Vec<&str>, Vec<&str>) = (body_lines(&emulated), body_lines(&default));
    if a.is_empty() && b.is_empty() {
        return Ok(1.0);
    }
    // Longest common subsequence of the lines, one row at a time.
    let mut row = vec![0usize; b.len() + 1];
    for x in &a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y { diagonal + 1 } else { row[j + 1].max(row[j]) };
            diagonal = above;
        }
    }
    Ok(2.0 * row[b.len()] as f64 / (a.len() + b.len()) as f64)
}

/// The lines of a kernel's body: after the kernel's signature, blank lines and lone braces
/// left out (every kernel shares its prelude and its closing braces).
fn body_lines(code: &str) -> Vec<&str> {
    let start = code.find("void kernel").unwrap_or(0);
    code[start..].lines().map(str::trim).filter(|l| !l.is_empty() && *l != "{" && *l != "}" && *l != "};").collect()
}

fn excerpt(source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
