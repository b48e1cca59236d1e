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

/// The scalars of one output (`name`, of `kind`, `width` scalars a value) that `contract` does
/// not accept between `got` and `want`: every scalar of the buffer is compared, but those of a
/// don't-care lane of the island's value.
pub fn differing_scalars(
    (name, kind, width): (&str, ValueKind, usize),
    (got, want): (&[u8], &[u8]),
    contract: crate::values::contract::Contract,
    magnitudes: Option<&[u8]>,
    dont_care: Option<&[bool]>,
) -> Vec<usize> {
    let n = got.len().max(want.len()) / kind.size();
    if got.len() != want.len() {
        // Buffers of different sizes differ from the first scalar one of them lacks.
        return (got.len().min(want.len()) / kind.size()..n).collect();
    }
    (0..n)
        .filter(|&i| !Outputs::ignored(dont_care, name, i / width))
        .filter(|&i| {
            !contract.accepts(kind, kind.bits_at(got, i), kind.bits_at(want, i), magnitudes.map(|m| kind.bits_at(m, i)))
        })
        .collect()
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
        let magnitudes = outputs.magnitudes.map(|m| m.buffers[o].3.as_slice());
        let differing = differing_scalars((name, *kind, *width), (got, want), contract, magnitudes, outputs.dont_care);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::contract::Contract;

    /// A buffer of `n` scalars of `kind`, each a distinct ordinary value (no NaN, whose payload
    /// the exact contract lets differ).
    fn buffer(kind: ValueKind, n: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        for i in 0..n {
            let v = 1.0 + i as f64 / 8.0;
            match kind {
                ValueKind::F32 => bytes.extend((v as f32).to_le_bytes()),
                ValueKind::F16 => bytes.extend(half::f16::from_f64(v).to_le_bytes()),
                ValueKind::BF16 => bytes.extend(half::bf16::from_f64(v).to_le_bytes()),
                ValueKind::F64 => bytes.extend(v.to_le_bytes()),
                other => bytes.extend(&(i as u64 * 3 + 1).to_le_bytes()[..other.size()]),
            }
        }
        bytes
    }

    /// Every scalar of every kind and vector width is compared: one bit changed in any one of
    /// them (its lowest, or its highest) is found at its index, and nowhere else; a don't-care
    /// lane hides exactly its own value's scalars.
    #[test]
    fn one_changed_bit_in_any_scalar_is_found_there() {
        let kinds = [
            ValueKind::I8,
            ValueKind::U8,
            ValueKind::I16,
            ValueKind::U16,
            ValueKind::I32,
            ValueKind::U32,
            ValueKind::I64,
            ValueKind::U64,
            ValueKind::F16,
            ValueKind::BF16,
            ValueKind::F32,
            ValueKind::F64,
        ];
        for kind in kinds {
            for width in [1, 4] {
                let n = 8 * width;
                let want = buffer(kind, n);
                assert!(
                    differing_scalars((VALUE, kind, width), (&want, &want), Contract::Exact, None, None).is_empty()
                );
                for i in 0..n {
                    for bit in [0, 8 * kind.size() - 1] {
                        let mut got = want.clone();
                        got[i * kind.size() + bit / 8] ^= 1 << (bit % 8);
                        let found = differing_scalars((VALUE, kind, width), (&got, &want), Contract::Exact, None, None);
                        assert_eq!(found, [i], "{kind:?} × {width}, scalar {i}, bit {bit}");
                        let mut mask = vec![false; n / width];
                        mask[i / width] = true;
                        let hidden =
                            differing_scalars((VALUE, kind, width), (&got, &want), Contract::Exact, None, Some(&mask));
                        assert!(hidden.is_empty(), "{kind:?} × {width}, scalar {i}: a don't-care lane");
                        // The mask applies to the island's value only, never to another output.
                        let other =
                            differing_scalars(("out", kind, width), (&got, &want), Contract::Exact, None, Some(&mask));
                        assert_eq!(other, [i], "{kind:?} × {width}, scalar {i}: another output");
                        mask[i / width] = false;
                        if let Some(j) = (0..n / width).find(|&j| j != i / width) {
                            mask[j] = true;
                        }
                        let shown =
                            differing_scalars((VALUE, kind, width), (&got, &want), Contract::Exact, None, Some(&mask));
                        assert_eq!(shown, [i], "{kind:?} × {width}, scalar {i}: another lane's mask");
                    }
                }
                let short = &want[..want.len() - kind.size()];
                assert_eq!(
                    differing_scalars((VALUE, kind, width), (short, &want), Contract::Exact, None, None),
                    [n - 1]
                );
            }
        }
    }
}
