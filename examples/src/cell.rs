//! The cells of these examples (`island_runtime::cell`): RMSNorm over f32 rows, whose twin is
//! [`crate::rmsnorm`] and whose incumbents are in [`crate::incumbents`].

use crate::rmsnorm;
use crate::testing::floats;
use cubecl::prelude::*;
use island_runtime::Target;
use island_runtime::cell::{Buffers, CellError, CellKey, Inputs, NamedShape, Op, Shape};
use island_runtime::inputs::Rng;

/// The RMSNorm cell's `eps` (SmolLM2's).
pub const EPS: f32 = 1e-5;

pub const RMSNORM_KEY: CellKey = CellKey { op: "rmsnorm", quant: "none", elems: "f32" };

/// RMSNorm over rows. Inputs: `x` (rows × cols), `w` (cols), and `{cols, eps bits, rows}` as
/// u32 (the incumbents read their scalars from a buffer).
pub const RMSNORM: Op = Op {
    key: RMSNORM_KEY,
    summary: "y = x · (1 / sqrt(mean(x²) + eps)) · w over each row, eps = 1e-5",
    shapes: &[
        NamedShape { name: "SmolLM2-135M decode (one token)", shape: Shape { rows: 1, cols: 576 } },
        NamedShape { name: "SmolLM2-135M prefill (512 tokens)", shape: Shape { rows: 512, cols: 576 } },
        NamedShape { name: "DRAM-bound (4096 rows of a 7B model)", shape: Shape { rows: 4096, cols: 4096 } },
    ],
    oracle_rows: 16,
    check: |s| {
        rmsnorm::check(s.rows, s.cols, &vec![0.0; s.rows * s.cols], &vec![0.0; s.cols])
            .map_err(|e| island_runtime::cell::ShapeRefused(e.0))
    },
    inputs: rms_inputs,
    scratch: |_| Vec::new(),
    out_bytes: |s| s.rows * s.cols * 4,
    in_place: None,
    output: island_runtime::ValueKind::F32,
    reference: |s, inputs| {
        let (x, w) = (f32::from_bytes(&inputs[0]), f32::from_bytes(&inputs[1]));
        f32::as_bytes(&rmsnorm::reference(s.rows, s.cols, x, w, EPS)).to_vec()
    },
    twin: rms_twin,
};
island_runtime::op!(RMSNORM);

/// Values in [-2, 2), and rows that reach the edges: every fourth row scaled by 2^±40 (squares
/// that overflow or vanish without the row's own scale), one row of zeros (`1 / sqrt(eps)`).
fn rms_inputs(s: &Shape, seed: u64) -> Inputs {
    let mut rng = Rng::new(seed);
    let mut x = floats(s.rows * s.cols, &mut rng);
    for (r, row) in x.chunks_exact_mut(s.cols).enumerate() {
        match r % 8 {
            3 => row.iter_mut().for_each(|v| *v *= 2f32.powi(40)),
            5 => row.iter_mut().for_each(|v| *v *= 2f32.powi(-40)),
            7 => row.fill(0.0),
            _ => {}
        }
    }
    let w = floats(s.cols, &mut rng);
    let params = [s.cols as u32, EPS.to_bits(), s.rows as u32];
    vec![f32::as_bytes(&x).to_vec(), f32::as_bytes(&w).to_vec(), u32::as_bytes(&params).to_vec()]
}

fn rms_twin(client: &Client, s: &Shape, b: &Buffers, target: Target) -> Result<(), CellError> {
    // SAFETY: the gate and the op function allocate x and y with rows × cols values, w with cols.
    unsafe { rmsnorm::launch(client, &b.inputs[0], &b.inputs[1], b.out, (s.rows, s.cols), EPS, target) }.map_err(|e| {
        CellError::Launch {
            cell: RMSNORM_KEY.to_string(),
            candidate: "the island kernel".into(),
            reason: e.to_string(),
        }
    })
}

/// RMSNorm over `rows` rows of `cols` with the candidate the device's cell record selects
/// (`island_runtime::dispatch`): the twin where the cell flipped or was not measured, a bit-exact
/// incumbent that beats it where it was declined. `params` holds `{cols, eps bits, rows}` as u32
/// (the incumbents' scalars), with [`EPS`].
pub fn rmsnorm(
    client: &Client,
    x: &cubecl::server::Handle,
    w: &cubecl::server::Handle,
    y: &cubecl::server::Handle,
    params: &cubecl::server::Handle,
    shape: Shape,
) -> Result<(), CellError> {
    (RMSNORM.check)(&shape).map_err(|e| CellError::Shape { cell: RMSNORM_KEY.to_string(), reason: e.0 })?;
    let inputs = [x.clone(), w.clone(), params.clone()];
    let buffers = Buffers { inputs: &inputs, scratch: &[], out: y };
    match island_runtime::dispatch::choose(client, &RMSNORM_KEY)? {
        island_runtime::dispatch::Choice::Twin(target) => rms_twin(client, &shape, &buffers, target),
        island_runtime::dispatch::Choice::Incumbent(inc) => (inc.launch)(client, &shape, &buffers),
    }
}
