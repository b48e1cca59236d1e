//! The islands SDK: per-backend intrinsics inside portable CubeCL kernels, proven equal to a
//! normative `default` on the CPU.
//!
//! ```ignore
//! use cubecl::prelude::*;
//! use island_runtime::prelude::*;
//!
//! #[islands]
//! #[cube(launch)]
//! fn dot(a: &[i32], b: &[i32], out: &mut [i32]) {
//!     let i = ABSOLUTE_POS;
//!     out[i] = island! {
//!         proof(x: i32, y: i32) -> i32;
//!         cuda | vulkan if dp4a => island_intrinsics::dp4a::call(x, y, 0i32, target),
//!         default => island_intrinsics::portable::dot4_i8(x, y, 0i32),
//!     };
//! }
//! ```
//!
//! See `docs/` for the design, the proof model and how to package an intrinsic.

pub mod bench;
pub mod canonical;
pub mod conformance;
pub mod contract;
pub mod device;
pub mod divergence;
pub mod emulation;
pub mod evidence;
pub mod fingerprint;
pub mod gate;
pub mod hash;
pub mod intrinsic;
pub mod launch;
pub mod ledger;
pub mod lifted;
pub mod lowering;
pub mod machine_code;
pub mod policy;
pub mod proof;
pub mod readback;
pub mod registry;
pub mod report;
pub mod runtimes;
pub mod semantics;
pub mod target;
pub mod value;

/// The vocabulary ([`island_vocab`]): backends, element kinds, capabilities, profiles, sites.
pub use island_vocab::{self as vocab, backend, capability, elem, expect, mma, profile, site};
pub use island_vocab::{
    ArmSpec, Atom, Backend, CAPABILITIES, Capability, Cmp, Contraction, Elem, Executor, Expect, Guard, Mma, Profile,
    Semantics, Site,
};

pub use contract::Contract;
pub use fingerprint::Fingerprint;
pub use island_macros::{__expand_island, intrinsic, island, islands, sites_of};
pub use registry::ArmEntry;
pub use target::{Exec, Selection, Target};
pub use value::{ProofValue, ValueKind};

/// What kernels with islands need in scope.
pub mod prelude {
    pub use crate::{Target, island, islands};
    #[doc(hidden)]
    pub use island_macros::__expand_island;
}

/// Paths the macros expand to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use cubecl;
    pub use inventory;
    pub use std::sync::Arc;
}

#[cfg(test)]
mod layering {
    //! The modules of this crate form a hierarchy: no import cycles. Modules name each other as
    //! `crate::module::…` (never through the root's re-exports, which would hide an edge), and
    //! the vocabulary comes from `island_vocab`.

    use std::collections::BTreeMap;

    fn edges() -> BTreeMap<String, Vec<String>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let sources: BTreeMap<String, String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path();
                let name = path.file_stem()?.to_str()?.to_string();
                (path.extension()? == "rs" && name != "lib").then(|| (name, std::fs::read_to_string(&path).unwrap()))
            })
            .collect();
        let mut graph = BTreeMap::new();
        for (module, text) in &sources {
            let mut uses = Vec::new();
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                let mut rest = code;
                while let Some(at) = rest.find("crate::") {
                    let dollar = at > 0 && rest.as_bytes()[at - 1] == b'$';
                    let tail = &rest[at + "crate::".len()..];
                    rest = tail;
                    if dollar {
                        continue;
                    }
                    let word: String = tail.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    assert!(
                        word.chars().next().is_some_and(|c| c.is_ascii_lowercase()),
                        "{module}.rs:{}: `crate::{}` goes through the crate root; name the module (`crate::module::…`) or `island_vocab`",
                        n + 1,
                        tail.chars().take(24).collect::<String>()
                    );
                    if word != *module && sources.contains_key(&word) && !uses.contains(&word) {
                        uses.push(word);
                    }
                }
            }
            graph.insert(module.clone(), uses);
        }
        graph
    }

    #[test]
    fn modules_import_each_other_without_cycles() {
        let graph = edges();
        assert!(graph.len() > 10, "the sources were not found: {graph:?}");
        // Depth-first search; a module met again while on the stack closes a cycle.
        fn visit<'a>(
            m: &'a str,
            graph: &'a BTreeMap<String, Vec<String>>,
            stack: &mut Vec<&'a str>,
            done: &mut Vec<&'a str>,
        ) {
            if done.contains(&m) {
                return;
            }
            if let Some(at) = stack.iter().position(|s| *s == m) {
                panic!("import cycle: {} -> {m}", stack[at..].join(" -> "));
            }
            stack.push(m);
            for next in &graph[m] {
                visit(next, graph, stack, done);
            }
            stack.pop();
            done.push(m);
        }
        let mut done = Vec::new();
        for m in graph.keys() {
            visit(m, &graph, &mut Vec::new(), &mut done);
        }
    }
}
