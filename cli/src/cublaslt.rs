//! cuBLASLt called in process: the best dense-GEMM peer a CUDA user has. `torch._int_mm` reaches
//! cuBLASLt too, but with no algorithm search and no workspace, which lands it on an older
//! kernel; here every algorithm the heuristic returns (up to 16) runs with a 64 MiB
//! workspace, each timed kernel-only like the islands (inputs once, N calls
//! between two events, the median of several rounds), and the fastest is the peer.
//!
//! cuBLASLt names algorithms by numbers (id, tile, stages, cluster shape), not by kernel: the
//! kernel behind one is what a profiler shows (`docs/perf.md` names the one measured).

/// The fastest algorithm's figure and output.
pub struct Best<T> {
    /// Microseconds per call, median of the rounds.
    pub us: f64,
    /// Algorithms the heuristic returned (all were timed).
    pub algorithms: usize,
    /// The fastest one's configuration, as cuBLASLt numbers it.
    pub config: String,
    /// Its output, row-major `m×n`.
    pub out: Vec<T>,
}

/// Why cuBLASLt gave no figure.
#[derive(Debug, thiserror::Error)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // made only where cuBLASLt is called
pub enum CublasLtError {
    /// A cuBLASLt call failed: which, and its status.
    #[error("cuBLASLt {what}: {status}")]
    Call { what: &'static str, status: String },
    /// A CUDA driver call failed.
    #[error("CUDA: {0}")]
    Driver(String),
    #[error("cuBLASLt's heuristic returned no algorithm")]
    NoAlgorithm,
    #[error("no algorithm of cuBLASLt's heuristic ran")]
    NoneRan,
}

#[cfg(feature = "cuda")]
pub use lt_impl::{f16, int8};

#[cfg(feature = "cuda")]
mod lt_impl {
    use super::{Best, CublasLtError};
    use cudarc::cublaslt::sys::{self as lt, cudaDataType as Ty};
    use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};
    use std::ffi::c_void;
    use std::sync::Arc;

    /// Bytes of workspace offered to every algorithm.
    pub const WORKSPACE: usize = 64 << 20;
    /// Most algorithms asked of the heuristic.
    pub const ALGORITHMS: usize = 16;

    /// `c[m×n] = a[m×k] · b`, i8 × i8 → i32; `a` row-major and `b` column-major (`bt`: n rows of k
    /// bytes), the layout cuBLASLt's int8 kernels take ("TN").
    pub fn int8(
        m: usize,
        k: usize,
        n: usize,
        a: &[i8],
        bt: &[i8],
        rounds: usize,
        iters: usize,
    ) -> Result<Best<i32>, CublasLtError> {
        // cuBLASLt is column-major: the row-major m×n `c` is its n×m matrix `bt` (op T) times `a`.
        let problem = Problem {
            compute: lt::cublasComputeType_t::CUBLAS_COMPUTE_32I,
            scale: Ty::CUDA_R_32I,
            a: Operand { ty: Ty::CUDA_R_8I, rows: k, cols: n, transposed: true },
            b: Operand { ty: Ty::CUDA_R_8I, rows: k, cols: m, transposed: false },
            c: (Ty::CUDA_R_32I, n, m),
        };
        problem.best(bt, a, (1i32, 0i32), rounds, iters)
    }

    /// `c[m×n] = a[m×k] · b[k×n]`, f16 × f16 → f32 with f32 accumulation, everything row-major.
    pub fn f16(
        m: usize,
        k: usize,
        n: usize,
        a: &[half::f16],
        b: &[half::f16],
        rounds: usize,
        iters: usize,
    ) -> Result<Best<f32>, CublasLtError> {
        // Column-major: the row-major m×n `c` is its n×m matrix `b` (n×k) times `a` (k×m).
        let problem = Problem {
            compute: lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            scale: Ty::CUDA_R_32F,
            a: Operand { ty: Ty::CUDA_R_16F, rows: n, cols: k, transposed: false },
            b: Operand { ty: Ty::CUDA_R_16F, rows: k, cols: m, transposed: false },
            c: (Ty::CUDA_R_32F, n, m),
        };
        let bits = |v: &[half::f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
        problem.best(&bits(b), &bits(a), (1f32, 0f32), rounds, iters)
    }

    /// A column-major operand as stored (`rows × cols`, leading dimension `rows`).
    struct Operand {
        ty: Ty,
        rows: usize,
        cols: usize,
        transposed: bool,
    }

    struct Problem {
        compute: lt::cublasComputeType_t,
        scale: Ty,
        a: Operand,
        b: Operand,
        c: (Ty, usize, usize),
    }

    fn ok(status: lt::cublasStatus_t, what: &'static str) -> Result<(), CublasLtError> {
        status.result().map_err(|e| CublasLtError::Call { what, status: e.to_string() })
    }

    fn driver(e: cudarc::driver::DriverError) -> CublasLtError {
        CublasLtError::Driver(e.to_string())
    }

    fn layout(ty: Ty, rows: usize, cols: usize) -> Result<lt::cublasLtMatrixLayout_t, CublasLtError> {
        let mut l = std::ptr::null_mut();
        // SAFETY: `l` receives a new descriptor.
        ok(unsafe { lt::cublasLtMatrixLayoutCreate(&mut l, ty, rows as u64, cols as u64, rows as i64) }, "layout")?;
        Ok(l)
    }

    /// The handle and descriptors of one problem, destroyed on drop.
    struct Plan {
        handle: lt::cublasLtHandle_t,
        desc: lt::cublasLtMatmulDesc_t,
        layouts: [lt::cublasLtMatrixLayout_t; 3],
        pref: lt::cublasLtMatmulPreference_t,
    }

    impl Drop for Plan {
        fn drop(&mut self) {
            // SAFETY: each was created once by `Problem::plan` and is destroyed once here.
            unsafe {
                for l in self.layouts {
                    if !l.is_null() {
                        lt::cublasLtMatrixLayoutDestroy(l);
                    }
                }
                if !self.pref.is_null() {
                    lt::cublasLtMatmulPreferenceDestroy(self.pref);
                }
                if !self.desc.is_null() {
                    lt::cublasLtMatmulDescDestroy(self.desc);
                }
                if !self.handle.is_null() {
                    lt::cublasLtDestroy(self.handle);
                }
            }
        }
    }

    fn set<T>(
        status: impl FnOnce(*const c_void, usize) -> lt::cublasStatus_t,
        value: &T,
        what: &'static str,
    ) -> Result<(), CublasLtError> {
        ok(status(value as *const T as *const c_void, size_of::<T>()), what)
    }

    /// One configuration attribute of an algorithm, as a number: its size asked first (cuBLASLt
    /// checks the buffer's size against the attribute's).
    fn config_of(algo: &lt::cublasLtMatmulAlgo_t, attr: lt::cublasLtMatmulAlgoConfigAttributes_t) -> String {
        let mut size = 0usize;
        // SAFETY: a null buffer of size 0 asks for the attribute's size only.
        let asked = unsafe { lt::cublasLtMatmulAlgoConfigGetAttribute(algo, attr, std::ptr::null_mut(), 0, &mut size) };
        if asked.result().is_err() || !matches!(size, 1 | 2 | 4 | 8) {
            return "?".to_string();
        }
        let mut v = [0u8; 8];
        let mut written = 0usize;
        // SAFETY: `v` has room for `size` ≤ 8 bytes.
        let status =
            unsafe { lt::cublasLtMatmulAlgoConfigGetAttribute(algo, attr, v.as_mut_ptr().cast(), size, &mut written) };
        if status.result().is_err() {
            return "?".to_string();
        }
        u64::from_le_bytes(v).to_string()
    }

    fn describe(algo: &lt::cublasLtMatmulAlgo_t) -> String {
        use lt::cublasLtMatmulAlgoConfigAttributes_t as A;
        format!(
            "algo id {}, tile id {}, stages id {}, cluster shape id {}, split-k {}",
            config_of(algo, A::CUBLASLT_ALGO_CONFIG_ID),
            config_of(algo, A::CUBLASLT_ALGO_CONFIG_TILE_ID),
            config_of(algo, A::CUBLASLT_ALGO_CONFIG_STAGES_ID),
            config_of(algo, A::CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
            config_of(algo, A::CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
        )
    }

    impl Problem {
        fn plan(&self) -> Result<Plan, CublasLtError> {
            let mut plan = Plan {
                handle: std::ptr::null_mut(),
                desc: std::ptr::null_mut(),
                layouts: [std::ptr::null_mut(); 3],
                pref: std::ptr::null_mut(),
            };
            // SAFETY: each call fills one field of `plan`, which `Drop` destroys.
            unsafe {
                ok(lt::cublasLtCreate(&mut plan.handle), "create (is libcublasLt on the loader's path?)")?;
                ok(lt::cublasLtMatmulDescCreate(&mut plan.desc, self.compute, self.scale), "matmul descriptor")?;
                ok(lt::cublasLtMatmulPreferenceCreate(&mut plan.pref), "preference")?;
            }
            // `cublasOperation_t` as cuBLAS defines it (an `int32_t`): 0 is N, 1 is T.
            let op = |t: bool| i32::from(t);
            let desc = plan.desc;
            use lt::cublasLtMatmulDescAttributes_t as D;
            // SAFETY: the attributes' values have the types cuBLASLt documents for them.
            let attr =
                |a: D| move |p: *const c_void, s: usize| unsafe { lt::cublasLtMatmulDescSetAttribute(desc, a, p, s) };
            set(attr(D::CUBLASLT_MATMUL_DESC_TRANSA), &op(self.a.transposed), "transa")?;
            set(attr(D::CUBLASLT_MATMUL_DESC_TRANSB), &op(self.b.transposed), "transb")?;
            let pref = plan.pref;
            // SAFETY: as above.
            let workspace = |p: *const c_void, s: usize| unsafe {
                lt::cublasLtMatmulPreferenceSetAttribute(
                    pref,
                    lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    p,
                    s,
                )
            };
            set(workspace, &(WORKSPACE as u64), "workspace")?;
            plan.layouts = [
                layout(self.a.ty, self.a.rows, self.a.cols)?,
                layout(self.b.ty, self.b.rows, self.b.cols)?,
                layout(self.c.0, self.c.1, self.c.2)?,
            ];
            Ok(plan)
        }

        /// Times every algorithm the heuristic returns on `x` (cuBLASLt's A) and `y` (its B); the
        /// fastest one's output comes back.
        fn best<X, Y, S, C>(
            &self,
            x: &[X],
            y: &[Y],
            (alpha, beta): (S, S),
            rounds: usize,
            iters: usize,
        ) -> Result<Best<C>, CublasLtError>
        where
            X: DeviceRepr,
            Y: DeviceRepr,
            C: DeviceRepr + ValidAsZeroBits + Default + Clone,
        {
            let ctx = CudaContext::new(0).map_err(driver)?;
            let stream = ctx.default_stream();
            let xd = stream.clone_htod(x).map_err(driver)?;
            let yd = stream.clone_htod(y).map_err(driver)?;
            let cd: CudaSlice<C> = stream.alloc_zeros(self.c.1 * self.c.2).map_err(driver)?;
            let wd: CudaSlice<u8> = stream.alloc_zeros(WORKSPACE).map_err(driver)?;
            let plan = self.plan()?;
            let mut found = 0i32;
            // SAFETY: zeroed results are valid values of the plain C struct.
            let mut results: Vec<lt::cublasLtMatmulHeuristicResult_t> = vec![unsafe { std::mem::zeroed() }; ALGORITHMS];
            let [la, lb, lc] = plan.layouts;
            // SAFETY: the plan's descriptors are live; `results` has room for `ALGORITHMS`.
            ok(
                unsafe {
                    lt::cublasLtMatmulAlgoGetHeuristic(
                        plan.handle,
                        plan.desc,
                        la,
                        lb,
                        lc,
                        lc,
                        plan.pref,
                        ALGORITHMS as i32,
                        results.as_mut_ptr(),
                        &mut found,
                    )
                },
                "heuristic",
            )?;
            let results = &results[..found.max(0) as usize];
            if results.is_empty() {
                return Err(CublasLtError::NoAlgorithm);
            }
            let (xp, _g1) = xd.device_ptr(&stream);
            let (yp, _g2) = yd.device_ptr(&stream);
            let (cp, _g3) = cd.device_ptr(&stream);
            let (wp, _g4) = wd.device_ptr(&stream);
            let raw = stream.cu_stream() as lt::cudaStream_t;
            let call = |algo: &lt::cublasLtMatmulAlgo_t| {
                // SAFETY: the buffers hold the shapes the layouts describe, the workspace
                // `WORKSPACE` bytes; all live until the stream is synchronized below.
                ok(
                    unsafe {
                        lt::cublasLtMatmul(
                            plan.handle,
                            plan.desc,
                            (&alpha as *const S).cast(),
                            xp as *const c_void,
                            la,
                            yp as *const c_void,
                            lb,
                            (&beta as *const S).cast(),
                            cp as *const c_void,
                            lc,
                            cp as *mut c_void,
                            lc,
                            algo,
                            wp as *mut c_void,
                            WORKSPACE,
                            raw,
                        )
                    },
                    "matmul",
                )
            };
            let mut best: Option<(f64, usize)> = None;
            for (i, r) in results.iter().enumerate() {
                if r.state.result().is_err() || r.workspaceSize > WORKSPACE {
                    continue;
                }
                // An algorithm that fails to launch is skipped, as a search would.
                if (0..3).try_for_each(|_| call(&r.algo)).is_err() {
                    continue;
                }
                let us = median_us(&ctx, &stream, rounds, iters, || call(&r.algo))?;
                if best.is_none_or(|(b, _)| us < b) {
                    best = Some((us, i));
                }
            }
            let (us, i) = best.ok_or(CublasLtError::NoneRan)?;
            // The output of one fresh call of the fastest.
            // SAFETY: `cp` holds the output's bytes, on this stream.
            unsafe {
                cudarc::driver::result::memset_d8_async(cp, 0, self.c.1 * self.c.2 * size_of::<C>(), stream.cu_stream())
            }
            .map_err(driver)?;
            call(&results[i].algo)?;
            stream.synchronize().map_err(driver)?;
            let out = stream.clone_dtoh(&cd).map_err(driver)?;
            Ok(Best { us, algorithms: results.len(), config: describe(&results[i].algo), out })
        }
    }

    /// Microseconds per call: `iters` calls between two events, the median of `rounds`.
    fn median_us(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        rounds: usize,
        iters: usize,
        mut call: impl FnMut() -> Result<(), CublasLtError>,
    ) -> Result<f64, CublasLtError> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let (start, end) = (ctx.new_event(timing).map_err(driver)?, ctx.new_event(timing).map_err(driver)?);
        let mut times = Vec::with_capacity(rounds);
        for _ in 0..rounds.max(1) {
            start.record(stream).map_err(driver)?;
            for _ in 0..iters.max(1) {
                call()?;
            }
            end.record(stream).map_err(driver)?;
            times.push(start.elapsed_ms(&end).map_err(driver)? as f64 * 1e3 / iters.max(1) as f64);
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}
