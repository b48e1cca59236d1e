//! Every example kernel that `islands conform` runs, on the device CI has, lavapipe, through
//! both of CubeCL's code generators for it: SPIR-V (`vulkan`) and WGSL (`webgpu`). The native
//! arms and `default` must be byte-equal to the CPU runtime's `default` and to the plain-Rust
//! reference. Kernels with shared memory run on lavapipe's SPIR-V since the patched
//! `cubecl-spirv` (`patches/README.md`); the RMSNorm and Q8_0 matvec examples, refused there
//! before, differed once launched (CubeCL's own `fma` is two roundings on lavapipe), so each
//! example is a test of its own. (This test binary spawns the CLI; it links no runtime.)

use std::process::{Command, Output};

/// `islands example NAME --runtime RUNTIME` at the given shape.
fn example(runtime: &str, name: &str, rows: usize, cols: usize, cpu_rows: usize) -> (Output, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_islands"));
    cmd.args(["example", name, "--runtime", runtime]);
    cmd.args(["--rows", &rows.to_string(), "--cols", &cols.to_string(), "--cpu-rows", &cpu_rows.to_string()]);
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        cmd.env("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    let out = cmd.output().expect("the islands binary runs");
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    (out, stdout, stderr)
}

/// Fails unless the example exits 0 and every comparison it prints (at least three) is
/// byte-equal.
fn equals_the_cpu(runtime: &str, name: &str, rows: usize, cols: usize, cpu_rows: usize) {
    let (out, stdout, stderr) = example(runtime, name, rows, cols, cpu_rows);
    let compared = stdout.lines().filter(|l| l.contains(": byte-equal (")).count();
    assert!(
        out.status.success() && compared >= 3 && !stdout.contains("DIFFERENT"),
        "islands example {name} --runtime {runtime}: status {:?}, {compared} comparisons byte-equal\n{stdout}\n{stderr}",
        out.status.code()
    );
}

#[test]
fn q8_matvec_on_vulkan_equals_the_cpu() {
    equals_the_cpu("vulkan", "q8-matvec", 256, 4096, 8);
}

#[test]
fn rmsnorm_on_vulkan_equals_the_cpu() {
    equals_the_cpu("vulkan", "rmsnorm", 256, 4096, 4);
}

#[test]
fn gemm_i8_on_vulkan_equals_the_cpu() {
    equals_the_cpu("vulkan", "gemm-i8", 256, 256, 16);
}

#[test]
fn gemm_i8_mma_on_vulkan_equals_the_cpu() {
    equals_the_cpu("vulkan", "gemm-i8-mma", 256, 512, 128);
}

#[test]
fn gemm_f16_on_vulkan_equals_the_cpu() {
    equals_the_cpu("vulkan", "gemm-f16", 256, 256, 16);
}

#[test]
fn q8_matvec_on_webgpu_equals_the_cpu() {
    equals_the_cpu("webgpu", "q8-matvec", 256, 4096, 8);
}

/// 32 rows: lavapipe compiles this WGSL for about 15 s whatever the shape.
#[test]
fn rmsnorm_on_webgpu_equals_the_cpu() {
    equals_the_cpu("webgpu", "rmsnorm", 32, 4096, 4);
}

#[test]
fn gemm_i8_mma_on_webgpu_equals_the_cpu() {
    equals_the_cpu("webgpu", "gemm-i8-mma", 256, 512, 128);
}

#[test]
fn gemm_f16_on_webgpu_equals_the_cpu() {
    equals_the_cpu("webgpu", "gemm-f16", 256, 256, 16);
}

/// WGSL has no 8-bit integers: the int8 GEMM, which reads i8 buffers, is refused before launch
/// with status 2 and the reason, not run into a wrong answer.
#[test]
fn gemm_i8_on_webgpu_is_refused_with_its_reason() {
    let (out, stdout, stderr) = example("webgpu", "gemm-i8", 256, 256, 16);
    assert!(
        out.status.code() == Some(2) && format!("{stdout}{stderr}").contains("reads i8 buffers"),
        "islands example gemm-i8 --runtime webgpu: status {:?}\n{stdout}\n{stderr}",
        out.status.code()
    );
}
