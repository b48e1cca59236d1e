//! The interface between `#[islands]` and the runtime: how a lifted island (the standalone proof
//! kernel the macro generates for an island with a proof signature) describes its parameters,
//! its contract and its launchers.

use crate::tag::target::Target;
use crate::values::contract::Contract;
use crate::values::value::ValueKind;
use cubecl::prelude::*;
use cubecl::server::Handle;
use island_vocab::Profile;
use serde::Serialize;
use std::sync::Arc;

/// How an arm is proven.
#[derive(Debug)]
pub enum ProofSpec {
    /// Through the island's lifted proof kernel.
    Lifted(&'static Lifted),
    /// Not provable as written, and why (an island without a proof signature).
    Unprovable(&'static str),
}

/// The shape of one proof input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// One value per lane (`x: f32`).
    Lane,
    /// A slice of this many values per cube (`tile: &[i8; 256]`).
    Cube(u32),
    /// A tensor map per cube over that cube's slice of input `of` (`map: tensor_map(src, TILE)`):
    /// [`crate::values::tensor_map::MAP_WORDS`] `u32` words, encoded for the device that runs it.
    TensorMap { of: &'static str, tile: crate::values::tensor_map::TmaTile },
}

impl Shape {
    /// Values per cube (`lanes` of them for a per-lane input).
    pub fn per_cube(self, lanes: usize) -> usize {
        match self {
            Shape::Lane => lanes,
            Shape::Cube(n) => n as usize,
            Shape::TensorMap { .. } => crate::values::tensor_map::MAP_WORDS as usize,
        }
    }
}

/// One parameter of a lifted island.
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    /// The scalar type; a vector parameter holds `width` of them per value.
    pub kind: ValueKind,
    pub width: usize,
    pub shape: Shape,
    /// `&mut [T; N]`: written by the island, compared after the run.
    pub mutable: bool,
}

impl Param {
    /// Bytes per value: the scalar's size times the scalars per value.
    pub fn value_size(&self) -> usize {
        self.kind.size() * self.width
    }
}

/// A lifted island: its parameters, its value, its launch shape and its launcher.
#[derive(Debug)]
pub struct Lifted {
    pub params: &'static [Param],
    /// The per-lane value of the island, if it has one.
    pub output: Option<ValueKind>,
    /// Scalars per output value (1 unless the island returns a vector).
    pub output_width: usize,
    /// Units per cube. Plane emulation needs whole planes: a multiple of the widest plane.
    pub cube_dim: u32,
    /// Lanes per run the island asks for at least (0: as many as its groups need).
    pub lanes: u32,
    /// How the arm's result must relate to `default`'s.
    pub contract: Contract,
    /// For a tolerance contract: the profiles on which the arm is held to bit equality instead,
    /// because its intrinsics emulate a measured model of that hardware's arithmetic; the
    /// function names the model ([`Lifted::contract_for`]).
    pub exact_where: Option<fn(&Profile) -> Option<&'static str>>,
    /// The lanes whose value the island leaves undefined (`dont_care = …`), if it declares any.
    pub dont_care: Option<DontCare>,
    /// Launches the lifted kernel.
    pub launch: fn(&LaunchArgs<'_>),
    /// Expands the lifted kernel for a device described by its properties, without one.
    pub define: fn(&LaunchArgs<'_>, Arc<DeviceProperties>, Arc<TargetProperties>) -> Definition,
}

/// An island's don't-care lanes: those where `condition` holds, evaluated by the lifted kernel
/// on each lane's proof inputs and written to a mask beside the value. Comparisons skip the value
/// of those lanes; a taint run replaces their other inputs and requires every other lane's value
/// unchanged, so neither side may read an undefined lane into a defined one.
#[derive(Debug)]
pub struct DontCare {
    /// The condition as written.
    pub condition: &'static str,
    /// The proof inputs the condition reads: a taint run leaves them alone.
    pub inputs: &'static [&'static str],
}

impl Lifted {
    /// The contract under `profile`: bit equality where [`Lifted::exact_where`] names a measured
    /// model of the profile's arithmetic, the declared contract elsewhere.
    pub fn contract_for(&self, profile: &Profile) -> Contract {
        match self.exact_where.and_then(|modelled| modelled(profile)) {
            Some(model) => Contract::Modelled { model },
            None => self.contract,
        }
    }

    /// Bytes per output value, if the island has one.
    pub fn output_value_size(&self) -> Option<usize> {
        self.output.map(|kind| kind.size() * self.output_width)
    }

    /// The buffer of the don't-care mask (one `u32` a lane), after the parameters and the value.
    pub fn mask_buffer(&self) -> Option<usize> {
        self.dont_care.as_ref().map(|_| self.params.len() + usize::from(self.output.is_some()))
    }
}

/// A kernel definition, or why its expansion failed (the panic it raised).
pub type Definition = Result<cubecl_runtime::kernel::KernelDefinition, cubecl_runtime::compiler::CompilationError>;

/// Expands a kernel (the generated `define` of a lifted island calls this).
pub fn define<K: cubecl_runtime::kernel::CubeKernel>(kernel: &K) -> Definition {
    cubecl_runtime::kernel::define_kernel(kernel)
}

/// What a generated launcher gets.
pub struct LaunchArgs<'a> {
    pub client: &'a Client,
    pub cubes: u32,
    pub cube_dim: u32,
    /// One buffer per parameter, then the output buffer (if any), then the don't-care mask (if
    /// any).
    pub buffers: Vec<(Handle, usize)>,
    pub target: Target,
}

impl LaunchArgs<'_> {
    pub fn cube_count(&self) -> CubeCount {
        CubeCount::Static(self.cubes, 1, 1)
    }

    pub fn cube_dim(&self) -> CubeDim {
        CubeDim::new_1d(self.cube_dim)
    }

    /// Buffer `i` as a kernel argument.
    pub fn buffer(&self, i: usize) -> BufferArg {
        let (handle, len) = &self.buffers[i];
        // SAFETY: the handle was allocated by `prove` with exactly `len` elements of the type
        // the lifted kernel declares for this parameter.
        unsafe { BufferArg::from_raw_parts(handle.clone(), *len) }
    }

    pub fn target(&self) -> Target {
        self.target
    }
}
