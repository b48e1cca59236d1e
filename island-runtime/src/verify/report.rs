//! The report of a mismatch: where the outputs first differ, what the inputs were there, and how
//! to replay the run.

use crate::tag::lifted::{Lifted, Shape};
use crate::tag::registry::ArmEntry;
use crate::values::inputs::Group;
use crate::values::value::ValueKind;
use island_vocab::Profile;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The buffers a run compares: each mutable parameter, then the value (name, scalar type,
/// scalars per value, bytes); and, for an island with `dont_care`, which lanes' values are
/// undefined.
pub struct Outputs {
    pub buffers: Vec<(String, ValueKind, usize, Vec<u8>)>,
    pub dont_care: Option<Vec<bool>>,
}

impl Outputs {
    /// Whether value `index` of output `name` lies in a don't-care lane of `mask`.
    pub fn ignored(mask: Option<&[bool]>, name: &str, index: usize) -> bool {
        name == VALUE && mask.is_some_and(|m| m.get(index).copied().unwrap_or(false))
    }
}

/// The name reports give an island's value.
pub const VALUE: &str = "value";

/// How a report names one side of a comparison: `arm`, `default`, `native`, `emulation`, and
/// what ran it.
pub struct SideName {
    pub label: &'static str,
    pub description: String,
}

/// The outputs of a comparison: side `a`'s, side `b`'s, and `b` on the inputs' magnitudes
/// when the contract needs them; `dont_care`, the lanes whose value is not compared.
pub struct Compared<'a> {
    pub got: &'a Outputs,
    pub want: &'a Outputs,
    pub magnitudes: Option<&'a Outputs>,
    pub dont_care: Option<&'a [bool]>,
}

/// A comparison that found differences: the report of the first, and the cubes that differ,
/// counted by the groups their inputs hold (a measured divergence is scoped by them).
#[derive(Clone, Debug, Default)]
pub struct Difference {
    pub report: String,
    /// For each combination of groups (one per input) held by a differing cube, how many
    /// differing cubes hold it.
    pub cubes: BTreeMap<Vec<Group>, usize>,
}

impl Difference {
    /// The differing cubes in one line: `subnormals ×10; edge values ×2`.
    pub fn summary(&self) -> String {
        let held = |groups: &[Group]| {
            let mut names: Vec<&str> = groups.iter().map(|g| g.name()).collect();
            names.dedup();
            names.join(" + ")
        };
        self.cubes.iter().map(|(g, n)| format!("{} ×{n}", held(g))).collect::<Vec<_>>().join("; ")
    }
}

#[allow(clippy::too_many_arguments)]
pub fn compare(
    entry: &ArmEntry,
    lifted: &Lifted,
    profile: &Profile,
    contract: crate::values::contract::Contract,
    (a, b): (&SideName, &SideName),
    inputs: &[Vec<u8>],
    groups: &[Vec<Group>],
    outputs: Compared<'_>,
    (base_seed, seed): (u64, u64),
    lanes: usize,
) -> Option<Difference> {
    let mut found: Option<Difference> = None;
    let mut differing_cubes = std::collections::BTreeSet::new();
    for (o, ((name, kind, width, got), (_, _, _, want))) in
        outputs.got.buffers.iter().zip(&outputs.want.buffers).enumerate()
    {
        let n = got.len() / kind.size();
        let magnitude = |i: usize| outputs.magnitudes.map(|m| kind.bits_at(&m.buffers[o].3, i));
        let differing: Vec<usize> = (0..n)
            .filter(|&i| !Outputs::ignored(outputs.dont_care, name, i / width))
            .filter(|&i| !contract.accepts(*kind, kind.bits_at(got, i), kind.bits_at(want, i), magnitude(i)))
            .collect();
        differing_cubes.extend(differing.iter().map(|&i| cube_of(lifted, name, i / width)));
        let Some(&first_scalar) = differing.first() else { continue };
        if found.is_some() {
            continue;
        }
        // A vector output is compared scalar by scalar; the report names the value and, for a
        // vector, the component.
        let first = first_scalar / width;
        let component = if *width > 1 { format!(", component {}", first_scalar % width) } else { String::new() };
        let mut r = header(entry, profile, &format!("the {} differs from the {}", a.label, b.label));
        let _ = writeln!(r, "  executed on: {} = {}; {} = {}", a.label, a.description, b.label, b.description);
        let _ = writeln!(r, "  contract: {contract}");
        if let (Some(mask), Some(dc)) = (outputs.dont_care, &lifted.dont_care) {
            let _ = writeln!(
                r,
                "  don't-care lanes (`{}`): {} of {}, not compared",
                dc.condition,
                mask.iter().filter(|&&m| m).count(),
                mask.len()
            );
        }
        let cube = cube_of(lifted, name, first);
        let _ = writeln!(
            r,
            "  output `{name}` [{kind}{}]: first differing index {first} (cube {cube}, {}{component}), {} of {n} scalars differ",
            if *width > 1 { format!(" × {width}") } else { String::new() },
            position_of(lifted, name, first),
            differing.len()
        );
        let _ = writeln!(r, "    {:<9} = {}", a.label, kind.show(kind.bits_at(got, first_scalar)));
        let _ = writeln!(r, "    {:<9} = {}", b.label, kind.show(kind.bits_at(want, first_scalar)));
        if let Some(m) = magnitude(first_scalar) {
            let _ = writeln!(r, "    Σ|terms|  = {}", kind.show(m));
        }
        if let Some(g) = groups.get(cube) {
            let held: Vec<String> = lifted
                .params
                .iter()
                .zip(g)
                .filter(|(p, _)| !matches!(p.shape, Shape::TensorMap { .. }))
                .map(|(p, g)| format!("{}: {}", p.name, g.name()))
                .collect();
            let _ = writeln!(r, "    cube {cube} holds {}", held.join(", "));
        }
        if lifted.params.iter().all(|p| p.shape == Shape::Lane) && first < lanes {
            let shown: Vec<String> = lifted
                .params
                .iter()
                .zip(inputs)
                .map(|(p, bytes)| format!("{} = {}", p.name, p.kind.show(p.kind.bits_at(bytes, first * p.width))))
                .collect();
            let _ = writeln!(r, "    inputs at that lane: {}", shown.join(", "));
        }
        replay(&mut r, entry, (base_seed, seed));
        found = Some(Difference { report: r, cubes: BTreeMap::new() });
    }
    let mut difference = found?;
    for cube in differing_cubes {
        let held = groups.get(cube).cloned().unwrap_or_default();
        *difference.cubes.entry(held).or_default() += 1;
    }
    let _ = write!(difference.report, "\n  differing cubes by the groups they hold: {}", difference.summary());
    Some(difference)
}

/// The cube that value `index` of output `name` belongs to.
pub(crate) fn cube_of(lifted: &Lifted, name: &str, index: usize) -> usize {
    match lifted.params.iter().find(|p| p.name == name).map(|p| p.shape) {
        Some(Shape::Cube(n)) => index / n as usize,
        _ => index / lifted.cube_dim as usize,
    }
}

fn position_of(lifted: &Lifted, name: &str, index: usize) -> String {
    match lifted.params.iter().find(|p| p.name == name).map(|p| p.shape) {
        Some(Shape::Cube(n)) => format!("element {}", index % n as usize),
        _ => format!("lane {}", index % lifted.cube_dim as usize),
    }
}

/// A taint run that changed a defined lane: `side`'s value at `lane` depends on the inputs of a
/// don't-care lane, which the island declares undefined.
#[allow(clippy::too_many_arguments)]
pub fn taint(
    entry: &ArmEntry,
    lifted: &Lifted,
    profile: &Profile,
    side: &SideName,
    kind: ValueKind,
    (clean, tainted): (u64, u64),
    (lane, changed, mask): (usize, usize, &[bool]),
    (base_seed, seed): (u64, u64),
) -> Difference {
    let condition = lifted.dont_care.as_ref().map_or("", |d| d.condition);
    let mut r = header(entry, profile, &format!("the {} reads a don't-care lane into a defined one", side.label));
    let _ = writeln!(r, "  executed on: {} = {}", side.label, side.description);
    let _ = writeln!(
        r,
        "  don't-care lanes (`{condition}`): {} of {}; their other inputs replaced by arbitrary bits",
        mask.iter().filter(|&&m| m).count(),
        mask.len()
    );
    let _ = writeln!(
        r,
        "  output `{VALUE}` [{kind}]: first differing index {lane} (cube {}, lane {}), a defined lane; {changed} defined lanes changed",
        lane / lifted.cube_dim as usize,
        lane % lifted.cube_dim as usize,
    );
    let _ = writeln!(r, "    {:<9} = {}", "before", kind.show(clean));
    let _ = writeln!(r, "    {:<9} = {}", "tainted", kind.show(tainted));
    replay(&mut r, entry, (base_seed, seed));
    Difference { report: r, cubes: BTreeMap::new() }
}

/// A report's first lines: the island, the arm, what went wrong, where the arm is written and
/// whose semantics it ran with.
fn header(entry: &ArmEntry, profile: &Profile, what: &str) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "island `{}` arm `{}`: {what}", entry.site.id, entry.label());
    let _ = writeln!(r, "  arm written at {}", entry.location());
    let _ = writeln!(r, "  arm semantics: {profile}");
    r
}

/// A report's last line: the seed, and how to replay the run.
fn replay(r: &mut String, entry: &ArmEntry, (base_seed, seed): (u64, u64)) {
    let _ = write!(
        r,
        "  seed {base_seed:#x} (stream {seed:#x}): replay with ISLANDS_SEED={base_seed:#x} and the filter `{}`",
        entry.name()
    );
}
