//! The SpMV methods' parameters: those every method shares ([`PlanOptions`]) and, in each
//! method's module, its own options and the report its plans give ([`SpmvPlan::bccoo`],
//! [`SpmvPlan::speculation`], [`SpmvPlan::suraa`]).
//!
//! Inside the crate, each method is one folder (options, host format, plan, kernels) whose
//! `prepare` returns an [`SpmvPlan`]; this file lists them once, in `registry!`, and resolves
//! `Method::Auto`.

pub mod bccoo;
pub mod cmrs;
pub(crate) mod common;
pub(crate) mod csr;
pub(crate) mod csr_stream;
pub(crate) mod passes;
pub mod speculative;
pub mod suraa;

use crate::gpu::Gpu;
use crate::kernel::Kernel;
pub use crate::kernel::LaneMode;
pub(crate) use crate::method::Method;
use crate::plan::SpmvPlan;
use crate::{CsrMatrix, GpuCsr, Result, Scalar};

/// What the registry ([`crate::method::method_registry!`]) makes here: the list of kernels and
/// the dispatch to each method's folder.
macro_rules! declare_dispatch {
    ($( $variant:ident = $name:literal => $module:ident, )*) => {
        /// Every kernel the library can dispatch, each once.
        pub(crate) fn all_kernels() -> Vec<Kernel> {
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
crate::method::method_registry!(declare_dispatch);

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
    /// (`csr-scalar` and `csr-vector`'s copies, `csr-stream`, `cmrs`, `cmrs-padded`,
    /// `speculative` with its check stage on the GPU, `bccoo` and `bccoo-plus`; see
    /// [`Gpu::prepare_gpu_csr`] for when they have one): the CSR is uploaded as it is and built
    /// as if given on the GPU, without the GPU validation. `suraa` sets up on the GPU by its own
    /// option.
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
    /// setup + this many products. Default: 1000 (`DEFAULT_EXPECTED_PRODUCTS` of the cost
    /// model).
    pub expected_products: Option<u64>,
    /// How `Method::Auto` chooses (profile, timed choice, remembered choices).
    pub auto: crate::profile::AutoOptions,
    /// How many vectors the plan's products will mostly take at once
    /// ([`SpmvPlan::run_spmm`]); above 1, `Method::Auto` chooses among the methods whose format
    /// has an SpMM kernel ([`SpmvPlan::has_spmm_kernel`]: the others run one product per vector).
    /// `None`: one.
    pub spmm_columns: Option<usize>,
    /// `Some(method)`: the plan also runs products with Aᵀ ([`SpmvPlan::transposed`],
    /// [`SpmvPlan::run_transposed`]), through a plan of Aᵀ for `method` (`Method::Auto`: the
    /// method chosen for Aᵀ's own structure) built while preparing, from Aᵀ made on the GPU (a
    /// stable counting sort of the entries by column; on the host where formats are built on the
    /// host, see [`BuildOn`]). It costs that plan's setup and memory, and 4 bytes per entry for
    /// value updates, which keep both in step. `None` (the default): no products with Aᵀ.
    pub transposed: Option<Method>,
}

/// Whether `method`'s format has an SpMM kernel (one that reads each stored entry once for all
/// the vectors), where its plan has no row chunks.
pub(crate) fn has_spmm_kernel(method: Method) -> bool {
    matches!(method, Method::CsrScalar | Method::CsrVector)
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
            Method::CsrStream => csr_stream::builds_from_host(gpu, a, opts)?,
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
    let Some(up) = crate::matrix::UploadedCsr::shared(gpu, a)? else {
        return Ok(None);
    };
    // The uploads are dropped once the plan is built (or, shared with a plan of Aᵀ, once the
    // `prepare` ends), so that the next upload reuses their memory: the plan copies them.
    let opts = &PlanOptions {
        caller_buffers: CallerBuffers::Copy,
        ..opts.clone()
    };
    let upload_ms = start.elapsed().as_secs_f64() * 1e3;
    let plan = match method {
        Method::CsrScalar | Method::CsrVector => {
            csr::prepare_gpu(gpu, &up.view(), up.checked, method, opts, Some(a.row_ptr()))?
        }
        Method::Speculative => {
            speculative::gpu_build::prepare(gpu, &up.view(), method, opts, None)?
        }
        Method::CsrStream => csr_stream::prepare_gpu(gpu, &up.view(), up.checked, method, opts)?,
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

/// Prepares `a` for a concrete `method` (never `Auto`): built on the GPU from `a` uploaded as
/// it is where [`builds_on_gpu`] says so, else on the host; the GPU work done, with its setup
/// time. What `Gpu::prepare_with` runs for a concrete method, and what `Auto` builds its
/// candidates with.
pub(crate) fn prepare_concrete<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    let start = std::time::Instant::now();
    let mut plan = match build_through_gpu(gpu, a, method, opts)? {
        Some(plan) => plan,
        None => prepare_method(gpu, a, method, opts)?,
    };
    gpu.wait()?;
    plan.report_mut().setup_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(plan)
}

/// Prepares a CSR in GPU buffers for a concrete `method` (never `Auto`): validated, then built
/// on the GPU where the method can (see `Gpu::prepare_gpu_csr`), else read back and built on
/// the host. `start`: when the call began, for the setup time.
pub(crate) fn prepare_gpu_concrete<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    method: Method,
    opts: &PlanOptions,
    start: std::time::Instant,
) -> Result<SpmvPlan<T>> {
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
            Method::Speculative => speculative::gpu_build::prepare(gpu, a, method, opts, validate),
            _ => bccoo::gpu_build::prepare(gpu, a, method, opts, validate),
        };
        // A bad matrix is named before anything else that failed (a bad option, memory), as
        // where the check runs first.
        let plan = match plan {
            Err(e) => {
                a.check::<T>(gpu)?;
                return Err(e);
            }
            Ok(plan) => plan,
        };
        if let Some(plan) = plan {
            let mut plan = built_on_gpu(gpu, plan, method, start)?;
            plan.report_mut().validation_ms = validation_ms;
            return Ok(plan);
        }
    }
    let checked = a.check::<T>(gpu)?;
    let validation_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut plan = prepare_gpu_checked::<T>(gpu, a, checked, method, opts, start)?;
    plan.report_mut().validation_ms = validation_ms;
    Ok(plan)
}

/// [`prepare_gpu_concrete`] once `a` is validated.
pub(crate) fn prepare_gpu_checked<T: Scalar>(
    gpu: &Gpu,
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
            csr::prepare_gpu(gpu, a, checked, method, opts, None)?
        }
        Method::Cmrs | Method::CmrsPadded => {
            cmrs::gpu_build::prepare(gpu, a, checked, method, opts)?
        }
        Method::Suraa => suraa::prepare_gpu(gpu, a, checked, method, opts)?,
        Method::CsrStream => csr_stream::prepare_gpu(gpu, a, checked, method, opts)?,
        Method::Speculative => speculative::gpu_build::prepare(gpu, a, method, opts, None)?,
        Method::Bccoo | Method::BccooPlus => bccoo::prepare_gpu(gpu, a, method, opts)?,
        Method::Auto => unreachable!("Auto is resolved before preparing"),
    };
    if let Some(plan) = on_gpu {
        return built_on_gpu(gpu, plan, method, start);
    }
    let host = a.read_back::<T>(gpu)?;
    let mut plan = prepare_concrete(gpu, &host, method, opts)?;
    plan.report_mut().read_back_bytes = a.bytes::<T>().iter().sum();
    plan.report_mut().setup_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(plan)
}

/// A plan built from GPU buffers, once its GPU work is done, with its setup time.
fn built_on_gpu<T: Scalar>(
    gpu: &Gpu,
    mut plan: SpmvPlan<T>,
    method: Method,
    start: std::time::Instant,
) -> Result<SpmvPlan<T>> {
    let built = start.elapsed();
    plan.report_mut().built_on_gpu = true;
    gpu.wait()?;
    log::debug!(
        "{method} from GPU buffers: recorded {:?}, done {:?}",
        built,
        start.elapsed()
    );
    plan.report_mut().setup_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(plan)
}
