//! The SpMV methods and their registry. Each method is one folder (options, host format, plan,
//! kernels) whose `prepare` returns an [`SpmvPlan`]; this file lists them once, in `registry!`,
//! and resolves `Method::Auto`.

pub mod bccoo;
pub mod cmrs;
pub(crate) mod common;
pub mod csr;
pub(crate) mod passes;
pub mod speculative;
pub mod suraa;

use crate::gpu::Gpu;
use crate::kernel::Kernel;
use crate::plan::SpmvPlan;
use crate::{CsrMatrix, Error, GpuCsr, Result, Scalar};

/// Declares every method once: its variant, its name and the folder that prepares it (a
/// `prepare(gpu, a, method, opts)` and a `KERNELS` list). Adding a method is one line here.
macro_rules! registry {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal => $module:ident, )*) => {
        /// An SpMV method.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Method {
            $( $(#[$doc])* $variant, )*
            /// Chosen for this matrix, adapter and expected number of products (see
            /// [`crate::select`]).
            Auto,
        }

        impl Method {
            /// Every concrete method, in report order.
            pub const ALL: &'static [Method] = &[$(Method::$variant),*];

            /// The name used on command lines and in reports.
            pub fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Auto => "auto",
                }
            }
        }

        /// Every kernel the library can dispatch, each once.
        pub fn all_kernels() -> Vec<Kernel> {
            let mut all: Vec<Kernel> = crate::kernel::SHARED_KERNELS.to_vec();
            all.extend_from_slice(passes::KERNELS);
            $(all.extend_from_slice($module::KERNELS);)*
            let mut seen = std::collections::HashSet::new();
            all.retain(|k| seen.insert(k.name));
            all
        }

        /// Prepares `a` for a concrete method.
        fn prepare_method<T: Scalar>(
            gpu: &Gpu,
            a: &CsrMatrix<T>,
            method: Method,
            opts: &PlanOptions,
        ) -> Result<SpmvPlan<T>> {
            match method {
                $(Method::$variant => $module::prepare(gpu, a, method, opts),)*
                Method::Auto => unreachable!("Auto is resolved before preparing"),
            }
        }
    };
}

registry! {
    /// One invocation per row (baseline).
    CsrScalar = "csr-scalar" => csr,
    /// One SIMD group (subgroup, or a team of lanes in workgroup memory) per row (baseline).
    CsrVector = "csr-vector" => csr,
    /// Compressed multirow storage: one SIMD group per strip of rows (Koza et al.).
    Cmrs = "cmrs" => cmrs,
    /// CMRS with the smaller buffer and zero-padded strips of the paper's section 6.7.
    CmrsPadded = "cmrs-padded" => cmrs,
    /// Speculative segmented sum on plain CSR, finished on the host or the GPU (Liu & Vinter).
    Speculative = "speculative" => speculative,
    /// Rows sorted by length and cut into Freedman–Diaconis segments, run by scalar, vector and
    /// "dynamic" kernels (SURAA).
    Suraa = "suraa" => suraa,
    /// Bit-flag blocked COO with the matrix-based segmented sum and adjacent synchronization
    /// between workgroups (yaSpMV).
    Bccoo = "bccoo" => bccoo,
    /// BCCOO over vertical slices stacked top-down, with a pass that adds the slices' results
    /// (yaSpMV's BCCOO+).
    BccooPlus = "bccoo-plus" => bccoo,
}

impl Method {
    /// Looks a method up by [`name`](Self::name).
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .chain([Method::Auto])
            .find(|m| m.name() == name)
            .ok_or_else(|| Error::UnknownName {
                what: "method",
                name: name.to_owned(),
                expected: Self::ALL
                    .iter()
                    .chain(&[Method::Auto])
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::from_name(s)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which cross-lane reduction a kernel uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LanePolicy {
    /// Subgroup operations when the device has them, else workgroup memory.
    #[default]
    Auto,
    /// Subgroup operations; an error if the device lacks `Features::SUBGROUP`.
    Subgroup,
    /// Workgroup memory and barriers, even where subgroups exist.
    Workgroup,
}

/// Where a plan's format is built when it is prepared from a host CSR.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BuildOn {
    /// On the GPU where [`BuildOn::Gpu`] would and the adapter is not a CPU: a software
    /// adapter runs the build kernels on the same cores as the host code, only slower.
    #[default]
    Auto,
    /// On the host: the CPU twins the GPU builds are checked against.
    Host,
    /// On the GPU where the method has a GPU build for this matrix and these parameters
    /// (`csr-scalar` and `csr-vector`'s copies, `cmrs`, `cmrs-padded`, and `speculative` with its check stage
    /// on the GPU; see [`Gpu::prepare_gpu_csr`] for when they have one): the CSR is uploaded as
    /// it is and built as if given on the GPU, without the GPU validation. `suraa` sets up on the GPU by its own
    /// option; the other methods build on the host.
    Gpu,
}

/// What a plan prepared by [`Gpu::prepare_gpu_csr`] does with the caller's three buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CallerBuffers {
    /// The plan copies or builds what it needs; the buffers are only read while preparing.
    #[default]
    Copy,
    /// `csr-scalar`, `csr-vector` (and `cmrs` of height 1, which runs it) keep and read the
    /// caller's buffers instead of copies: no device memory and no copy, so the plan is ready
    /// once the matrix is validated. The caller must leave the row pointers and columns as they
    /// are while the plan lives; values it writes into its value buffer are what the next product
    /// reads, and `update_values` writes there (which needs `COPY_DST` on that buffer, else it
    /// is refused). Methods with a format of their own copy as with [`CallerBuffers::Copy`].
    Share,
}

/// Parameters shared by the methods; `None` means "choose for this adapter and matrix".
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// Which cross-lane reduction the kernels use; default [`LanePolicy::Auto`].
    pub lanes: LanePolicy,
    /// Invocations per workgroup (64, 128, 256 or 512).
    pub workgroup_size: Option<u32>,
    /// Lanes per row on the workgroup-memory path of `csr-vector` (4 to 128, a power of two);
    /// lanes per tile (T) on the workgroup-memory path of `speculative`.
    pub lanes_per_row: Option<u32>,
    /// Largest size of one matrix array on the GPU; larger matrices are split into row chunks.
    /// Defaults to the adapter's storage-binding limit; lower it to test chunking.
    pub max_chunk_bytes: Option<u64>,
    /// Where formats are built from a host CSR; default [`BuildOn::Auto`].
    pub build_on: BuildOn,
    /// Whether a plan from the caller's GPU buffers may keep them instead of copies; default
    /// [`CallerBuffers::Copy`].
    pub caller_buffers: CallerBuffers,
    /// Parameters of `cmrs` and `cmrs-padded`.
    pub cmrs: cmrs::CmrsOptions,
    /// Parameters of `speculative`.
    pub speculative: speculative::SpeculativeOptions,
    /// Parameters of `suraa`.
    pub suraa: suraa::SuraaOptions,
    /// Parameters of `bccoo` and `bccoo-plus`.
    pub bccoo: bccoo::BccooOptions,
    /// How many products the caller expects to run with the plan; `Method::Auto` minimises
    /// setup + this many products. Default [`crate::select::DEFAULT_EXPECTED_PRODUCTS`].
    pub expected_products: Option<u64>,
    /// How `Method::Auto` chooses (profile, timed choice, remembered choices).
    pub auto: crate::select::AutoOptions,
}

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
        let compiled = self.compile_ns();
        let plan = self.prepare_host(a, method, opts);
        self.finish_prepare(plan, compiled)
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
        let start = std::time::Instant::now();
        if method == Method::Auto {
            // The choice builds the plan it chose (a timed choice keeps the plan it timed).
            let (mut plan, c) = crate::select::prepare_auto(self, a, opts)?;
            let report = plan.report_mut();
            report.setup_ms = start.elapsed().as_secs_f64() * 1e3;
            report.tuning_ms += c.timing_ms;
            report.choice = Some(choice_report(&c));
            return Ok(plan);
        }
        let mut plan = match build_through_gpu(self, a, method, opts)? {
            Some(plan) => plan,
            None => prepare_method(self, a, method, opts)?,
        };
        self.wait()?;
        plan.report_mut().setup_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(plan)
    }
}

/// What a plan's report says of an `Auto` choice.
fn choice_report(c: &crate::select::AutoChoice) -> crate::plan::Choice {
    crate::plan::Choice {
        candidates: c
            .candidates
            .iter()
            .map(|k| crate::plan::Candidate {
                method: k.method.name(),
                predicted_setup_ms: k.setup_ms,
                predicted_product_ms: k.product_ms,
                measured_product_ms: k.measured_product_ms,
            })
            .collect(),
        expected_products: c.expected_products as f64,
        profile: c.profile.clone(),
        timed: c.basis == crate::select::Basis::Timed,
        remembered: c.basis == crate::select::Basis::Remembered,
    }
}

/// Whether preparing `a` for `method` with `opts` uploads it as it is and builds on the GPU
/// (else the host builds the format), decided from the host's arrays as `prepare_with` decides.
pub(crate) fn builds_on_gpu<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<bool> {
    let on_gpu = match opts.build_on {
        BuildOn::Host => false,
        BuildOn::Gpu => true,
        BuildOn::Auto => gpu.info().device_type != wgpu::DeviceType::Cpu,
    };
    Ok(on_gpu
        && a.nnz() > 0
        && match method {
            Method::CsrScalar | Method::CsrVector => csr::builds_from_host(gpu, a, method, opts)?,
            Method::Cmrs | Method::CmrsPadded => {
                cmrs::gpu_build::builds_from_host(gpu, a, method, opts)?
            }
            Method::Speculative => {
                speculative::gpu_build::builds_from_host::<T>(gpu, a.shape(), opts)?
            }
            Method::Bccoo | Method::BccooPlus => bccoo::gpu_build::builds_from_host::<T>(gpu, opts),
            _ => false,
        })
}

/// The plan built on the GPU from `a` uploaded as it is, or `None` where `opts.build_on` or the
/// method's GPU build says the host builds it (decided before anything is uploaded).
pub(crate) fn build_through_gpu<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<SpmvPlan<T>>> {
    let builds = builds_on_gpu(gpu, a, method, opts)?;
    if !builds {
        return Ok(None);
    }
    let start = std::time::Instant::now();
    let Some(up) = crate::matrix::UploadedCsr::new(gpu, a)? else {
        return Ok(None);
    };
    // The uploads are dropped once the plan is built, so that the next upload reuses their
    // memory: the plan copies them.
    let opts = &PlanOptions {
        caller_buffers: CallerBuffers::Copy,
        ..opts.clone()
    };
    let upload_ms = start.elapsed().as_secs_f64() * 1e3;
    let plan = match method {
        Method::CsrScalar | Method::CsrVector => {
            csr::prepare_gpu(gpu, &up.view(), up.checked, method, opts)?
        }
        Method::Speculative => {
            speculative::gpu_build::prepare(gpu, &up.view(), method, opts, None)?
        }
        Method::Bccoo | Method::BccooPlus => {
            bccoo::gpu_build::prepare(gpu, &up.view(), method, opts, None)?
        }
        _ => cmrs::gpu_build::prepare(gpu, &up.view(), up.checked, method, opts)?,
    };
    Ok(plan.map(|mut plan| {
        let report = plan.report_mut();
        report.split.upload_ms += upload_ms;
        report.built_on_gpu = true;
        plan
    }))
}

impl Gpu {
    /// Prepares a CSR matrix the caller already holds on this GPU (see [`GpuCsr`]): validated
    /// on the GPU (a violation is the error [`CsrMatrix::try_new`] gives for the same arrays),
    /// then built there where the method can: `csr-scalar` and `csr-vector` (copies of the
    /// arrays, or the arrays themselves with [`CallerBuffers::Share`], unless the matrix needs
    /// row chunks; the passes for rows too long for one invocation are described on the GPU),
    /// `cmrs` and `cmrs-padded` (their strips, and the rows strips leave to the long-row passes,
    /// unless the matrix needs row chunks), `speculative` (copies and its structure analysis,
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
        let compiled = self.compile_ns();
        let plan = self.prepare_gpu_csr_inner(a, method, opts);
        self.finish_prepare(plan, compiled)
    }

    fn prepare_gpu_csr_inner<T: Scalar>(
        &self,
        a: &GpuCsr,
        method: Method,
        opts: &PlanOptions,
    ) -> Result<SpmvPlan<T>> {
        self.check_scalar::<T>()?;
        let start = std::time::Instant::now();
        // `speculative` and an untuned `bccoo` need nothing of the validation before their first
        // read back, so the two share one round trip.
        if a.nnz > 0
            && matches!(
                method,
                Method::Speculative | Method::Bccoo | Method::BccooPlus
            )
        {
            // The builds size buffers from these before their validation runs.
            a.check_sizes()?;
            let mut validation_ms = 0.0;
            let validate = Some(&mut validation_ms);
            let plan = match method {
                Method::Speculative => {
                    speculative::gpu_build::prepare(self, a, method, opts, validate)
                }
                _ => bccoo::gpu_build::prepare(self, a, method, opts, validate),
            };
            // A bad matrix is named before anything else that failed (a bad option, memory), as
            // where the check runs first.
            let plan = match plan {
                Err(e) => {
                    a.check::<T>(self)?;
                    return Err(e);
                }
                Ok(plan) => plan,
            };
            if let Some(plan) = plan {
                let mut plan = self.built_on_gpu(plan, method, start)?;
                plan.report_mut().validation_ms = validation_ms;
                return Ok(plan);
            }
        }
        let checked = a.check::<T>(self)?;
        let validation_ms = start.elapsed().as_secs_f64() * 1e3;
        // Auto chooses from features counted on the GPU; a timed choice builds its candidates
        // from the buffers and keeps the one it timed fastest.
        if method == Method::Auto && opts.auto.timed_budget_products.is_some() && a.nnz > 0 {
            let (mut plan, c) =
                crate::select::prepare_auto_gpu_csr::<T>(self, a, opts, &mut |m, o| {
                    let t = std::time::Instant::now();
                    let plan = self.prepare_gpu_checked::<T>(a, checked, m, o, t)?;
                    self.wait()?;
                    Ok((plan, t.elapsed().as_secs_f64() * 1e3))
                })?;
            let report = plan.report_mut();
            report.validation_ms = validation_ms;
            report.choice = Some(choice_report(&c));
            return Ok(plan);
        }
        // By the model alone it builds its choice from the buffers (falling down the list if a
        // build fails).
        if method == Method::Auto && a.nnz > 0 {
            let mut c = crate::select::choose_gpu_csr::<T>(self, a, opts)?;
            let order: Vec<Method> = c.candidates.iter().map(|k| k.method).collect();
            let mut first_err = None;
            for m in order {
                match self.prepare_gpu_checked::<T>(a, checked, m, opts, start) {
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
            return Err(first_err.expect("at least one candidate"));
        }
        let mut plan = self.prepare_gpu_checked::<T>(a, checked, method, opts, start)?;
        plan.report_mut().validation_ms = validation_ms;
        Ok(plan)
    }

    /// [`Gpu::prepare_gpu_csr`] for a concrete method once `a` is validated (`start`: when the
    /// call began, for the setup time).
    fn prepare_gpu_checked<T: Scalar>(
        &self,
        a: &GpuCsr,
        checked: crate::matrix::Checked,
        method: Method,
        opts: &PlanOptions,
        start: std::time::Instant,
    ) -> Result<SpmvPlan<T>> {
        let on_gpu = match method {
            // (An empty matrix's arrays may be too small to bind; its host build is trivial.)
            _ if a.nnz == 0 => None,
            Method::CsrScalar | Method::CsrVector => {
                csr::prepare_gpu(self, a, checked, method, opts)?
            }
            Method::Cmrs | Method::CmrsPadded => {
                cmrs::gpu_build::prepare(self, a, checked, method, opts)?
            }
            Method::Suraa => suraa::prepare_gpu(self, a, checked, method, opts)?,
            Method::Speculative => speculative::gpu_build::prepare(self, a, method, opts, None)?,
            Method::Bccoo | Method::BccooPlus => bccoo::prepare_gpu(self, a, method, opts)?,
            _ => None,
        };
        if let Some(plan) = on_gpu {
            return self.built_on_gpu(plan, method, start);
        }
        let host = a.read_back::<T>(self)?;
        let mut plan = self.prepare_with(&host, method, opts)?;
        plan.report_mut().read_back_bytes = a.bytes::<T>().iter().sum();
        plan.report_mut().setup_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(plan)
    }

    /// A plan built from GPU buffers, once its GPU work is done, with its setup time.
    fn built_on_gpu<T: Scalar>(
        &self,
        mut plan: SpmvPlan<T>,
        method: Method,
        start: std::time::Instant,
    ) -> Result<SpmvPlan<T>> {
        let built = start.elapsed();
        plan.report_mut().built_on_gpu = true;
        self.wait()?;
        log::debug!(
            "{method} from GPU buffers: recorded {:?}, done {:?}",
            built,
            start.elapsed()
        );
        plan.report_mut().setup_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(plan)
    }
}

impl<T: Scalar> SpmvPlan<T> {
    /// The method this plan runs (never `Auto`: the choice is resolved when preparing).
    pub fn method(&self) -> Method {
        Method::from_name(self.report().method).expect("plans are reported under a method name")
    }
}
