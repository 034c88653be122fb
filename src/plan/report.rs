//! One report type for every plan: what it runs, with which parameters, what it cost to build,
//! and for `Method::Auto` the candidates it weighed.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// What a plan is and why: printed by the examples, read by tests and by `Auto`.
#[derive(Clone, Default)]
pub struct Report {
    /// The method's name (`Method::name`).
    pub method: &'static str,
    /// The parameters chosen for this adapter and matrix (lanes, workgroup size, chunks, layout).
    pub parameters: String,
    /// Wall-clock time from `prepare` to a plan ready to run (its GPU work included), in ms.
    pub setup_ms: f64,
    /// Of `setup_ms`, the time spent compiling pipelines, in ms: the first plan of its kind on a
    /// device compiles its kernels (loaded from the pipeline cache where one is kept,
    /// [`Gpu::use_pipeline_cache_dir`](crate::Gpu::use_pipeline_cache_dir)); later ones reuse
    /// them.
    pub compile_ms: f64,
    /// Of `setup_ms`, the time spent timing candidates (tuning, timed `Auto`), in ms.
    pub tuning_ms: f64,
    /// Of `setup_ms`, the time spent validating a matrix given on the GPU
    /// ([`Gpu::prepare_gpu_csr`](crate::Gpu::prepare_gpu_csr)), in ms.
    pub validation_ms: f64,
    /// Bytes of the matrix read back to the host while preparing: 0 unless a matrix given on the
    /// GPU had to be built on the host.
    pub read_back_bytes: u64,
    /// Whether GPU kernels built the plan's arrays (from a matrix given on the GPU, or from a host
    /// CSR uploaded as it is, see [`BuildOn`](crate::BuildOn)) rather than the host.
    pub built_on_gpu: bool,
    /// Of `setup_ms`, what the method's own steps took.
    pub split: SetupSplit,
    /// Bytes of GPU memory the plan's own buffers take.
    pub device_bytes: u64,
    /// Dispatches one product takes.
    pub dispatches: usize,
    /// For `Method::Auto`: the candidates and the choice.
    pub choice: Option<Choice>,
    /// For a plan prepared with [`PlanOptions::transposed`](crate::PlanOptions::transposed):
    /// the report of its plan of Aᵀ (method, setup, memory), whose setup time `setup_ms`
    /// includes and whose memory `device_bytes` does not.
    pub transposed: Option<Box<Report>>,
    /// The method's own report (see the method's accessor on `SpmvPlan`, e.g. `bccoo()`).
    pub(crate) detail: Option<Arc<dyn Any + Send + Sync>>,
}

/// Where a setup's time went, as the method timed its steps on the host clock; the rest of
/// `setup_ms` is compiling pipelines (the first plan of a kind on a device), bookkeeping and
/// waiting for the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SetupSplit {
    /// Reading the structure: row statistics, chunks, long rows, layout choices, sorting rows.
    pub analysis_ms: f64,
    /// Building the format: on the host, or (from a matrix in GPU buffers) on the GPU.
    pub build_ms: f64,
    /// Creating the plan's buffers and filling them (host arrays uploaded, or GPU copies).
    pub upload_ms: f64,
}

/// Times a setup's steps into a [`SetupSplit`]: each call charges the time since the last one,
/// less what the device spent compiling pipelines meanwhile (once per device, not per plan).
pub(crate) struct Phases {
    gpu: crate::gpu::Gpu,
    last: std::time::Instant,
    compiled_ns: u64,
    pub split: SetupSplit,
}

impl Phases {
    pub(crate) fn start(gpu: &crate::gpu::Gpu) -> Self {
        Self {
            gpu: gpu.clone(),
            last: std::time::Instant::now(),
            compiled_ns: gpu.compile_ns(),
            split: SetupSplit::default(),
        }
    }

    fn take(&mut self) -> f64 {
        let (now, compiled) = (std::time::Instant::now(), self.gpu.compile_ns());
        let ns = (now - self.last).as_nanos() as u64;
        let compiling = compiled - self.compiled_ns;
        (self.last, self.compiled_ns) = (now, compiled);
        ns.saturating_sub(compiling) as f64 / 1e6
    }

    /// The time since the last step was analysis.
    pub(crate) fn analysis(&mut self) {
        self.split.analysis_ms += self.take();
    }

    /// The time since the last step was the format build.
    pub(crate) fn build(&mut self) {
        self.split.build_ms += self.take();
    }

    /// The time since the last step was the upload.
    pub(crate) fn upload(&mut self) {
        self.split.upload_ms += self.take();
    }
}

/// How `Method::Auto` chose: every candidate with its predicted (and, if timed, measured) cost.
#[derive(Clone, Debug, Default)]
pub struct Choice {
    /// Every method the profile models, best predicted total first.
    pub candidates: Vec<Candidate>,
    /// The products the choice was made for (`PlanOptions::expected_products`).
    pub expected_products: f64,
    /// The cost model profile used (e.g. `generic`, `nvidia`, or a calibrated file).
    pub profile: String,
    /// Whether the candidates were timed on the device (`Some` measured times) or only predicted.
    pub timed: bool,
    /// Whether the choice was remembered from an earlier one for the same matrix and adapter.
    pub remembered: bool,
    /// Whether the matrix is smaller than every one the profile was fitted on (where a choice
    /// for many products is timed, the model's being an extrapolation there).
    pub below_data: bool,
}

/// One method `Auto` considered.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The method's name (as [`Method::name`](crate::Method::name) gives it).
    pub method: &'static str,
    /// The model's prediction of the setup (format build and upload), in ms.
    pub predicted_setup_ms: f64,
    /// The model's prediction of one product, in ms.
    pub predicted_product_ms: f64,
    /// One product's time as measured on the device, in ms; `None` unless it was timed.
    pub measured_product_ms: Option<f64>,
}

impl Candidate {
    /// Setup plus `products` products, by the model.
    pub fn predicted_total_ms(&self, products: f64) -> f64 {
        self.predicted_setup_ms + products * self.predicted_product_ms
    }
}

impl Report {
    /// Setup time in products of `product_ms` each (the plan's own product time, once measured).
    pub fn setup_products(&self, product_ms: f64) -> f64 {
        self.setup_ms / product_ms.max(1e-9)
    }

    /// The method's own report, if it has one of type `R`.
    pub(crate) fn detail<R: Any + Send + Sync>(&self) -> Option<&R> {
        self.detail.as_deref().and_then(|d| d.downcast_ref())
    }
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Report")
            .field("method", &self.method)
            .field("parameters", &self.parameters)
            .field("setup_ms", &self.setup_ms)
            .field("compile_ms", &self.compile_ms)
            .field("tuning_ms", &self.tuning_ms)
            .field("validation_ms", &self.validation_ms)
            .field("read_back_bytes", &self.read_back_bytes)
            .field("built_on_gpu", &self.built_on_gpu)
            .field("split", &self.split)
            .field("device_bytes", &self.device_bytes)
            .field("dispatches", &self.dispatches)
            .field("choice", &self.choice)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}); setup {:.2} ms",
            self.method, self.parameters, self.setup_ms
        )?;
        if self.compile_ms > 0.0 {
            write!(f, " (compiling pipelines {:.2} ms)", self.compile_ms)?;
        }
        if self.tuning_ms > 0.0 {
            write!(f, " (tuning {:.2} ms)", self.tuning_ms)?;
        }
        let sp = &self.split;
        if sp.analysis_ms + sp.build_ms + sp.upload_ms > 0.0 {
            write!(
                f,
                " (analysis {:.2}, build {:.2}, upload {:.2} ms)",
                sp.analysis_ms, sp.build_ms, sp.upload_ms
            )?;
        }
        if self.validation_ms > 0.0 {
            write!(f, " (GPU validation {:.2} ms)", self.validation_ms)?;
        }
        if self.built_on_gpu {
            write!(f, "; built on the GPU")?;
        }
        if self.read_back_bytes > 0 {
            write!(
                f,
                "; read {} bytes back to build on the host",
                self.read_back_bytes
            )?;
        }
        write!(
            f,
            "; {:.1} MiB on the device; {} dispatches",
            self.device_bytes as f64 / (1u64 << 20) as f64,
            self.dispatches
        )?;
        if let Some(c) = &self.choice {
            write!(
                f,
                "\nauto ({} profile, {} products{}{}):",
                c.profile,
                c.expected_products,
                if c.timed { ", timed" } else { "" },
                if c.remembered { ", remembered" } else { "" }
            )?;
            for k in &c.candidates {
                write!(
                    f,
                    "\n  {:<12} setup {:>10.3} ms  product {:>9.4} ms",
                    k.method, k.predicted_setup_ms, k.predicted_product_ms
                )?;
                if let Some(m) = k.measured_product_ms {
                    write!(f, "  measured {m:.4} ms")?;
                }
            }
        }
        Ok(())
    }
}
