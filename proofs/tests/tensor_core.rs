//! The tensor-core model ([`FusedDot`]) checked without a device: its CubeCL emulation (what
//! the CPU proofs run, for f16 and bf16) and the portable bf16 step against the plain-Rust model
//! on every class of the adversarial tile set;
//! both, and the portable definition `default`s use, against outputs an H200 computed (`proofs/data/`, written by `islands tensor-core
//! --sample`); a fixture model with one detail wrong must disagree with the device; and
//! directed vectors for each rule of the model.

use cubecl::prelude::*;
use island_intrinsics::portable;
use island_intrinsics::tensor_core::emulation::fused_dot_of;
use island_intrinsics::tensor_core::{Format, FusedDot, cases, tiles};
use island_runtime::{Backend, Profile, Target};

/// `portable::tile_f16_fused` on every tile: cube `t` computes tile `t`.
#[cube(launch)]
fn portable_tiles(a: &[half::f16], b: &[half::f16], c: &mut [f32]) {
    let base = CUBE_POS * 256;
    portable::tile_f16_fused(&a[base..], 16u32, &b[base..], 16u32, &mut c[base..], 16u32, 1u32);
}
/// One bf16 tile per cube through the CubeCL emulation of `model` (what the bf16 `wgmma`'s
/// emulation runs per `k` step): unit `u` computes outputs `8u … 8u + 7` of tile `CUBE_POS`.
#[cube(launch)]
fn emulated_bf16_tiles(a: &[half::bf16], b: &[half::bf16], c: &mut [f32], #[comptime] model: FusedDot) {
    let base = CUBE_POS as u32 * 256;
    for j in 0..8u32 {
        let e = UNIT_POS * 8 + j;
        let (row, col) = (e / 16, e % 16);
        c[(base + e) as usize] = fused_dot_of::<half::bf16>(
            a,
            base + row * 16,
            b,
            base + col,
            16u32,
            c[(base + e) as usize],
            Format::BF16,
            model,
        );
    }
}

/// The same through `portable::fused_step_bf16` (the `default` of the bf16 `wgmma` check).
#[cube(launch)]
fn portable_bf16_tiles(a: &[half::bf16], b: &[half::bf16], c: &mut [f32]) {
    let base = CUBE_POS as u32 * 256;
    for j in 0..8u32 {
        let e = UNIT_POS * 8 + j;
        let (row, col) = (e / 16, e % 16);
        c[(base + e) as usize] =
            portable::fused_step_bf16(a, base + row * 16, 1u32, b, base + col, 16u32, c[(base + e) as usize]);
    }
}

use libtest_mimic::{Failed, Trial};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("tensor_core::emulation_matches_the_plain_model", emulation_matches_model),
        Trial::test("tensor_core::bf16_emulation_and_portable_match_the_plain_model", bf16_matches_model),
        Trial::test("tensor_core::model_reproduces_h200_outputs", h200_outputs),
        Trial::test("tensor_core::directed_vectors", directed),
        Trial::test("tensor_core::bf16_edge_vectors", bf16_edge_vectors),
    ]
    .into_iter()
    .map(|t| t.with_kind("tensor-core"))
    .collect()
}

/// Tiles per class checked on the CPU runtime.
const PER_CLASS: usize = 32;

/// Sample files and the tiles they hold (the first tiles of the set, every class in turn).
const SAMPLES: &[(Format, &str)] = &[
    (Format::F16, concat!(env!("CARGO_MANIFEST_DIR"), "/data/hmma-f16-sm90.bin")),
    (Format::BF16, concat!(env!("CARGO_MANIFEST_DIR"), "/data/hmma-bf16-sm90.bin")),
];

struct Inputs {
    a: Vec<u16>,
    b: Vec<u16>,
    c: Vec<u32>,
}

fn inputs(format: Format, n: usize) -> Inputs {
    let mut i = Inputs { a: vec![], b: vec![], c: vec![] };
    for t in 0..n {
        let tile = cases::tile(format, (t / cases::CLASSES.len()) as u64, t % cases::CLASSES.len());
        i.a.extend(tile.a);
        i.b.extend(tile.b);
        i.c.extend(tile.c);
    }
    i
}

fn plain(model: FusedDot, format: Format, i: &Inputs) -> Vec<u32> {
    let mut out = i.c.clone();
    for t in 0..i.c.len() / 256 {
        let r = t * 256..(t + 1) * 256;
        model.tile(format, &i.a[r.clone()], &i.b[r.clone()], 16, &mut out[r]);
    }
    out
}

/// The tiles as kernel arguments (a, b, c) and the handle of c, which the kernel overwrites.
fn buffers(client: &Client, i: &Inputs) -> ((BufferArg, BufferArg, BufferArg), cubecl::server::Handle) {
    let n = i.c.len();
    let bytes16 = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let ah = client.create_from_slice(&bytes16(&i.a));
    let bh = client.create_from_slice(&bytes16(&i.b));
    let ch = client.create_from_slice(u32::as_bytes(&i.c));
    // SAFETY: the handles hold n values of the kernels' types.
    let args = unsafe {
        (BufferArg::from_raw_parts(ah, n), BufferArg::from_raw_parts(bh, n), BufferArg::from_raw_parts(ch.clone(), n))
    };
    (args, ch)
}

/// The tiles through `portable::tile_f16_fused` (the `default` of the f16 tile islands).
fn portable_run(client: &Client, i: &Inputs) -> Result<Vec<u32>, Failed> {
    let ((a, b, c), out) = buffers(client, i);
    portable_tiles::launch(client, CubeCount::Static((i.c.len() / 256) as u32, 1, 1), CubeDim::new_1d(32), a, b, c);
    Ok(u32::from_bytes(&island_runtime::readback::read(client, out)?).to_vec())
}

/// The tiles through the CubeCL emulation of `model`, as the CPU proofs of sm_90 arms run it.
fn emulated(client: &Client, model: FusedDot, i: &Inputs) -> Result<Vec<u32>, Failed> {
    let target = Target::forced(Profile::references(Backend::Cuda)[0], client);
    let ((a, b, c), out) = buffers(client, i);
    tiles::tiles_f16::launch(
        client,
        CubeCount::Static((i.c.len() / 256) as u32, 1, 1),
        CubeDim::new_1d(32),
        a,
        b,
        c,
        Some(model),
        target,
    );
    Ok(u32::from_bytes(&island_runtime::readback::read(client, out)?).to_vec())
}

/// The tiles (bf16) through [`emulated_bf16_tiles`] with `model`, or through
/// [`portable_bf16_tiles`] when `model` is `None`.
fn bf16_run(client: &Client, model: Option<FusedDot>, i: &Inputs) -> Result<Vec<u32>, Failed> {
    let ((a, b, c), out) = buffers(client, i);
    let (count, dim) = (CubeCount::Static((i.c.len() / 256) as u32, 1, 1), CubeDim::new_1d(32));
    match model {
        Some(model) => emulated_bf16_tiles::launch(client, count, dim, a, b, c, model),
        None => portable_bf16_tiles::launch(client, count, dim, a, b, c),
    }
    Ok(u32::from_bytes(&island_runtime::readback::read(client, out)?).to_vec())
}

/// The bf16 emulation (right and fixture models) and the portable bf16 step against the plain
/// model on every class of the tile set, bf16's exponent extremes included.
fn bf16_matches_model() -> Result<(), Failed> {
    let client = proofs::cpu()?;
    let i = inputs(Format::BF16, PER_CLASS * cases::CLASSES.len());
    for model in [FusedDot::SM90, FusedDot::SM90_ROUNDING_AT_ALIGNMENT] {
        if let Some(d) = first_difference(
            &format!("bf16 {model:?}: CubeCL emulation vs plain Rust"),
            &bf16_run(&client, Some(model), &i)?,
            &plain(model, Format::BF16, &i),
        ) {
            return Err(d.into());
        }
    }
    if let Some(d) = first_difference(
        "bf16: portable::fused_step_bf16 vs plain Rust",
        &bf16_run(&client, None, &i)?,
        &plain(FusedDot::SM90, Format::BF16, &i),
    ) {
        return Err(d.into());
    }
    if plain(FusedDot::SM90, Format::BF16, &i) == plain(FusedDot::SM90_ROUNDING_AT_ALIGNMENT, Format::BF16, &i) {
        return Err("the bf16 tile set does not tell truncation from rounding at alignment".into());
    }
    Ok(())
}

/// The first output where `got` and `want` differ, described with its tile's class.
fn first_difference(what: &str, got: &[u32], want: &[u32]) -> Option<String> {
    let e = got.iter().zip(want).position(|(g, w)| g != w)?;
    let count = got.iter().zip(want).filter(|(g, w)| g != w).count();
    let t = e / 256;
    Some(format!(
        "{what}: {count} of {} outputs differ; first: tile {t} ({}), element {}: {:#010x} vs {:#010x}",
        want.len(),
        cases::CLASSES[t % cases::CLASSES.len()],
        e % 256,
        got[e],
        want[e]
    ))
}

fn emulation_matches_model() -> Result<(), Failed> {
    let client = proofs::cpu()?;
    let i = inputs(Format::F16, PER_CLASS * cases::CLASSES.len());
    for model in [FusedDot::SM90, FusedDot::SM90_ROUNDING_AT_ALIGNMENT] {
        if let Some(d) = first_difference(
            &format!("{model:?}: CubeCL emulation vs plain Rust"),
            &emulated(&client, model, &i)?,
            &plain(model, Format::F16, &i),
        ) {
            return Err(d.into());
        }
    }
    if plain(FusedDot::SM90, Format::F16, &i) == plain(FusedDot::SM90_ROUNDING_AT_ALIGNMENT, Format::F16, &i) {
        return Err("the tile set does not tell truncation from rounding at alignment".into());
    }
    Ok(())
}

fn h200_outputs() -> Result<(), Failed> {
    let client = proofs::cpu()?;
    for &(format, path) in SAMPLES {
        let bytes =
            std::fs::read(path).map_err(|e| format!("{path}: {e} (written by `islands tensor-core --sample`)"))?;
        let device = u32::from_bytes(&bytes).to_vec();
        let i = inputs(format, device.len() / 256);
        if device.len() < 256 * cases::CLASSES.len() {
            return Err(format!("{path}: {} outputs, fewer than one tile per class", device.len()).into());
        }
        if let Some(d) =
            first_difference(&format!("{format:?}: plain model vs H200"), &plain(FusedDot::SM90, format, &i), &device)
        {
            return Err(d.into());
        }
        if plain(FusedDot::SM90_ROUNDING_AT_ALIGNMENT, format, &i) == device {
            return Err(format!("{format:?}: the fixture model agrees with the H200 on every output").into());
        }
        if format == Format::BF16 {
            for (what, got) in [
                ("bf16: CubeCL emulation vs H200", bf16_run(&client, Some(FusedDot::SM90), &i)?),
                ("bf16: portable::fused_step_bf16 vs H200", bf16_run(&client, None, &i)?),
            ] {
                if let Some(d) = first_difference(what, &got, &device) {
                    return Err(d.into());
                }
            }
        }
        if format == Format::F16 {
            if let Some(d) =
                first_difference("f16: CubeCL emulation vs H200", &emulated(&client, FusedDot::SM90, &i)?, &device)
            {
                return Err(d.into());
            }
            if let Some(d) =
                first_difference("f16: portable::tile_f16_fused vs H200", &portable_run(&client, &i)?, &device)
            {
                return Err(d.into());
            }
        }
    }
    Ok(())
}

fn h(v: f32) -> u16 {
    half::f16::from_f32(v).to_bits()
}

fn dot(a0: f32, b0: f32, c: f32) -> f32 {
    let (mut a, mut b) = ([0u16; 16], [0u16; 16]);
    a[0] = h(a0);
    b[0] = h(b0);
    f32::from_bits(FusedDot::SM90.dot(Format::F16, &a, &b, c.to_bits()))
}

/// One vector per rule of the model.
fn directed() -> Result<(), Failed> {
    let p = |e: i32| 2f32.powi(e);
    let checks: Vec<(&str, f32, f32)> = vec![
        ("exact sums stay exact", dot(1.0, 1.0, 2.0), 3.0),
        // c = 2^20 fixes the window's last bit at 2^-5: 2^-5 is kept, but 2^20 + 2^-5 needs 26
        // bits and rounds toward zero.
        ("a product at the window's last bit is kept, then rounded toward zero", dot(p(-2), p(-3), p(20)), p(20)),
        ("below the window a product vanishes", dot(p(-3), p(-3), p(20)), p(20)),
        ("a negative product below the window does not borrow", dot(-p(-3), p(-3), p(20)), p(20)),
        ("a sum just below a power of two is rounded toward zero", dot(-p(-2), p(-3), p(20)), p(20) - p(-4)),
        ("exact cancellation is +0", dot(3.0, -3.0, 9.0), 0.0),
    ];
    for (rule, got, want) in checks {
        if got.to_bits() != want.to_bits() {
            return Err(format!("{rule}: got {got:e} ({:#010x}), want {want:e}", got.to_bits()).into());
        }
    }
    let m = FusedDot::SM90;
    let (mut a, b) = ([0x8000u16; 16], [0u16; 16]);
    let cases: Vec<(&str, u32, u32)> = vec![
        // IEEE addition would give −0; the H200 gives +0 (every such output of the tile set).
        ("every term −0 still gives +0", m.dot(Format::F16, &a, &b, 0x8000_0000), 0),
        ("one +0 term gives +0", m.dot(Format::F16, &a, &b, 0), 0),
        ("a subnormal accumulator is kept", m.dot(Format::F16, &[0; 16], &[0; 16], 5), 5),
        ("bf16 past f32's range is +inf", m.dot(Format::BF16, &[0x7f7f; 16], &[0x7f7f; 16], 0), 0x7f80_0000),
        ("∞ − ∞ is the canonical NaN", m.dot(Format::F16, &[0x7c00; 16], &[0x3c00; 16], 0xff80_0000), 0x7fff_ffff),
    ];
    a[3] = 0x7c00;
    let inf_zero = m.dot(Format::F16, &a, &b, 0);
    for (rule, got, want) in cases.into_iter().chain([("∞ · 0 is the canonical NaN", inf_zero, 0x7fff_ffff)]) {
        if got != want {
            return Err(format!("{rule}: got {got:#010x}, want {want:#010x}").into());
        }
    }
    Ok(())
}

/// Vector `t` of `k` 16 bf16 values through the emulation (read from global memory and from a
/// local array, as the `wgmma` emulation gathers them) and through the portable step.
#[cube(launch)]
fn bf16_vectors(a: &[half::bf16], b: &[half::bf16], c: &[f32], out: &mut [f32], #[comptime] model: FusedDot) {
    let t = ABSOLUTE_POS as u32;
    let n = c.len() as u32;
    let mut xa = Array::<half::bf16>::new(16usize);
    let mut xb = Array::<half::bf16>::new(16usize);
    for i in 0..16u32 {
        xa[i as usize] = a[(t * 16 + i) as usize];
        xb[i as usize] = b[(t * 16 + i) as usize];
    }
    out[t as usize] = fused_dot_of::<half::bf16>(a, t * 16, b, t * 16, 1u32, c[t as usize], Format::BF16, model);
    out[(n + t) as usize] =
        fused_dot_of::<half::bf16>(xa.as_slice(), 0u32, xb.as_slice(), 0u32, 1u32, c[t as usize], Format::BF16, model);
    out[(2 * n + t) as usize] = portable::fused_step_bf16(a, t * 16, 1u32, b, t * 16, 1u32, c[t as usize]);
}

/// Vectors of bf16 edge values (zeros, subnormals, the smallest normal, MAX, ±1) with f32 edge
/// accumulators: the emulation (both ways it is fed) and the portable step against the plain
/// model. The tile set's classes draw from ranges; these are the extremes themselves, whose
/// products reach 2^-266 and 2^255.
fn bf16_edge_vectors() -> Result<(), Failed> {
    let client = proofs::cpu()?;
    let finite = |kind: island_runtime::ValueKind| -> Vec<u64> {
        kind.edges().into_iter().filter(|&b| kind.is_finite(b)).collect()
    };
    let (e16, e32) = (finite(island_runtime::ValueKind::BF16), finite(island_runtime::ValueKind::F32));
    let mut rng = island_runtime::inputs::Rng::new(0xbf16);
    let n = 16384;
    let (mut a, mut b, mut c) = (vec![], vec![], vec![]);
    for _ in 0..n {
        for _ in 0..16 {
            a.push(e16[rng.below(e16.len() as u64) as usize] as u16);
            b.push(e16[rng.below(e16.len() as u64) as usize] as u16);
        }
        c.push(e32[rng.below(e32.len() as u64) as usize] as u32);
    }
    let bytes16 = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let out = client.create_from_slice(u32::as_bytes(&vec![0u32; 3 * n]));
    // SAFETY: the buffers hold 16·n, 16·n, n and 3·n values of the kernel's types.
    unsafe {
        bf16_vectors::launch(
            &client,
            CubeCount::Static((n / 32) as u32, 1, 1),
            CubeDim::new_1d(32),
            BufferArg::from_raw_parts(client.create_from_slice(&bytes16(&a)), 16 * n),
            BufferArg::from_raw_parts(client.create_from_slice(&bytes16(&b)), 16 * n),
            BufferArg::from_raw_parts(client.create_from_slice(u32::as_bytes(&c)), n),
            BufferArg::from_raw_parts(out.clone(), 3 * n),
            FusedDot::SM90,
        )
    };
    let got = u32::from_bytes(&island_runtime::readback::read(&client, out)?).to_vec();
    let want: Vec<u32> = (0..n)
        .map(|t| {
            let v = |x: &[u16]| -> [u16; 16] { x[16 * t..16 * t + 16].try_into().expect("16 values") };
            FusedDot::SM90.dot(Format::BF16, &v(&a), &v(&b), c[t])
        })
        .collect();
    for (i, what) in ["emulation, from global memory", "emulation, from a local array", "portable::fused_step_bf16"]
        .iter()
        .enumerate()
    {
        let got = &got[i * n..(i + 1) * n];
        if let Some(t) = (0..n).find(|&t| got[t] != want[t]) {
            return Err(format!(
                "bf16 edge vector {t}, {what}: {:#010x}, the plain model {:#010x}; a {:04x?}, b {:04x?}, c {:#010x}",
                got[t],
                want[t],
                &a[16 * t..16 * t + 16],
                &b[16 * t..16 * t + 16],
                c[t]
            )
            .into());
        }
    }
    Ok(())
}
