//! `SpmvPlan`: a matrix prepared on the GPU for one method, as a list of dispatch stages that
//! every method shares the recording, running and timing code of.

use crate::gpu::{Gpu, GpuVector, Timing};
use crate::methods::{Method, PlanOptions};
use crate::{CsrMatrix, Error, Result, Scalar};
use std::marker::PhantomData;
use std::sync::Arc;

/// What one binding slot of a stage is bound to.
pub(crate) enum Binding {
    /// A buffer the plan owns (matrix arrays, per-chunk parameters).
    Owned(Arc<wgpu::Buffer>),
    /// The caller's input vector.
    X,
    /// The caller's output vector.
    Y,
    /// The per-call α/β uniform.
    Coeffs,
}

/// One dispatch: a pipeline, its bindings in slot order, and a grid.
pub(crate) struct Stage {
    pub pipeline: Arc<wgpu::ComputePipeline>,
    pub bindings: Vec<Binding>,
    pub grid: [u32; 2],
}

/// A sparse matrix uploaded for one method, ready to multiply vectors on its GPU.
pub struct SpmvPlan<T> {
    gpu: Gpu,
    method: Method,
    nrows: usize,
    ncols: usize,
    nnz: usize,
    stages: Vec<Stage>,
    details: String,
    device_bytes: u64,
    _t: PhantomData<T>,
}

impl<T: Scalar> SpmvPlan<T> {
    pub(crate) fn new(gpu: &Gpu, method: Method, a: &CsrMatrix<T>, stages: Vec<Stage>, details: String) -> Self {
        let device_bytes = stages
            .iter()
            .flat_map(|s| &s.bindings)
            .filter_map(|b| match b {
                Binding::Owned(buf) => Some(buf.size()),
                _ => None,
            })
            .sum();
        Self { gpu: gpu.clone(), method, nrows: a.nrows(), ncols: a.ncols(), nnz: a.nnz(), stages, details, device_bytes, _t: PhantomData }
    }

    /// The same plan reported as `method` (a method that reduces to another's kernel).
    pub(crate) fn relabel(mut self, method: Method, details: String) -> Self {
        self.method = method;
        self.details = details;
        self
    }

    /// The method this plan runs (never `Auto`: the choice is resolved when preparing).
    pub fn method(&self) -> Method {
        self.method
    }
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// The parameters chosen for this adapter and matrix (lanes, workgroup size, chunks).
    pub fn details(&self) -> &str {
        &self.details
    }
    /// Bytes of GPU memory the plan's own buffers take.
    pub fn device_bytes(&self) -> u64 {
        self.device_bytes
    }
    /// Number of dispatches one product takes.
    pub fn dispatches(&self) -> usize {
        self.stages.len()
    }

    fn check(&self, x: &GpuVector<T>, y: &GpuVector<T>) -> Result<()> {
        if x.gpu.inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice { what: "x" });
        }
        if y.gpu.inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice { what: "y" });
        }
        if x.len() != self.ncols {
            return Err(Error::DimensionMismatch { what: "x", expected: self.ncols, actual: x.len() });
        }
        if y.len() != self.nrows {
            return Err(Error::DimensionMismatch { what: "y", expected: self.nrows, actual: y.len() });
        }
        Ok(())
    }

    /// Bind groups for one call, created once and reused across repetitions.
    fn bind(&self, x: &GpuVector<T>, y: &GpuVector<T>, alpha: T, beta: T) -> Vec<wgpu::BindGroup> {
        // Mirrors `struct Coeffs { alpha: scalar, beta: scalar }` in shaders/common.wgsl.
        let coeffs = self.gpu.uniform_buffer("wgspmv coeffs", bytemuck::cast_slice(&[alpha, beta]));
        self.stages
            .iter()
            .map(|s| {
                let entries: Vec<wgpu::BindGroupEntry> = s
                    .bindings
                    .iter()
                    .enumerate()
                    .map(|(i, b)| wgpu::BindGroupEntry {
                        binding: i as u32,
                        resource: match b {
                            Binding::Owned(buf) => buf.as_entire_binding(),
                            Binding::X => x.buffer.as_entire_binding(),
                            Binding::Y => y.buffer.as_entire_binding(),
                            Binding::Coeffs => coeffs.as_entire_binding(),
                        },
                    })
                    .collect();
                self.gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("wgspmv stage"),
                    layout: &s.pipeline.get_bind_group_layout(0),
                    entries: &entries,
                })
            })
            .collect()
    }

    fn encode(&self, pass: &mut wgpu::ComputePass<'_>, groups: &[wgpu::BindGroup]) {
        for (s, g) in self.stages.iter().zip(groups) {
            pass.set_pipeline(&s.pipeline);
            pass.set_bind_group(0, g, &[]);
            pass.dispatch_workgroups(s.grid[0], s.grid[1], 1);
        }
    }

    /// Records `y = α·A·x + β·y` into the caller's encoder (nothing is submitted). With β = 0,
    /// `y` is not read, so it may hold anything, NaN included.
    pub fn record_axpby(&self, encoder: &mut wgpu::CommandEncoder, alpha: T, x: &GpuVector<T>, beta: T, y: &mut GpuVector<T>) -> Result<()> {
        self.check(x, y)?;
        let groups = self.bind(x, y, alpha, beta);
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("wgspmv spmv"), timestamp_writes: None });
        self.encode(&mut pass, &groups);
        Ok(())
    }

    /// Records `y = A·x` into the caller's encoder.
    pub fn record(&self, encoder: &mut wgpu::CommandEncoder, x: &GpuVector<T>, y: &mut GpuVector<T>) -> Result<()> {
        self.record_axpby(encoder, T::from_f64(1.0), x, T::from_f64(0.0), y)
    }

    /// Computes `y = α·A·x + β·y` on the GPU (submitted; the result stays on the GPU).
    pub fn run_axpby(&self, alpha: T, x: &GpuVector<T>, beta: T, y: &mut GpuVector<T>) -> Result<()> {
        self.gpu.scoped("running SpMV", || -> Result<()> {
            let mut enc = self.gpu.device().create_command_encoder(&Default::default());
            self.record_axpby(&mut enc, alpha, x, beta, y)?;
            self.gpu.queue().submit([enc.finish()]);
            Ok(())
        })?
    }

    /// Computes `y = A·x` on the GPU (submitted; the result stays on the GPU).
    pub fn run(&self, x: &GpuVector<T>, y: &mut GpuVector<T>) -> Result<()> {
        self.run_axpby(T::from_f64(1.0), x, T::from_f64(0.0), y)
    }

    /// Mean time of one `y = A·x` over `repeats` back-to-back products in one submission.
    pub fn time(&self, x: &GpuVector<T>, y: &mut GpuVector<T>, repeats: u32) -> Result<Timing> {
        self.check(x, y)?;
        let groups = self.bind(x, y, T::from_f64(1.0), T::from_f64(0.0));
        self.gpu.time_pass(repeats, |pass| self.encode(pass, &groups))
    }

    /// Bytes one product must move at least: values, column indices, row pointers, x and y,
    /// each once (the traffic GB/s figures are computed from, as for cuSPARSE).
    pub fn minimal_traffic_bytes(&self) -> u64 {
        minimal_traffic_bytes::<T>(self.nrows, self.ncols, self.nnz)
    }
}

/// See [`SpmvPlan::minimal_traffic_bytes`].
pub fn minimal_traffic_bytes<T>(nrows: usize, ncols: usize, nnz: usize) -> u64 {
    let s = std::mem::size_of::<T>() as u64;
    nnz as u64 * (s + 4) + (nrows as u64 + 1) * 4 + ncols as u64 * s + nrows as u64 * s
}

impl Gpu {
    /// Prepares `a` for `method` with parameters chosen for this adapter.
    pub fn prepare<T: Scalar>(&self, a: &CsrMatrix<T>, method: Method) -> Result<SpmvPlan<T>> {
        self.prepare_with(a, method, &PlanOptions::default())
    }

    /// Prepares `a` for `method` with explicit options.
    pub fn prepare_with<T: Scalar>(&self, a: &CsrMatrix<T>, method: Method, opts: &PlanOptions) -> Result<SpmvPlan<T>> {
        self.check_scalar::<T>()?;
        let method = match method {
            Method::Auto => crate::select::choose(&a.row_stats(), self.info()),
            m => m,
        };
        match method {
            Method::CsrScalar | Method::CsrVector => crate::methods::csr::prepare(self, a, method, opts),
            Method::Cmrs | Method::CmrsPadded => crate::methods::cmrs::prepare(self, a, method, opts),
            Method::Auto => unreachable!("select::choose returns a concrete method"),
        }
    }
}
