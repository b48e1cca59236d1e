//! Every example kernel that `islands conform` runs, on the Vulkan device CI has (lavapipe
//! through SPIR-V): the native arms and `default` byte-equal to the CPU runtime's `default` and
//! to the plain-Rust reference. Kernels with shared memory run on lavapipe since the patched
//! `cubecl-spirv` (`patches/README.md`); the RMSNorm and Q8_0 matvec examples, refused there
//! before, differed once launched (CubeCL's own `fma` is two roundings on lavapipe), so each
//! example is a test of its own. (This test binary spawns the CLI; it links no runtime.)

use std::process::Command;

/// `islands example NAME --runtime vulkan` at conformance's shape: fails unless it exits 0 and
/// every comparison it prints is byte-equal.
fn on_vulkan(name: &str, rows: usize, cols: usize, cpu_rows: usize) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_islands"));
    cmd.args(["example", name, "--runtime", "vulkan"]);
    cmd.args(["--rows", &rows.to_string(), "--cols", &cols.to_string(), "--cpu-rows", &cpu_rows.to_string()]);
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        cmd.env("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    let out = cmd.output().expect("the islands binary runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let compared = stdout.lines().filter(|l| l.contains(": byte-equal (")).count();
    assert!(
        out.status.success() && compared >= 3 && !stdout.contains("DIFFERENT"),
        "islands example {name} --runtime vulkan: status {:?}, {compared} comparisons byte-equal\n{stdout}\n{stderr}",
        out.status.code()
    );
}

#[test]
fn q8_matvec_on_vulkan_equals_the_cpu() {
    on_vulkan("q8-matvec", 256, 4096, 8);
}

#[test]
fn rmsnorm_on_vulkan_equals_the_cpu() {
    on_vulkan("rmsnorm", 256, 4096, 4);
}

#[test]
fn gemm_i8_on_vulkan_equals_the_cpu() {
    on_vulkan("gemm-i8", 256, 256, 16);
}

#[test]
fn gemm_i8_mma_on_vulkan_equals_the_cpu() {
    on_vulkan("gemm-i8-mma", 256, 512, 128);
}

#[test]
fn gemm_f16_on_vulkan_equals_the_cpu() {
    on_vulkan("gemm-f16", 256, 256, 16);
}
