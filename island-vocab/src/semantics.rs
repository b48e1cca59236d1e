//! How far a CPU proof of an intrinsic's native lowering carries: its semantic class.
//!
//! A proof runs an arm on the CPU with each intrinsic's emulation of the target's semantics and
//! compares it with `default`; device conformance shows the native lowering equals the
//! emulation on the devices that ran it. Whether that carries to a device nobody measured
//! depends on the instruction's specification:
//!
//! | class | what fixes the result | where an arm using it may run without a record |
//! |---|---|---|
//! | [`Semantics::Defined`] | the instruction's specification alone (integer arithmetic, bit moves, copies, IEEE-754 correctly rounded operations) | every device of the backend |
//! | [`Semantics::FloatDeviceDefined`] | the specification for integer operands; the device for float operands (reduction order, subnormal handling) | every device for integer operands; for float operands only a device with a passing record |
//! | [`Semantics::DeviceDefined`] | the device, whatever the operands (tensor-core float accumulation) | only a device with a passing record |
//! | [`Semantics::Synchronizing`] | the specification, *if* the program waits, fences and counts phases as it must: the CPU runs units in an order where a missing wait passes (async copies, barriers, non-coherent loads) | only a device with a passing record |
//!
//! An arm runs without a record only where every intrinsic it lowers natively is defined for its
//! operands and the arm's own code does no float arithmetic (island-runtime's
//! `codegen::float_arithmetic`).

use std::fmt;

/// The semantic class of an intrinsic (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Semantics {
    /// Fixed by the instruction's specification: a CPU proof carries to every device.
    Defined,
    /// Fixed for integer operands; for floating-point operands the device decides what is
    /// named here.
    FloatDeviceDefined(&'static str),
    /// The device decides what is named here, for every operand type.
    DeviceDefined(&'static str),
    /// Fixed by the specification for a program that synchronizes correctly; what is named here
    /// (a wait, a fence, a barrier's phase) is invisible to a CPU proof, whose units run in an
    /// order where a missing one passes, so only a device run shows it.
    Synchronizing(&'static str),
}

impl Semantics {
    /// What the device decides when the intrinsic runs on operands of these types (Rust type
    /// names: `f32`, `i32`, …), or `None` when the specification fixes the result.
    pub fn device_defined(self, operand_types: &[&str]) -> Option<&'static str> {
        match self {
            Semantics::Defined => None,
            Semantics::DeviceDefined(what) | Semantics::Synchronizing(what) => Some(what),
            Semantics::FloatDeviceDefined(what) => operand_types.iter().any(|t| is_float_type(t)).then_some(what),
        }
    }

    /// The keyword `#[intrinsic(semantics = …)]` takes.
    pub const fn keyword(self) -> &'static str {
        match self {
            Semantics::Defined => "defined",
            Semantics::FloatDeviceDefined(_) => "float_device_defined",
            Semantics::DeviceDefined(_) => "device_defined",
            Semantics::Synchronizing(_) => "synchronizing",
        }
    }
}

impl fmt::Display for Semantics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Semantics::Defined => f.write_str("defined"),
            Semantics::FloatDeviceDefined(what) => write!(f, "device-defined for float operands ({what})"),
            Semantics::DeviceDefined(what) => write!(f, "device-defined ({what})"),
            Semantics::Synchronizing(what) => write!(f, "synchronizing ({what}: a CPU proof cannot see it missing)"),
        }
    }
}

/// Whether a Rust type (as `std::any::type_name` prints it, or as written: `f32`,
/// `half::binary16::f16`, `Vector<f32, 4>`) names one of CubeCL's floating-point element types.
pub fn is_float_type(name: &str) -> bool {
    name.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|word| {
        matches!(word, "f16" | "bf16" | "f32" | "f64" | "flex32" | "tf32" | "e4m3" | "e5m2" | "ue8m0" | "e2m1")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_operands_make_a_float_device_defined_intrinsic_device_defined() {
        let s = Semantics::FloatDeviceDefined("order");
        assert_eq!(s.device_defined(&["f32"]), Some("order"));
        assert_eq!(s.device_defined(&["half::binary16::f16"]), Some("order"));
        assert_eq!(s.device_defined(&["i32"]), None);
        assert_eq!(s.device_defined(&["Vector<f32, 4>", "u32"]), Some("order"));
        assert_eq!(s.device_defined(&["Vector<i8, 4>", "buf32"]), None);
        assert_eq!(s.device_defined(&[]), None);
        assert_eq!(Semantics::Defined.device_defined(&["f32"]), None);
        assert_eq!(Semantics::DeviceDefined("acc").device_defined(&[]), Some("acc"));
        assert_eq!(Semantics::Synchronizing("a wait").device_defined(&["u32"]), Some("a wait"));
    }
}
