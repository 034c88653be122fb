//! `SpmvPlan`: a matrix prepared on the GPU, as a list of dispatch stages (pipeline, bindings,
//! grid), an optional host stage and one [`Report`]. Every method shares this recording, running
//! and timing code; nothing here knows which method built the stages.

mod report;
mod spmm;
mod transpose;
pub(crate) mod values;

pub(crate) use report::Phases;
pub use report::{Candidate, Choice, Report, SetupSplit};
pub(crate) use spmm::{DenseShape, SpmmProgram};

use crate::gpu::{Coefficients, DeviceBuffer, Gpu, GpuVector, StagePipeline, Timing};
use crate::{Error, Result, Scalar};
use std::marker::PhantomData;
use std::sync::Arc;

/// What one binding slot of a stage is bound to.
#[derive(Clone)]
pub(crate) enum Binding {
    /// A buffer the plan owns (matrix arrays, per-chunk parameters).
    Owned(Arc<DeviceBuffer>),
    /// The caller's input vector.
    X,
    /// The caller's output vector.
    Y,
    /// The product's α and β (see [`CoeffSource`]).
    Coeffs,
}

/// Where a product's α and β are read from.
#[derive(Clone, Copy)]
enum CoeffSource<'a, T> {
    /// Values for a product the plan submits: written into the plan's own buffer first, where
    /// they differ from what it holds (so products of other values bind nothing new).
    Plan(T, T),
    /// Values for a product recorded into the caller's encoder: a small buffer per pair, kept
    /// with the bind groups (the plan's buffer may change before the caller submits).
    Pair(T, T),
    /// The caller's buffer, read when the product runs.
    Caller(&'a Coefficients<T>),
}

/// What one product reads and writes.
struct Operands<'a, T> {
    x: &'a GpuVector<T>,
    y: &'a GpuVector<T>,
    coeffs: CoeffSource<'a, T>,
}

/// The bytes of the buffers `stages` own; a buffer bound in several slots or stages counts once.
fn owned_bytes(stages: &[Stage]) -> u64 {
    let mut owned: Vec<&Arc<DeviceBuffer>> = stages
        .iter()
        .flat_map(|s| &s.bindings)
        .filter_map(|b| match b {
            Binding::Owned(buf) => Some(buf),
            _ => None,
        })
        .collect();
    owned.sort_by_key(|b| Arc::as_ptr(b));
    owned.dedup_by(|a, b| Arc::ptr_eq(a, b));
    owned.iter().map(|b| b.size()).sum()
}

/// How many workgroups a stage dispatches.
#[derive(Clone)]
pub(crate) enum Grid {
    /// A grid known when the plan is built (see [`Gpu::grid`]).
    Direct([u32; 2]),
    /// Read by the GPU from `(buffer, byte offset)`, where an earlier GPU pass wrote it
    /// (`dispatch_workgroups_indirect`).
    Indirect(Arc<DeviceBuffer>, u64),
}

/// One dispatch: a pipeline, its bindings in slot order, and a grid.
#[derive(Clone)]
pub(crate) struct Stage {
    pub pipeline: StagePipeline,
    pub bindings: Vec<Binding>,
    pub grid: Grid,
}

/// A stage that runs on the host after the GPU stages (the speculative method's check stage).
pub(crate) trait HostStage<T>: Send + Sync {
    /// Finishes a product whose GPU stages (`HostPath::stages`) were submitted.
    fn finish(&self, gpu: &Gpu, alpha: T, beta: T, y: &mut GpuVector<T>) -> Result<()>;
    /// Whether the stage can read and write `y` (a caller's buffer may lack the usages it
    /// needs); where it cannot, `run` takes the all-GPU stages instead.
    fn serves(&self, y: &wgpu::Buffer) -> bool;
}

/// How `run` finishes on the host: the GPU stages it submits first, then the host stage.
/// Recording into a caller's encoder always uses the plan's all-GPU `stages` instead.
pub(crate) struct HostPath<T> {
    pub stages: Vec<Stage>,
    pub stage: Box<dyn HostStage<T>>,
    /// Held from submitting `stages` to the end of the host stage: both use the plan's scratch
    /// buffers, so products from several threads take turns.
    pub turn: std::sync::Mutex<()>,
}

/// A sparse matrix uploaded for one method, ready to multiply vectors on its GPU.
///
/// A plan keeps the bind groups of its last few calls (per `x`, `y`, α and β), so repeated
/// products create no GPU objects; those keep the vectors' buffers alive until they are evicted
/// or the plan is dropped.
///
/// # Sharing
///
/// - A plan is `Send + Sync`: every method of it (`run`, `run_axpby`, `submit`, `record`, their
///   `_with` forms, `run_spmm*`, `record_spmm_axpby`, `time`, `update_values*`,
///   `record_update_values`, `report`) may be called from any number of threads at once, each
///   product with its own output. The plan's scratch buffers are
///   used by one product at a time: products reach the GPU through the one queue in the order
///   they are submitted (or, for `record`, in the order the caller submits its encoders), and
///   a plan whose `run` finishes on the host ([`finishes_on_host`](Self::finishes_on_host))
///   gives that path scratch of its own and lets one such `run` hold it at a time.
/// - An input `x` may be read by several products at once. An output must be another buffer than
///   the input (a typed error otherwise). Two products writing one buffer (two vectors wrapping
///   it with [`GpuVector::from_buffer`]) leave whichever ran last.
/// - A value update takes effect for the products submitted after it: each product sees all the
///   old values or all the new ones.
/// - A [`Gpu`] is shared by cloning it; plans and vectors of one `Gpu` may be used from any
///   thread. A panic in a caller's thread leaves no lock of the `Gpu` or the plan unusable.
/// - On wgpu's GL backend, a thread that submits a recorded product (or calls wgpu on the
///   device otherwise) while other threads use `wgspmv` on it holds [`Gpu::turn`] for those
///   calls: wgpu panics in a thread that waits 6 s for GL's one context.
pub struct SpmvPlan<T> {
    gpu: Gpu,
    nrows: usize,
    ncols: usize,
    nnz: usize,
    stages: Vec<Stage>,
    host: Option<HostPath<T>>,
    report: Report,
    /// Where the format keeps the values, for `update_values`.
    values: values::ValueLayout,
    /// Bind groups of recent calls, so that a solver's repeated products create none.
    bound: std::sync::Mutex<Vec<(BindKey, Arc<Bound>)>>,
    /// The α and β of the products the plan submits, and (locked from the write to the
    /// submission) the bits of the pair it holds.
    coeffs: wgpu::Buffer,
    coeffs_hold: std::sync::Mutex<(u64, u64)>,
    /// The format's SpMM program, if it has one, and its stages for recent shapes.
    spmm: Option<Arc<dyn SpmmProgram<T>>>,
    spmm_programs: spmm::SpmmPrograms,
    /// The vectors SpMM by columns runs through, made at its first use.
    spmm_scratch: spmm::SpmmScratch<T>,
    /// Set once the plan's buffers are kept out of the pool (the first recording).
    kept_out: std::sync::Once,
    /// The plan of Aᵀ, where the plan was prepared for transposed products.
    transposed: Option<Box<transpose::Transposed<T>>>,
    /// Whether this plan is the plan of Aᵀ another plan holds (its updates come from there).
    is_transpose: bool,
    _t: PhantomData<T>,
}

/// The bind groups of one call's stages and the pipeline each runs with; kept for later calls
/// with the same [`BindKey`].
struct Bound {
    groups: Vec<wgpu::BindGroup>,
    pipelines: Vec<Arc<wgpu::ComputePipeline>>,
    /// Per stage: whether it takes α and β as immediate data.
    immediate: Vec<bool>,
}

/// One call's bindings and, for stages that take them as immediate data, α and β.
struct Call<T> {
    bound: Arc<Bound>,
    /// `[α, β]` (`struct Coeffs` in shaders/shared/common.wgsl); unused where no stage takes
    /// them as immediate data.
    coeffs: [T; 2],
}

/// What a call's bind groups depend on: the vectors, the coefficients' buffer, and which stages.
#[derive(PartialEq)]
struct BindKey {
    x: wgpu::Buffer,
    y: wgpu::Buffer,
    coeffs: CoeffKey,
    /// Which stages: [`MAIN`], [`HOST_PATH`], or an operation's program.
    program: u64,
}

/// The plan's all-GPU stages, in a [`BindKey`].
const MAIN: u64 = 0;
/// The GPU stages of the host path, in a [`BindKey`].
const HOST_PATH: u64 = 1;

/// The coefficients' part of a [`BindKey`].
#[derive(PartialEq)]
enum CoeffKey {
    /// α and β as immediate data, whatever their values.
    Immediate,
    Plan,
    Pair(u64, u64),
    Caller(wgpu::Buffer),
}

/// The bits of a pair of coefficients.
fn bits<T: Scalar>(alpha: T, beta: T) -> (u64, u64) {
    (alpha.to_f64().to_bits(), beta.to_f64().to_bits())
}

/// Calls whose bind groups a plan keeps (each keeps its vectors' buffers alive while cached).
const BOUND_CALLS: usize = 8;

impl<T: Scalar> SpmvPlan<T> {
    /// A plan of `stages` for a `nrows` × `ncols` matrix with `nnz` entries, reported as the
    /// method named `method` with `parameters`.
    pub(crate) fn new(
        gpu: &Gpu,
        (nrows, ncols, nnz): (usize, usize, usize),
        stages: Vec<Stage>,
        method: &'static str,
        parameters: String,
    ) -> Self {
        let device_bytes = owned_bytes(&stages);
        let report = Report {
            method,
            parameters,
            device_bytes,
            dispatches: stages.len(),
            ..Report::default()
        };
        let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
        let coeffs = {
            use wgpu::util::DeviceExt;
            gpu.device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("wgspmv plan coefficients"),
                    contents: bytemuck::cast_slice(&[one, zero]),
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                })
        };
        Self {
            gpu: gpu.clone(),
            nrows,
            ncols,
            nnz,
            stages,
            host: None,
            report,
            values: Default::default(),
            bound: Default::default(),
            coeffs,
            coeffs_hold: std::sync::Mutex::new(bits(one, zero)),
            spmm: None,
            spmm_programs: Default::default(),
            spmm_scratch: Default::default(),
            kept_out: std::sync::Once::new(),
            transposed: None,
            is_transpose: false,
            _t: PhantomData,
        }
    }

    /// Makes `run` submit `host.stages` and finish with `host.stage` on the host.
    pub(crate) fn with_host_path(mut self, host: HostPath<T>) -> Self {
        let both: Vec<Stage> = self.stages.iter().chain(&host.stages).cloned().collect();
        self.report.device_bytes = owned_bytes(&both);
        self.host = Some(host);
        self
    }

    /// Whether `run` finishes on the host (the speculative method's host check stage).
    pub fn finishes_on_host(&self) -> bool {
        self.host.is_some()
    }

    /// What the plan is, what it chose and why, and what it cost to build.
    pub fn report(&self) -> &Report {
        &self.report
    }

    pub(crate) fn report_mut(&mut self) -> &mut Report {
        &mut self.report
    }

    pub(crate) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Rows of the matrix (the length of `y`).
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns of the matrix (the length of `x`).
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Stored entries of the matrix the plan was built from.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// The parameters chosen for this adapter and matrix (lanes, workgroup size, chunks).
    pub fn details(&self) -> &str {
        &self.report.parameters
    }
    /// Bytes of GPU memory the plan's own buffers take.
    pub fn device_bytes(&self) -> u64 {
        self.report.device_bytes
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
        crate::gpu::check_not_aliased(&x.buffer, &y.buffer)?;
        if x.len() != self.ncols {
            return Err(Error::DimensionMismatch {
                what: "x",
                expected: self.ncols,
                actual: x.len(),
            });
        }
        if y.len() != self.nrows {
            return Err(Error::DimensionMismatch {
                what: "y",
                expected: self.nrows,
                actual: y.len(),
            });
        }
        Ok(())
    }

    /// Bind groups for one call: those of an earlier call with the same vectors and
    /// coefficients' buffer, or new ones (kept for the next calls).
    fn bind(&self, stages: &[Stage], program: u64, ops: &Operands<'_, T>) -> Result<Call<T>> {
        let pair = match ops.coeffs {
            CoeffSource::Plan(a, b) | CoeffSource::Pair(a, b) => Some([a, b]),
            CoeffSource::Caller(_) => None,
        };
        let call = |bound| Call {
            bound,
            coeffs: pair.unwrap_or([T::from_f64(0.0); 2]),
        };
        // y = A·x keeps the bound form and a constant pair, as on a device without immediates.
        let unit = bits(T::from_f64(1.0), T::from_f64(0.0));
        let immediate =
            pair.is_some_and(|[a, b]| bits(a, b) != unit) && Self::takes_immediate_coeffs(stages);
        let key = BindKey {
            x: ops.x.buffer.clone(),
            y: ops.y.buffer.clone(),
            coeffs: match ops.coeffs {
                _ if immediate => CoeffKey::Immediate,
                CoeffSource::Plan(..) => CoeffKey::Plan,
                CoeffSource::Pair(a, b) => {
                    let (a, b) = bits(a, b);
                    CoeffKey::Pair(a, b)
                }
                CoeffSource::Caller(c) => CoeffKey::Caller(c.buffer().clone()),
            },
            program,
        };
        {
            let mut bound = crate::lock(&self.bound);
            if let Some(i) = bound.iter().position(|(k, _)| *k == key) {
                let hit = bound.remove(i);
                let found = hit.1.clone();
                bound.push(hit);
                return Ok(call(found));
            }
        }
        // Unlocked from here: a form compiled at its first use keeps no other call waiting. Per
        // stage, the pipeline and whether it takes α and β as immediate data.
        let mut pipelines = Vec::with_capacity(stages.len());
        let mut immediates = Vec::with_capacity(stages.len());
        for s in stages {
            let imm = immediate && s.pipeline.takes_immediates();
            pipelines.push(if imm {
                s.pipeline.immediate_form(&self.gpu)?
            } else {
                s.pipeline.main().clone()
            });
            immediates.push(imm);
        }
        // In an error scope: a bind group wgpu refuses is a typed error here, not a panic at the
        // caller's `finish` (`record`) or in wgpu's default handler.
        let groups = self.gpu.scoped("binding a product's buffers", || {
            self.create_bind_groups(stages, &pipelines, &immediates, ops)
        })?;
        let found = Arc::new(Bound {
            groups,
            pipelines,
            immediate: immediates,
        });
        let mut bound = crate::lock(&self.bound);
        if bound.len() == BOUND_CALLS {
            bound.remove(0);
        }
        bound.push((key, found.clone()));
        Ok(call(found))
    }

    /// Whether every stage that reads α and β can take them as immediate data (the device has
    /// `Features::IMMEDIATES`), so that a pair from the host needs no buffer.
    fn takes_immediate_coeffs(stages: &[Stage]) -> bool {
        let reads = |s: &Stage| s.bindings.iter().any(|b| matches!(b, Binding::Coeffs));
        debug_assert!(
            stages
                .iter()
                .all(|s| reads(s) || !s.pipeline.takes_immediates()),
            "a stage with immediate α and β must bind `Binding::Coeffs` in their place"
        );
        stages.iter().any(|s| s.pipeline.takes_immediates())
            && stages
                .iter()
                .all(|s| s.pipeline.takes_immediates() || !reads(s))
    }

    fn create_bind_groups(
        &self,
        stages: &[Stage],
        pipelines: &[Arc<wgpu::ComputePipeline>],
        immediate: &[bool],
        ops: &Operands<'_, T>,
    ) -> Vec<wgpu::BindGroup> {
        // Mirrors `struct Coeffs { alpha: scalar, beta: scalar }` in shaders/shared/common.wgsl.
        let pair;
        let coeffs = match ops.coeffs {
            _ if immediate.iter().all(|&i| i) => None,
            CoeffSource::Plan(..) => Some(self.coeffs.as_entire_binding()),
            CoeffSource::Pair(alpha, beta) => {
                pair = self
                    .gpu
                    .uniform_buffer("wgspmv coeffs", bytemuck::cast_slice(&[alpha, beta]));
                Some(pair.as_entire_binding())
            }
            CoeffSource::Caller(c) => Some(c.buffer().as_entire_binding()),
        };
        stages
            .iter()
            .zip(pipelines)
            .zip(immediate)
            .map(|((s, pipeline), &imm)| {
                // A stage taking α and β as immediate data has no `coeffs` binding.
                let entries: Vec<wgpu::BindGroupEntry> = s
                    .bindings
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| {
                        let resource = match b {
                            Binding::Owned(buf) => buf.as_entire_binding(),
                            Binding::X => ops.x.buffer.as_entire_binding(),
                            Binding::Y => ops.y.buffer.as_entire_binding(),
                            Binding::Coeffs if imm => return None,
                            Binding::Coeffs => coeffs.clone()?,
                        };
                        Some(wgpu::BindGroupEntry {
                            binding: i as u32,
                            resource,
                        })
                    })
                    .collect();
                self.gpu
                    .device()
                    .create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("wgspmv stage"),
                        layout: &pipeline.get_bind_group_layout(0),
                        entries: &entries,
                    })
            })
            .collect()
    }

    /// Submits `stages` for `ops` in one command buffer; for coefficients the plan holds, after
    /// writing them where they differ, the write and the submission in one turn of the plan's
    /// coefficient lock (so that no other product's write comes between).
    fn submit_product(
        &self,
        what: &'static str,
        stages: &[Stage],
        program: u64,
        ops: &Operands<'_, T>,
    ) -> Result<wgpu::SubmissionIndex> {
        let groups = self.bind(stages, program, ops)?;
        // The plan's buffer is written only for stages that bind it.
        let binds_buffer = !groups.bound.immediate.iter().any(|&i| i)
            && stages
                .iter()
                .any(|s| s.bindings.iter().any(|b| matches!(b, Binding::Coeffs)));
        let _hold = match ops.coeffs {
            CoeffSource::Plan(alpha, beta) if binds_buffer => {
                let mut held = crate::lock(&self.coeffs_hold);
                if *held != bits(alpha, beta) {
                    self.gpu.queue().write_buffer(
                        &self.coeffs,
                        0,
                        bytemuck::cast_slice(&[alpha, beta]),
                    );
                    *held = bits(alpha, beta);
                }
                Some(held)
            }
            _ => None,
        };
        self.gpu.scoped(what, || {
            let mut enc = self
                .gpu
                .device()
                .create_command_encoder(&Default::default());
            Self::record_stages(stages, groups, &mut enc);
            self.gpu.submit([enc.finish()])
        })
    }

    fn encode(stages: &[Stage], pass: &mut wgpu::ComputePass<'_>, call: &Call<T>) {
        let b = &call.bound;
        for (((s, g), p), &imm) in stages
            .iter()
            .zip(&b.groups)
            .zip(&b.pipelines)
            .zip(&b.immediate)
        {
            pass.set_pipeline(p);
            // After the pipeline: setting one clears the pass's immediate data.
            if imm {
                pass.set_immediates(0, bytemuck::cast_slice(&call.coeffs));
            }
            pass.set_bind_group(0, g, &[]);
            match &s.grid {
                Grid::Direct([x, y]) => pass.dispatch_workgroups(*x, *y, 1),
                Grid::Indirect(buf, offset) => pass.dispatch_workgroups_indirect(buf, *offset),
            }
        }
    }

    /// Records `y = α·A·x + β·y` into the caller's encoder (nothing is submitted). With β = 0,
    /// `y` is not read, so it may hold anything, NaN included.
    pub fn record_axpby(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        alpha: T,
        x: &GpuVector<T>,
        beta: T,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        self.record_operands(
            encoder,
            &Operands {
                x,
                y,
                coeffs: CoeffSource::Pair(alpha, beta),
            },
        )
    }

    /// Records `y = α·A·x + β·y` into the caller's encoder, α and β read from `coeffs` when
    /// the work runs: the same bind groups whatever they hold (see [`Coefficients`]).
    pub fn record_with(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        coeffs: &Coefficients<T>,
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        self.check_coeffs(coeffs)?;
        self.record_operands(
            encoder,
            &Operands {
                x,
                y,
                coeffs: CoeffSource::Caller(coeffs),
            },
        )
    }

    /// Records `y = A·x` into a compute pass the caller has open, among its own dispatches
    /// (wgpu orders them: each dispatch sees the writes of those before it). For loops of many
    /// products and small kernels: wgpu gives every pass command buffers of its own, which
    /// cost the host and the GPU time per pass (docs/operations.md). Same checks as
    /// [`record`](Self::record); the plan's buffers stay out of the pool once recorded.
    pub fn record_in_pass(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        let _turn = self.gpu.gl_turn();
        let ops = Operands {
            x,
            y,
            coeffs: CoeffSource::Pair(T::from_f64(1.0), T::from_f64(0.0)),
        };
        let groups = self.groups_to_record(&ops)?;
        Self::encode(&self.stages, pass, &groups);
        Ok(())
    }

    fn record_operands(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        ops: &Operands<'_, T>,
    ) -> Result<()> {
        let _turn = self.gpu.gl_turn();
        let groups = self.groups_to_record(ops)?;
        Self::record_stages(&self.stages, groups, encoder);
        Ok(())
    }

    /// The bind groups of a product recorded for the caller to submit (into its encoder or
    /// pass): the operands checked, the plan's buffers kept out of the pool.
    fn groups_to_record(&self, ops: &Operands<'_, T>) -> Result<Call<T>> {
        self.check(ops.x, ops.y)?;
        self.keep_out_of_pool();
        self.bind(&self.stages, MAIN, ops)
    }

    fn check_coeffs(&self, coeffs: &Coefficients<T>) -> Result<()> {
        if coeffs.gpu().inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice {
                what: "coefficients",
            });
        }
        Ok(())
    }

    /// Keeps the plan's buffers from being lent to another plan once it is dropped: work recorded
    /// into a caller's encoder may run after that. Also flushes the clears owed to reused buffers,
    /// which must run before the caller's work. Once per plan: its buffers are set at build.
    pub(crate) fn keep_out_of_pool(&self) {
        self.kept_out.call_once(|| self.mark_kept_out());
    }

    fn mark_kept_out(&self) {
        let stages = self.stages.iter();
        for stage in stages.chain(self.host.iter().flat_map(|h| &h.stages)) {
            for b in &stage.bindings {
                if let Binding::Owned(buf) = b {
                    buf.keep_out_of_pool();
                }
            }
            if let Grid::Indirect(buf, _) = &stage.grid {
                buf.keep_out_of_pool();
            }
        }
        self.values.keep_out_of_pool();
        if let Some(t) = &self.transposed {
            t.plan.keep_out_of_pool();
        }
        self.gpu.flush_clears();
    }

    fn record_stages(stages: &[Stage], groups: Call<T>, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgspmv spmv"),
            timestamp_writes: None,
        });
        Self::encode(stages, &mut pass, &groups);
    }

    /// Records `y = A·x` into the caller's encoder.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        self.record_axpby(encoder, T::from_f64(1.0), x, T::from_f64(0.0), y)
    }

    /// Computes `y = α·A·x + β·y` on the GPU (submitted; the result stays on the GPU). A plan
    /// that finishes on the host ([`finishes_on_host`](Self::finishes_on_host)) returns once
    /// the host stage is done.
    pub fn run_axpby(
        &self,
        alpha: T,
        x: &GpuVector<T>,
        beta: T,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        let _turn = self.gpu.gl_turn();
        self.check(x, y)?;
        let host = self.host_path_for(y);
        // A panic elsewhere cannot leave the scratch buffers half used: the host stage resets them.
        let _host_turn = host.map(|h| crate::lock(&h.turn));
        let stages = host.map_or(&self.stages[..], |h| &h.stages[..]);
        let ops = Operands {
            x,
            y,
            coeffs: CoeffSource::Plan(alpha, beta),
        };
        let program = if host.is_some() { HOST_PATH } else { MAIN };
        self.submit_product("running SpMV", stages, program, &ops)?;
        match host {
            Some(h) => h.stage.finish(&self.gpu, alpha, beta, y),
            None => Ok(()),
        }
    }

    /// The host path `run` takes for output `y`: none where the plan has none or its host stage
    /// cannot read and write `y`'s buffer.
    fn host_path_for(&self, y: &GpuVector<T>) -> Option<&HostPath<T>> {
        self.host.as_ref().filter(|h| h.stage.serves(&y.buffer))
    }

    /// Submits `y = α·A·x + β·y` and returns at once, with the submission's index (to wait on
    /// with `Device::poll`). It runs the all-GPU stages, as [`record`](Self::record) does, also
    /// for a plan whose `run` finishes on the host.
    pub fn submit_axpby(
        &self,
        alpha: T,
        x: &GpuVector<T>,
        beta: T,
        y: &mut GpuVector<T>,
    ) -> Result<wgpu::SubmissionIndex> {
        let _turn = self.gpu.gl_turn();
        self.check(x, y)?;
        let ops = Operands {
            x,
            y,
            coeffs: CoeffSource::Plan(alpha, beta),
        };
        self.submit_product("submitting SpMV", &self.stages, MAIN, &ops)
    }

    /// Submits `y = α·A·x + β·y` with α and β read from `coeffs` when it runs, and returns at
    /// once (see [`submit_axpby`](Self::submit_axpby) and [`Coefficients`]).
    pub fn submit_with(
        &self,
        coeffs: &Coefficients<T>,
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
    ) -> Result<wgpu::SubmissionIndex> {
        let _turn = self.gpu.gl_turn();
        self.check(x, y)?;
        self.check_coeffs(coeffs)?;
        let ops = Operands {
            x,
            y,
            coeffs: CoeffSource::Caller(coeffs),
        };
        self.submit_product("submitting SpMV", &self.stages, MAIN, &ops)
    }

    /// Computes `y = α·A·x + β·y` with α and β read from `coeffs` on the GPU (submitted; the
    /// result stays on the GPU). It runs the all-GPU stages, also for a plan whose `run`
    /// finishes on the host (whose host stage would need the values on the host).
    pub fn run_with(
        &self,
        coeffs: &Coefficients<T>,
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        self.submit_with(coeffs, x, y).map(drop)
    }

    /// Submits `y = A·x` and returns at once (see [`submit_axpby`](Self::submit_axpby)).
    pub fn submit(&self, x: &GpuVector<T>, y: &mut GpuVector<T>) -> Result<wgpu::SubmissionIndex> {
        self.submit_axpby(T::from_f64(1.0), x, T::from_f64(0.0), y)
    }

    /// Computes `y = A·x` on the GPU (submitted; the result stays on the GPU).
    pub fn run(&self, x: &GpuVector<T>, y: &mut GpuVector<T>) -> Result<()> {
        self.run_axpby(T::from_f64(1.0), x, T::from_f64(0.0), y)
    }

    /// Mean time of one `y = A·x` over `repeats` back-to-back products in one submission; for a
    /// plan that finishes on the host, the median wall-clock time of whole `run` calls.
    pub fn time(&self, x: &GpuVector<T>, y: &mut GpuVector<T>, repeats: u32) -> Result<Timing> {
        let _turn = self.gpu.gl_turn();
        self.check(x, y)?;
        if self.host_path_for(y).is_some() {
            return self.time_runs(x, y, repeats);
        }
        let ops = Operands {
            x,
            y,
            coeffs: CoeffSource::Pair(T::from_f64(1.0), T::from_f64(0.0)),
        };
        let groups = self.bind(&self.stages, MAIN, &ops)?;
        self.gpu
            .time_pass(repeats, |pass| Self::encode(&self.stages, pass, &groups))
    }

    /// `y = A·x` as a recording into a compute pass (the plan's all-GPU stages), for timing a
    /// product among other kernels in one pass sequence.
    pub(crate) fn pass_product<'p>(
        &'p self,
        x: &GpuVector<T>,
        y: &GpuVector<T>,
    ) -> Result<impl FnMut(&mut wgpu::ComputePass<'_>) + 'p> {
        self.check(x, y)?;
        let ops = Operands {
            x,
            y,
            coeffs: CoeffSource::Pair(T::from_f64(1.0), T::from_f64(0.0)),
        };
        let groups = self.bind(&self.stages, MAIN, &ops)?;
        Ok(move |pass: &mut wgpu::ComputePass<'_>| Self::encode(&self.stages, pass, &groups))
    }

    /// Times plans of the same shape against one another on the same vectors, ms per product
    /// in the order given ([`Gpu::time_round_robin`]: each keeps its fastest of `rounds`
    /// samples of at most `max_reps` products; `settle`: on a warmed-up GPU, else exactly
    /// `max_reps` per sample). A plan that finishes on the host is timed by whole `run` calls
    /// after the others.
    pub(crate) fn time_together(
        plans: &[&SpmvPlan<T>],
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
        rounds: u32,
        max_reps: u32,
        settle: bool,
    ) -> Result<Vec<f64>> {
        let Some(first) = plans.first() else {
            return Ok(Vec::new());
        };
        let (on_device, device_ms) = Self::with_recordings(plans, x, y, |refs| {
            first.gpu.time_round_robin(refs, rounds, max_reps, settle)
        })?;
        let mut ms = vec![0.0; plans.len()];
        for (&i, t) in on_device.iter().zip(device_ms) {
            ms[i] = t;
        }
        for (i, p) in plans.iter().enumerate() {
            if p.finishes_on_host() {
                ms[i] = p.time_runs(x, y, rounds.max(1) * max_reps.clamp(1, 3))?.ms;
            }
        }
        Ok(ms)
    }

    /// Times plans of the same shape against one another in one submission
    /// ([`Gpu::time_back_to_back`]: `rounds` turns of `reps[i]` products of each): ms per
    /// product of every turn, per plan in the order given. `None` where the adapter has no
    /// timestamp queries or a plan finishes on the host.
    pub(crate) fn time_back_to_back(
        plans: &[&SpmvPlan<T>],
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
        rounds: u32,
        reps: &[u32],
    ) -> Result<Option<Vec<Vec<f64>>>> {
        let Some(first) = plans.first() else {
            return Ok(Some(Vec::new()));
        };
        if plans.iter().any(|p| p.finishes_on_host()) {
            return Ok(None);
        }
        let (_, ms) = Self::with_recordings(plans, x, y, |refs| {
            first.gpu.time_back_to_back(refs, 0, rounds, reps)
        })?;
        Ok(ms)
    }

    /// Runs this plan until the GPU's clocks are up ([`Gpu::warm_up`]); `once_ms`: about one
    /// product's GPU time. `None` where the adapter cannot tell (nothing was run then).
    pub(crate) fn warm_up(
        &self,
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
        once_ms: f64,
    ) -> Result<Option<crate::gpu::WarmUp>> {
        if self.finishes_on_host() {
            return Ok(None);
        }
        let (_, w) = Self::with_recordings(&[self], x, y, |refs| {
            self.gpu.warm_up(&mut *refs[0], once_ms)
        })?;
        Ok(w)
    }

    /// Calls `time` with a recording of one product for each plan that runs wholly on the GPU;
    /// returns those plans' indices and what `time` returned.
    fn with_recordings<R>(
        plans: &[&SpmvPlan<T>],
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
        time: impl FnOnce(&mut [&mut dyn FnMut(&mut wgpu::ComputePass<'_>)]) -> Result<R>,
    ) -> Result<(Vec<usize>, R)> {
        for p in plans {
            p.check(x, y)?;
        }
        let ops = Operands {
            x,
            y,
            coeffs: CoeffSource::Pair(T::from_f64(1.0), T::from_f64(0.0)),
        };
        let groups: Vec<Call<T>> = plans
            .iter()
            .map(|p| p.bind(&p.stages, MAIN, &ops))
            .collect::<Result<_>>()?;
        let on_device: Vec<usize> = (0..plans.len())
            .filter(|&i| !plans[i].finishes_on_host())
            .collect();
        type Record<'a> = Box<dyn FnMut(&mut wgpu::ComputePass<'_>) + 'a>;
        let mut records: Vec<Record<'_>> = on_device
            .iter()
            .map(|&i| {
                let (stages, groups) = (&plans[i].stages, &groups[i]);
                Box::new(move |pass: &mut wgpu::ComputePass<'_>| Self::encode(stages, pass, groups))
                    as Box<dyn FnMut(&mut wgpu::ComputePass<'_>)>
            })
            .collect();
        let mut refs: Vec<&mut dyn FnMut(&mut wgpu::ComputePass<'_>)> =
            records.iter_mut().map(|r| r.as_mut() as _).collect();
        let r = time(&mut refs)?;
        Ok((on_device, r))
    }

    fn time_runs(&self, x: &GpuVector<T>, y: &mut GpuVector<T>, repeats: u32) -> Result<Timing> {
        let mut once = || -> Result<f64> {
            let t = std::time::Instant::now();
            self.run(x, y)?;
            self.gpu.wait()?;
            Ok(t.elapsed().as_secs_f64() * 1e3)
        };
        once()?;
        let first = once()?;
        let reps = repeats.clamp(3, ((1000.0 / first.max(1e-3)) as u32).max(3));
        let mut ms = (0..reps).map(|_| once()).collect::<Result<Vec<f64>>>()?;
        ms.sort_by(f64::total_cmp);
        Ok(Timing {
            ms: ms[ms.len() / 2],
            repeats: reps,
            timer: crate::gpu::Timer::WallClock,
        })
    }

    /// Bytes one product must move at least: values, column indices, row pointers, x and y,
    /// each once (the traffic GB/s figures are computed from, as for cuSPARSE).
    pub fn minimal_traffic_bytes(&self) -> u64 {
        minimal_traffic_bytes::<T>(self.nrows, self.ncols, self.nnz)
    }
}

impl<T> std::fmt::Debug for SpmvPlan<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpmvPlan")
            .field("shape", &(self.nrows, self.ncols, self.nnz))
            .field("finishes_on_host", &self.host.is_some())
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

/// See [`SpmvPlan::minimal_traffic_bytes`].
pub(crate) fn minimal_traffic_bytes<T>(nrows: usize, ncols: usize, nnz: usize) -> u64 {
    let s = std::mem::size_of::<T>() as u64;
    nnz as u64 * (s + 4) + (nrows as u64 + 1) * 4 + ncols as u64 * s + nrows as u64 * s
}

#[cfg(feature = "testing")]
impl<T: Scalar> SpmvPlan<T> {
    /// The whole contents, as u32 words, of the buffers the plan owns in slots `slots` of stage
    /// `stage` (`None` for a slot bound to something else): for tests that compare a format built
    /// on the GPU with its host twin word for word.
    pub fn stage_words_for_testing(
        &self,
        stage: usize,
        slots: std::ops::Range<usize>,
    ) -> Result<Vec<Option<Vec<u32>>>> {
        let Some(st) = self.stages.get(stage) else {
            return Ok(Vec::new());
        };
        slots
            .filter_map(|i| st.bindings.get(i))
            .map(|b| match b {
                Binding::Owned(buf) => self
                    .gpu
                    .read_buffer::<u32>(buf, (buf.size() / 4) as usize)
                    .map(Some),
                _ => Ok(None),
            })
            .collect()
    }
}
