//! The float arithmetic of an expanded kernel: every operation of CubeCL's IR that computes,
//! rounds or compares floating-point values (`math.f_add`, `math.fma`, `cmp.f_max`,
//! `plane.f_sum`, …), read from the kernel's printed IR.
//!
//! An arm's own float arithmetic outside its intrinsics (an epilogue's scale, the `v + shuffle`
//! of a partial sum) is decided by the device like a float intrinsic: whether subnormal operands
//! and results are flushed (NVIDIA's Vulkan driver flushes them in every float operation) and
//! whether a compiler contracts a product and a sum. So an arm whose expansion holds any is
//! classed as device-defined, and runs only where a record shows it exact
//! (`crate::launch::semantics`). Integer, bit, memory and control operations are not float
//! arithmetic; neither are float loads, stores and lane moves, which copy bits.

/// The dialect prefixes whose operations on a float type are arithmetic.
const FLOAT_DIALECTS: [&str; 5] = ["math.", "cmp.f_", "plane.", "vector.", "atomic.f_"];

/// Operations of those dialects that never compute a float value: integer arithmetic, tests of
/// a class, lane moves and votes.
const NOT_ARITHMETIC: [&str; 21] = [
    "math.i_",
    "math.s_",
    "math.u_",
    "math.saturating_",
    "math.dp4a",
    "math.is_nan",
    "math.is_inf",
    "plane.i_",
    "plane.s_",
    "plane.u_",
    "plane.exclusive_i_",
    "plane.inclusive_i_",
    "plane.shuffle",
    "plane.broadcast",
    "plane.all",
    "plane.any",
    "plane.ballot",
    "plane.elect",
    "plane.uniform_load",
    "plane.atomic_uniform_load",
    "vector.broadcast",
];

/// Vector operations that move values without computing.
const VECTOR_MOVES: [&str; 3] = ["vector.extract_dynamic", "vector.insert_dynamic", "vector.i_sum"];

/// The float types of CubeCL's IR as it prints them.
const FLOAT_TYPES: [&str; 14] = [
    "cube.f64",
    "cube.f32",
    "cube.tf32",
    "cube.flex32",
    "cube.f16",
    "cube.bf16",
    "cube.ue8m0",
    "cube.e5m2",
    "cube.e4m3",
    "cube.e3m2",
    "cube.e2m3",
    "cube.e2m1",
    "cube.c32",
    "cube.c64",
];

/// The name of the operation a printed IR line holds, if it holds one (`v17 = math.f_add (…)`
/// or `memory.store (…)`).
fn op_name(line: &str) -> Option<&str> {
    let rest = match line.split_once(" = ") {
        Some((lhs, rhs)) if is_value_name(lhs.trim()) => rhs,
        _ => line,
    };
    let name = rest.trim_start().split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).next()?;
    name.contains('.').then_some(name)
}

/// `v17`, `inv_return_flag_v0`: a value the line defines.
fn is_value_name(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether a printed IR line is float arithmetic: an operation of a float dialect that computes,
/// on a line that names a float type (integer `math.` operations print integer types only).
pub fn is_float_arithmetic(line: &str) -> bool {
    let Some(name) = op_name(line) else { return false };
    FLOAT_DIALECTS.iter().any(|d| name.starts_with(d))
        && !NOT_ARITHMETIC.iter().any(|n| name.starts_with(n))
        && !VECTOR_MOVES.contains(&name)
        && (name.contains("f_") || FLOAT_TYPES.iter().any(|t| mentions(line, t)))
}

/// Whether `line` names the type `ty` as a whole word (`cube.f32`, not `cube.f32x`).
fn mentions(line: &str, ty: &str) -> bool {
    line.match_indices(ty)
        .any(|(i, _)| line[i + ty.len()..].chars().next().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_')))
}

/// The distinct float-arithmetic operations of a printed kernel (`math.f_add`, …), in order of
/// first appearance.
pub fn float_ops(printed: &str) -> Vec<String> {
    let mut ops: Vec<String> = Vec::new();
    for line in printed.lines().filter(|l| is_float_arithmetic(l)) {
        if let Some(name) = op_name(line)
            && !ops.iter().any(|o| o == name)
        {
            ops.push(name.to_string());
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_operations_are_arithmetic_and_moves_and_integers_are_not() {
        // Lines as CubeCL 0.11 prints a kernel's IR (`Scope`'s `Display`).
        for line in [
            "        v17 = math.f_add (v14, v16) [] []: <(cube.f32 , cube.f32 ) -> (cube.f32 )>;",
            "v2 = math.fma (a, b, c) [] []: <(cube.f16 , cube.f16 , cube.f16 ) -> (cube.f16 )>;",
            "v9 = cmp.f_max (v1, v2) [] []: <(cube.f32 , cube.f32 ) -> (cube.f32 )>;",
            "v4 = plane.f_sum (v3) [] []: <(cube.f32 ) -> (cube.f32 )>;",
            "v4 = plane.inclusive_f_sum (v3) [] []: <(cube.f32 ) -> (cube.f32 )>;",
            "x = math.sqrt (y) [] []: <(cube.bf16 ) -> (cube.bf16 )>;",
            "x = vector.f_dot (a, b) [] []",
            "atomic.f_add (p, v) [] []: <(cube.ptr <cube.f32 , Global<0>>, cube.f32 ) -> ()>",
        ] {
            assert!(is_float_arithmetic(line), "{line}");
        }
        for line in [
            "v12 = math.i_add (v11, v9) [] []: <(cube.index , cube.index ) -> (cube.index )>;",
            "v7 = math.dp4a (v5, v6, v7) [] []: <(cube.i32 , cube.i32 , cube.i32 ) -> (cube.i32 )>;",
            "v16 = plane.shuffle_xor (v14, v15) [] []: <(cube.f32 , builtin.integer ui32) -> (cube.f32 )>;",
            "v1 = plane.broadcast (v0, k) [] []: <(cube.f32 , builtin.integer ui32) -> (cube.f32 )>;",
            "v1 = plane.i_sum (v0) [] []: <(cube.i32 ) -> (cube.i32 )>;",
            "v14 = memory.load (v13) [] []: <(cube.ptr <cube.f32 , Global<0>>) -> (cube.f32 )>;",
            "memory.store (v28, v23) [] []: <(cube.ptr <cube.f32 , Global<1>>, cube.f32 ) -> ()>",
            "v3 = math.sqrt (y) [] []: <(cube.f32x ) -> (cube.f32x )>;",
            "b = math.is_nan (x) [] []: <(cube.f32 ) -> (cube.bool )>;",
            "v7 = builtin.constant <cube.f32 1.5> : cube.f32 ;",
            "inv_return_flag_v0 = memory.declare_variable cube.bool  Local, align = 1, init = cube.bool true !0;",
            "  [sym_visibility: cube.sym_visibility Public, entry_point: cube.entrypoint_abi <cube_dim: (64, 1, 1)>]",
            "// math.f_add in a comment is no operation",
            "",
        ] {
            assert!(!is_float_arithmetic(line), "{line}");
        }
        let printed = "v1 = math.f_mul (a, b) [] []: <(cube.f32 , cube.f32 ) -> (cube.f32 )>;\n\
                       v2 = math.f_add (v1, c) [] []: <(cube.f32 , cube.f32 ) -> (cube.f32 )>;\n\
                       v3 = math.f_mul (v2, v2) [] []: <(cube.f32 , cube.f32 ) -> (cube.f32 )>;";
        assert_eq!(float_ops(printed), ["math.f_mul", "math.f_add"]);
    }
}
