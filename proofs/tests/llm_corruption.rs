//! Bad model input is an error, never a panic or an allocation sized by the file: seeded
//! corruptions of a synthetic GGUF (every section, every kind of field), and of the real model
//! file's header, metadata and directory when it is present, each loaded under `catch_unwind`
//! with its largest allocation noted. Each corruption class must be refused at least once, and
//! a class whose every corruption breaks a rule of the format must be refused by the GGUF reader
//! itself every time: a removed check shows as an accepted corruption, or as one only the
//! engine's later checks caught.

use crate::allocation_cap;
use crate::synthetic_gguf::{self, Field, Synthetic};
use island_llm::gguf::Gguf;
use island_llm::tokenizer::Tok;
use island_llm::{Model, model_file};
use libtest_mimic::{Failed, Trial};
use std::collections::BTreeMap;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The seed of every corruption (and of the synthetic weights), printed by each trial.
const SEED: u64 = 0x15_1a4d_5eed;
/// Random cuts and flips per section of the synthetic file.
const PER_SECTION: usize = 256;
/// Corruptions of each of its fields (each round other values).
const ROUNDS: usize = 4;
/// Random corruptions per section of the real model file (each parses 1.8 MB of metadata).
const REAL_PER_SECTION: usize = 32;

pub fn trials() -> Vec<Trial> {
    let present = model_file::default_path().is_ok_and(|p| p.exists());
    vec![
        Trial::test("examples::llm::corrupted_gguf_files_are_errors", synthetic).with_kind("example"),
        Trial::test("examples::llm::corrupted_model_file_sections_are_errors", real)
            .with_kind("example")
            .with_ignored_flag(!present),
    ]
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn within(&mut self, r: &Range<usize>) -> usize {
        r.start + self.below((r.end - r.start) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// One change to the file's bytes.
enum Edit {
    /// Keep the first n bytes.
    Cut(usize),
    /// Write these bytes at an offset.
    Put(usize, Vec<u8>),
    /// XOR bytes at offsets.
    Xor(Vec<(usize, u8)>),
}

struct Corruption {
    class: &'static str,
    /// Every corruption of the class breaks a rule of the format: the reader must refuse each.
    must: bool,
    what: String,
    edit: Edit,
}

/// Runs `f` on the bytes with `edit` made, then undoes it (the real file is not copied).
fn edited<R>(bytes: &mut [u8], edit: &Edit, f: impl FnOnce(&[u8]) -> R) -> R {
    let (at, new): (Vec<usize>, Vec<u8>) = match edit {
        Edit::Cut(n) => return f(&bytes[..*n]),
        Edit::Put(at, b) => b.iter().enumerate().map(|(i, &v)| (at + i, v)).unzip(),
        Edit::Xor(flips) => flips.iter().map(|&(at, x)| (at, bytes[at] ^ x)).unzip(),
    };
    let old: Vec<u8> = at.iter().map(|&i| bytes[i]).collect();
    at.iter().zip(&new).for_each(|(&i, &v)| bytes[i] = v);
    let r = f(bytes);
    // In reverse, so that a byte flipped twice ends as it began.
    at.iter().zip(&old).rev().for_each(|(&i, &v)| bytes[i] = v);
    r
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// Cuts at every section boundary (and a byte either side) and at random points of each
/// section, and byte flips in each section.
fn cuts_and_flips(
    bytes: &[u8],
    sections: &[(&'static str, Range<usize>)],
    per_section: usize,
    rng: &mut Rng,
) -> Vec<Corruption> {
    let len = bytes.len();
    let mut out = Vec::new();
    let mut boundaries: Vec<usize> = sections
        .iter()
        .flat_map(|(_, r)| [r.start, r.end])
        .flat_map(|b| [b.saturating_sub(1), b, b + 1])
        .filter(|&b| b < len)
        .collect();
    boundaries.sort_unstable();
    boundaries.dedup();
    for b in boundaries {
        out.push(Corruption {
            class: "cut at a section boundary",
            must: true,
            what: format!("cut at {b}"),
            edit: Edit::Cut(b),
        });
    }
    for (name, r) in sections.iter().filter(|(_, r)| !r.is_empty()) {
        for _ in 0..per_section {
            let at = rng.within(r);
            out.push(Corruption {
                class: "cut inside a section",
                must: true,
                what: format!("cut at {at} ({name})"),
                edit: Edit::Cut(at),
            });
        }
        let class = match *name {
            "header" => "flips in the header",
            "metadata" => "flips in the metadata",
            "directory" => "flips in the directory",
            _ => "flips in the data",
        };
        for _ in 0..per_section {
            let flips: Vec<(usize, u8)> =
                (0..1 + rng.below(3)).map(|_| (rng.within(r), 1 + rng.below(255) as u8)).collect();
            out.push(Corruption { class, must: false, what: format!("xor {flips:?}"), edit: Edit::Xor(flips) });
        }
    }
    out
}

/// Counts in the header past what the file could hold.
fn huge_counts(bytes: &[u8], fields: &[(Field, usize)], rng: &mut Rng) -> Vec<Corruption> {
    let len = bytes.len() as u64;
    let mut out = Vec::new();
    for &(f, at) in fields.iter().filter(|(f, _)| matches!(f, Field::TensorCount | Field::KeyCount)) {
        for v in [u64::MAX, 1 << 63, 1 << 40, 1 << 32, len, len + rng.below(1 << 30)] {
            out.push(Corruption {
                class: "huge counts",
                must: true,
                what: format!("{f:?} at {at} = {v}"),
                edit: put64(at, v),
            });
        }
    }
    out
}

fn put64(at: usize, v: u64) -> Edit {
    Edit::Put(at, v.to_le_bytes().to_vec())
}

fn put32(at: usize, v: u32) -> Edit {
    Edit::Put(at, v.to_le_bytes().to_vec())
}

/// Every field-level corruption of the synthetic file.
fn field_corruptions(s: &Synthetic, rng: &mut Rng) -> Vec<Corruption> {
    let (b, len) = (&s.bytes, s.bytes.len() as u64);
    let data = &s.sections[3].1;
    let data_len = (data.end - data.start) as u64;
    let mut out = huge_counts(b, &s.fields, rng);
    let mut push =
        |class: &'static str, must: bool, what: String, edit: Edit| out.push(Corruption { class, must, what, edit });
    for &(f, at) in &s.fields {
        let what = |v: &dyn std::fmt::Debug| format!("{f:?} at {at} = {v:?}");
        match f {
            Field::StringLength | Field::ArrayLength => {
                let r = len + rng.below(1 << 20);
                let v = rng.pick(&[u64::MAX, 1 << 63, 1 << 32, len, r]);
                push("huge lengths", true, what(&v), put64(at, v));
            }
            Field::ValueType | Field::ElementType => {
                let v = 13 + rng.below(u32::MAX as u64 - 13) as u32;
                push("unknown value types", true, what(&v), put32(at, v));
                if f == Field::ElementType {
                    push("unknown value types", true, what(&"9 (nested array)"), put32(at, 9));
                }
                let v = rng.below(13) as u32;
                push("other value types", false, what(&v), put32(at, v));
            }
            Field::TensorType => {
                let r = 40 + rng.below(1 << 31) as u32;
                let v = rng.pick(&[4, 5, 31, 32, 33, 36, 37, 38, r, u32::MAX]);
                push("unknown tensor types", true, what(&v), put32(at, v));
                let v = rng.pick(&[0, 1, 2, 3, 6, 7, 8, 9, 10, 12, 14, 16, 20, 23, 24, 26, 28, 30, 39]);
                push("other tensor types", false, what(&v), put32(at, v));
            }
            Field::Offset => {
                let a = s.alignment;
                let r = data_len.div_ceil(a) * a + a * rng.below(4);
                let v = rng.pick(&[r, !(a - 1), 1 << 63, 1 << 40]);
                push("offsets past the data", true, what(&v), put64(at, v));
                let v = u64_at(b, at) + 1 + rng.below(a - 1);
                push("misaligned offsets", true, what(&v), put64(at, v));
            }
            Field::Dim { first, quantized } => {
                push("zero dimensions", true, what(&0), put64(at, 0));
                let v = rng.pick(&[u64::MAX, 1 << 63, 1 << 62, 1 << 37, (u64::MAX / 32) * 32]);
                push("overflowing dimensions", true, what(&v), put64(at, v));
                if first && quantized {
                    let d = u64_at(b, at);
                    let v = if rng.below(2) == 0 { d + 1 + rng.below(31) } else { d - 1 - rng.below(31) };
                    push("rows not whole blocks", true, what(&v), put64(at, v));
                }
            }
            Field::DimCount => {
                let r = 5 + rng.below(1 << 31) as u32;
                let v = rng.pick(&[0, 5, 8, u32::MAX, r]);
                push("dimension counts outside 1 to 4", true, what(&v), put32(at, v));
            }
            Field::Alignment => {
                for v in [0, 3, 24, 48, 1 + 2 * rng.below(1 << 30) as u32] {
                    push("alignments that are not powers of two", true, what(&v), put32(at, v));
                }
            }
            Field::Bool => {
                let v = 2 + rng.below(254) as u8;
                push("booleans other than 0 or 1", true, what(&v), Edit::Put(at, vec![v]));
            }
            Field::TensorCount | Field::KeyCount => {}
        }
    }
    // A key or tensor name written over another of its length.
    for (class, ranges) in [("duplicate keys", &s.keys), ("duplicate tensor names", &s.names)] {
        for (i, x) in ranges.iter().enumerate() {
            for y in &ranges[i + 1..] {
                if x.len() == y.len() && b[x.clone()] != b[y.clone()] && rng.below(4) == 0 {
                    push(class, true, format!("bytes {x:?} over {y:?}"), Edit::Put(y.start, b[x.clone()].to_vec()));
                }
            }
        }
    }
    out
}

/// Why a corrupted file was refused.
struct Refusal {
    /// By the GGUF reader (not only by the engine's checks after it).
    reader: bool,
    message: String,
}

/// How each class fared, and what went wrong.
#[derive(Default)]
struct Tally {
    /// Class → (refused, accepted, the first refusal's message).
    classes: BTreeMap<&'static str, (usize, usize, String)>,
    failures: Vec<String>,
    largest: usize,
}

impl Tally {
    /// Loads every corruption of `bytes` with `load` under `catch_unwind`, its largest
    /// allocation at most `cap`; a corruption that breaks a rule of the format must be refused
    /// by the reader itself.
    fn run(
        &mut self,
        bytes: &mut [u8],
        corruptions: &[Corruption],
        cap: usize,
        load: impl Fn(&[u8]) -> Result<(), Refusal>,
    ) {
        for c in corruptions {
            let (outcome, largest) =
                edited(bytes, &c.edit, |bad| allocation_cap::largest(|| catch_unwind(AssertUnwindSafe(|| load(bad)))));
            self.largest = self.largest.max(largest);
            let entry = self.classes.entry(c.class).or_default();
            match outcome {
                Err(_) => self.failures.push(format!("{}: {} panicked", c.class, c.what)),
                Ok(Err(r)) => {
                    entry.0 += 1;
                    if entry.2.is_empty() {
                        entry.2 = r.message.clone();
                    }
                    if c.must && !r.reader {
                        self.failures.push(format!("{}: {} passed the reader ({})", c.class, c.what, r.message));
                    }
                }
                Ok(Ok(())) => {
                    entry.1 += 1;
                    if c.must {
                        self.failures.push(format!("{}: {} was accepted", c.class, c.what));
                    }
                }
            }
            if largest > cap {
                self.failures.push(format!("{}: {} allocated {largest} bytes at once (cap {cap})", c.class, c.what));
            }
        }
    }

    /// Prints the table; fails on a panic, an allocation past the cap, an accepted corruption of
    /// a class that must be refused, or a class (but `exempt`) never refused.
    fn verdict(self, seed: u64, exempt: &[&str]) -> Result<(), Failed> {
        println!("seed {seed:#x}; largest allocation of a load {} bytes", self.largest);
        let mut failures = self.failures;
        for (class, (refused, accepted, first)) in &self.classes {
            println!("  {class:<40} refused {refused:>4}  accepted {accepted:>4}  e.g. {first}");
            if *refused == 0 && !exempt.contains(class) {
                failures.push(format!("{class}: no corruption was refused, so none reached an error path"));
            }
        }
        match failures.len() {
            0 => Ok(()),
            n => Err(format!("seed {seed:#x}: {n} failures:\n  {}", failures.join("\n  ")).into()),
        }
    }
}

/// The reader's parse alone.
fn parse(bytes: &[u8]) -> Result<(), Refusal> {
    Gguf::parse(bytes).map(drop).map_err(|e| Refusal { reader: true, message: e.to_string() })
}

/// The reader's parse, then the model and its tokenizer as `island-llm` loads them.
fn load(bytes: &[u8]) -> Result<(), Refusal> {
    parse(bytes)?;
    let model = Model::from_gguf(bytes);
    model.and_then(|m| Tok::new(&m.vocab)).map(drop).map_err(|e| Refusal { reader: false, message: e.to_string() })
}

fn synthetic() -> Result<(), Failed> {
    let mut s = synthetic_gguf::write(SEED);
    let (clean, baseline) = allocation_cap::largest(|| load(&s.bytes));
    clean.map_err(|e| format!("the synthetic model does not load: {}", e.message))?;
    let mut rng = Rng(SEED);
    let mut corruptions = cuts_and_flips(&s.bytes, &s.sections, PER_SECTION, &mut rng);
    for _ in 0..ROUNDS {
        corruptions.extend(field_corruptions(&s, &mut rng));
    }
    // A corrupted file sizes nothing past what the clean one did, or twice its length.
    let cap = baseline.max(2 * s.bytes.len());
    println!(
        "{} bytes, {} corruptions; the clean load's largest allocation {baseline} bytes",
        s.bytes.len(),
        corruptions.len()
    );
    let mut tally = Tally::default();
    tally.run(&mut s.bytes, &corruptions, cap, load);
    // Flips in the data change weights, which any bytes are.
    tally.verdict(SEED, &["flips in the data"])
}

/// The real file: its header, metadata and directory cut and flipped, and its counts made
/// huge, each parsed by the reader (the whole model's load takes seconds a time).
fn real() -> Result<(), Failed> {
    let path = model_file::default_path()?;
    let mut bytes = model_file::read(&path, true)?;
    let (clean, baseline) = allocation_cap::largest(|| Gguf::parse(&bytes).map(|g| g.sections));
    let s = clean?;
    let sections = [("header", s.header), ("metadata", s.metadata), ("directory", s.directory)];
    let mut rng = Rng(SEED);
    let mut corruptions = cuts_and_flips(&bytes, &sections, REAL_PER_SECTION, &mut rng);
    corruptions.extend(huge_counts(&bytes, &[(Field::TensorCount, 8), (Field::KeyCount, 16)], &mut rng));
    let cap = 2 * baseline;
    println!(
        "{}: {} corruptions; the clean parse's largest allocation {baseline} bytes",
        path.display(),
        corruptions.len()
    );
    let mut tally = Tally::default();
    tally.run(&mut bytes, &corruptions, cap, parse);
    tally.verdict(SEED, &[])
}
