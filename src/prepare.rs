//! The one router: a [`Method`] (`Auto` included) and a source (a host CSR, or a CSR in GPU
//! buffers) → a plan. The only module that sees both `select` (which method) and `methods`
//! (how each is built); `Auto` is resolved here, every concrete method is built by
//! `methods::prepare_concrete` / `methods::prepare_gpu_concrete`.

use crate::gpu::Gpu;
use crate::matrix::{transpose_on_gpu, Checked, SharedUpload, UploadedCsr};
use crate::methods::{prepare_concrete, prepare_gpu_checked, prepare_gpu_concrete};
use crate::plan::{Candidate, Choice, SpmvPlan};
use crate::select::{AutoChoice, Basis};
use crate::{BuildOn, CallerBuffers, CsrMatrix, GpuCsr, Method, PlanOptions, Result, Scalar};

impl Gpu {
    /// Prepares `a` for `method` with parameters chosen for this adapter.
    pub fn prepare<T: Scalar>(&self, a: &CsrMatrix<T>, method: Method) -> Result<SpmvPlan<T>> {
        self.prepare_with(a, method, &PlanOptions::default())
    }

    /// Prepares `a` for `method` with explicit options. The plan's report holds the setup time
    /// (GPU work included) and, for `Method::Auto`, the candidates weighed.
    pub fn prepare_with<T: Scalar>(
        &self,
        a: &CsrMatrix<T>,
        method: Method,
        opts: &PlanOptions,
    ) -> Result<SpmvPlan<T>> {
        let _turn = self.gl_turn();
        self.start_compiling_ahead();
        let compiled = self.compile_ns();
        // A plan of Aᵀ made on the GPU reads A from the upload the plan's own build made.
        let _shared = opts.transposed.map(|_| SharedUpload::of(self, a));
        let plan = self
            .prepare_host(a, method, opts)
            .and_then(|plan| self.with_transposed_of_host(plan, a, opts));
        self.finish_prepare(plan, compiled)
    }

    /// Compiles, on several threads, the kernels earlier processes' plans asked for on this
    /// adapter (listed beside the pipeline cache, [`Gpu::use_pipeline_cache_dir`]), so that the
    /// plans of this process find their pipelines ready; returns how many are. The first
    /// `prepare` starts it in the background by itself; an application may call it sooner, on
    /// a thread of its own, to have the kernels ready before its first plan. 0 without a cache
    /// directory, and after the first call (or `prepare`).
    pub fn compile_kernels_ahead(&self) -> usize {
        self.compile_listed(self.take_listed_kernels())
    }

    /// Starts [`Gpu::compile_kernels_ahead`] on a thread of its own, once per device.
    fn start_compiling_ahead(&self) {
        let lines = self.take_listed_kernels();
        if lines.is_empty() {
            return;
        }
        let gpu = self.clone();
        let started = std::thread::Builder::new()
            .name("wgspmv-compile-ahead".into())
            .spawn(move || gpu.compile_listed(lines));
        if let Err(e) = started {
            log::debug!("kernels not compiled ahead: {e}");
        }
    }

    fn compile_listed(&self, lines: Vec<String>) -> usize {
        if lines.is_empty() {
            return 0;
        }
        let kernels = crate::methods::all_kernels();
        // A list kept by a device with immediate data may be read by one opened without it.
        let immediates = self.info().has_immediate_coeffs();
        let variants: Vec<crate::kernel::Variant> = lines
            .iter()
            .filter_map(|l| crate::kernel::Variant::from_line(l, &kernels))
            .filter(|v| immediates || !v.immediate_coeffs)
            .collect();
        let started = std::time::Instant::now();
        let ready = self.compile_ahead(&variants);
        log::debug!(
            "compiled ahead: {ready} of {} listed kernels in {:.1} ms",
            lines.len(),
            started.elapsed().as_secs_f64() * 1e3
        );
        self.save_pipeline_cache_quietly();
        ready
    }

    /// What every `prepare` does last: the plan's compile time, the pipeline cache saved.
    fn finish_prepare<T: Scalar>(
        &self,
        plan: Result<SpmvPlan<T>>,
        compiled_before: u64,
    ) -> Result<SpmvPlan<T>> {
        let mut plan = plan?;
        let compile_ns = self.compile_ns() - compiled_before;
        plan.report_mut().compile_ms = compile_ns as f64 / 1e6;
        if compile_ns > 0 {
            self.save_pipeline_cache_quietly();
        }
        Ok(plan)
    }

    fn prepare_host<T: Scalar>(
        &self,
        a: &CsrMatrix<T>,
        method: Method,
        opts: &PlanOptions,
    ) -> Result<SpmvPlan<T>> {
        self.check_scalar::<T>()?;
        if method != Method::Auto {
            return prepare_concrete(self, a, method, opts);
        }
        let start = std::time::Instant::now();
        // The choice builds the plan it chose (a timed choice keeps the plan it timed).
        let (mut plan, c) = crate::select::prepare_auto(self, a, opts)?;
        let report = plan.report_mut();
        report.setup_ms = start.elapsed().as_secs_f64() * 1e3;
        report.tuning_ms += c.timing_ms;
        report.choice = Some(choice_report(&c));
        Ok(plan)
    }

    /// Prepares a CSR matrix the caller already holds on this GPU (see [`GpuCsr`]): validated
    /// on the GPU (a violation is the error [`CsrMatrix::try_new`] gives for the same arrays),
    /// then built there where the method can: `csr-scalar` and `csr-vector` (copies of the
    /// arrays, or the arrays themselves with [`CallerBuffers::Share`], unless the matrix needs
    /// row chunks; the passes for rows too long for one invocation are described on the GPU),
    /// `csr-stream` (its tiles cut and sorted, unless the matrix needs row chunks), `cmrs` and
    /// `cmrs-padded` (their strips, and the rows strips leave to the long-row passes, unless the
    /// matrix needs row chunks), `speculative` (copies and its structure analysis,
    /// when its check stage runs on the GPU and the matrix needs no row chunks), `suraa` (its
    /// GPU setup), `bccoo` and `bccoo-plus` (their GPU build, where the options allow it, and a
    /// guided tuning's candidates where `bccoo.tune_budget_products` is given), and `Auto`
    /// (features counted on the GPU, a timed choice's candidates built, tuned and timed from the
    /// buffers). Tunings and timed choices are remembered under the structure's fingerprint,
    /// hashed on the GPU (8 bytes per 4096 words read back), the same key as the host CSR's.
    /// Elsewhere the matrix is read back and built on the host, and the report's
    /// `read_back_bytes` says how much was read.
    pub fn prepare_gpu_csr<T: Scalar>(
        &self,
        a: &GpuCsr,
        method: Method,
        opts: &PlanOptions,
    ) -> Result<SpmvPlan<T>> {
        let _turn = self.gl_turn();
        self.start_compiling_ahead();
        let compiled = self.compile_ns();
        let plan = self
            .prepare_gpu_csr_inner(a, method, opts, None)
            .and_then(|plan| self.with_transposed_of_gpu_csr(plan, a, opts));
        self.finish_prepare(plan, compiled)
    }

    /// Prepares `a` for `method`; `known`: what its check found, where it is valid by
    /// construction (no check is run).
    fn prepare_gpu_csr_inner<T: Scalar>(
        &self,
        a: &GpuCsr,
        method: Method,
        opts: &PlanOptions,
        known: Option<Checked>,
    ) -> Result<SpmvPlan<T>> {
        self.check_scalar::<T>()?;
        let start = std::time::Instant::now();
        let checked = match (method, known) {
            (Method::Auto, None) => a.check::<T>(self)?,
            (_, None) => return prepare_gpu_concrete(self, a, method, opts, start),
            (_, Some(checked)) if method != Method::Auto => {
                return prepare_gpu_checked(self, a, checked, method, opts, start)
            }
            (_, Some(checked)) => checked,
        };
        let validation_ms = start.elapsed().as_secs_f64() * 1e3;
        if a.nnz == 0 {
            // (An empty matrix's arrays may be too small to bind; it is chosen for on the host.)
            let host = a.read_back::<T>(self)?;
            let mut plan = self.prepare_host(&host, method, opts)?;
            let report = plan.report_mut();
            report.read_back_bytes = a.bytes::<T>().iter().sum();
            report.setup_ms = start.elapsed().as_secs_f64() * 1e3;
            report.validation_ms = validation_ms;
            return Ok(plan);
        }
        // Auto chooses from features counted on the GPU; a timed choice builds its candidates
        // from the buffers and keeps the one it timed fastest.
        let mut c = crate::select::choose_gpu_csr::<T>(self, a, opts)?;
        if let Some(how) = crate::select::timing(&c, opts)? {
            let (mut plan, c) =
                crate::select::prepare_auto_gpu_csr::<T>(self, a, opts, c, how, &mut |m, o| {
                    let t = std::time::Instant::now();
                    let plan = prepare_gpu_checked::<T>(self, a, checked, m, o, t)?;
                    Ok((plan, t.elapsed().as_secs_f64() * 1e3))
                })?;
            let report = plan.report_mut();
            report.validation_ms = validation_ms;
            report.choice = Some(choice_report(&c));
            return Ok(plan);
        }
        // By the model alone it builds its choice from the buffers (falling down the list if a
        // build fails).
        let order: Vec<Method> = c.candidates.iter().map(|k| k.method).collect();
        let mut first_err = None;
        for m in order {
            match prepare_gpu_checked::<T>(self, a, checked, m, opts, start) {
                Ok(mut plan) => {
                    c.method = m;
                    let report = plan.report_mut();
                    report.validation_ms = validation_ms;
                    report.choice = Some(choice_report(&c));
                    return Ok(plan);
                }
                Err(e) => {
                    if let Some(k) = c.candidates.iter_mut().find(|k| k.method == m) {
                        k.error = Some(e.to_string());
                    }
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.expect("at least one candidate"))
    }
}

impl Gpu {
    /// `plan`, given its plan of Aᵀ where `opts.transposed` asks for one, `a` being the host CSR
    /// it was prepared from: Aᵀ made on the GPU from `a` uploaded, or on the host where formats
    /// are built there.
    fn with_transposed_of_host<T: Scalar>(
        &self,
        plan: SpmvPlan<T>,
        a: &CsrMatrix<T>,
        opts: &PlanOptions,
    ) -> Result<SpmvPlan<T>> {
        let Some(method) = opts.transposed else {
            return Ok(plan);
        };
        let on_host = match opts.build_on {
            BuildOn::Host => true,
            BuildOn::Gpu => false,
            BuildOn::Auto => self.info().device_type == wgpu::DeviceType::Cpu,
        };
        if !on_host && a.nnz() > 0 {
            let start = std::time::Instant::now();
            if let Some(up) = UploadedCsr::shared(self, a)? {
                let upload_ms = start.elapsed().as_secs_f64() * 1e3;
                return self.transposed_from_gpu_csr(plan, &up.view(), opts, upload_ms);
            }
        }
        let start = std::time::Instant::now();
        let (at, sources) = a.transpose_with_sources()?;
        let transpose_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut t = self.prepare_host(&at, method, &transposed_options(opts))?;
        t.report_mut().split.build_ms += transpose_ms;
        let sources = self.storage_buffer(
            "transposed entry sources",
            bytemuck::cast_slice(&sources),
            wgpu::BufferUsages::empty(),
        )?;
        t.report_mut().setup_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(plan.with_transposed(t, sources))
    }

    /// `plan`, given its plan of Aᵀ where `opts.transposed` asks for one, `a` being the valid
    /// CSR in GPU buffers it was prepared from: Aᵀ made on the GPU.
    fn with_transposed_of_gpu_csr<T: Scalar>(
        &self,
        plan: SpmvPlan<T>,
        a: &GpuCsr,
        opts: &PlanOptions,
    ) -> Result<SpmvPlan<T>> {
        if opts.transposed.is_none() {
            return Ok(plan);
        }
        if a.nnz == 0 {
            let empty = CsrMatrix::<T>::zeros(a.nrows, a.ncols)?;
            return self.with_transposed_of_host(plan, &empty, opts);
        }
        self.transposed_from_gpu_csr(plan, a, opts, 0.0)
    }

    /// [`Gpu::with_transposed_of_gpu_csr`] for `a` with entries, uploaded in `upload_ms` (0
    /// where the caller gave it on the GPU). The report of Aᵀ's plan counts the upload and
    /// the transposition in its split (`upload_ms`, `build_ms`) and setup.
    fn transposed_from_gpu_csr<T: Scalar>(
        &self,
        plan: SpmvPlan<T>,
        a: &GpuCsr,
        opts: &PlanOptions,
        upload_ms: f64,
    ) -> Result<SpmvPlan<T>> {
        let Some(method) = opts.transposed else {
            return Ok(plan);
        };
        let start = std::time::Instant::now();
        let at = transpose_on_gpu::<T>(self, a)?;
        let transpose_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut t = self.prepare_gpu_csr_inner(
            &at.view(),
            method,
            &transposed_options(opts),
            Some(at.checked),
        )?;
        let report = t.report_mut();
        report.setup_ms = upload_ms + start.elapsed().as_secs_f64() * 1e3;
        report.split.upload_ms += upload_ms;
        report.split.build_ms += transpose_ms;
        Ok(plan.with_transposed(t, at.sources))
    }
}

/// The options of a plan's plan of Aᵀ: its own copies of Aᵀ's arrays, no transpose of its own.
fn transposed_options(opts: &PlanOptions) -> PlanOptions {
    PlanOptions {
        caller_buffers: CallerBuffers::Copy,
        transposed: None,
        ..opts.clone()
    }
}

/// What a plan's report says of an `Auto` choice.
fn choice_report(c: &AutoChoice) -> Choice {
    Choice {
        candidates: c
            .candidates
            .iter()
            .map(|k| Candidate {
                method: k.method.name(),
                predicted_setup_ms: k.setup_ms,
                predicted_product_ms: k.product_ms,
                measured_product_ms: k.measured_product_ms,
            })
            .collect(),
        expected_products: c.expected_products as f64,
        profile: c.profile.clone(),
        timed: c.basis == Basis::Timed,
        remembered: c.basis == Basis::Remembered,
        below_data: c.below_data,
    }
}

impl<T: Scalar> SpmvPlan<T> {
    /// The method this plan runs (never `Auto`: the choice is resolved when preparing).
    pub fn method(&self) -> Method {
        Method::from_name(self.report().method).expect("plans are reported under a method name")
    }
}
