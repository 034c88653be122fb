//! What every solver shares: the checks of its arguments, and a workspace on the GPU (its
//! scalars, stop state and residual history, the dot products' partials) with the loop that
//! records iterations, a submission at a time, until the GPU says stop.

use super::{SolveReport, Stop};
use crate::gpu::{Gpu, GpuVector};
use crate::kernel::{Kernel, LaneMode, Variant};
use crate::plan::SpmvPlan;
use crate::{Error, Result, Scalar};
use std::sync::Arc;

/// Slots of the scalars buffer (mirrors shaders/solvers/reduce.wgsl).
pub(super) const TOL2: usize = 3;
pub(super) const REL_TOL2: usize = 4;
const BB: usize = 5;
pub(super) const DAMPING: usize = 7;
/// Slots 9 and 10 are CG's (shaders/solvers/cg_step.wgsl).
const SCALAR_SLOTS: usize = 11;
/// Workgroups of the dot products: at most this many partials, so one workgroup adds them.
const DOT_GROUPS: u32 = 1024;
/// Invocations per workgroup of the vector kernels.
const WG: u32 = 256;

/// The most workgroups of a dot product (and of the kernels sharing its layout) on `gpu`. A CPU
/// adapter runs each workgroup as a task of fixed cost, so there a few per thread
/// (docs/solvers.md). A sum depends on n and this count only, so results are the same bits run
/// to run on one adapter.
fn dot_groups(gpu: &Gpu) -> u32 {
    if gpu.info().device_type != wgpu::DeviceType::Cpu {
        return DOT_GROUPS;
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()) as u32;
    (2 * threads).clamp(16, DOT_GROUPS)
}

/// Checks a solve's operands: a square plan, `b` and `x` of its length on its device, not one
/// buffer, a finite tolerance and at least one iteration per submission.
pub(super) fn check_args<T: Scalar>(
    plan: &SpmvPlan<T>,
    b: &GpuVector<T>,
    x: &GpuVector<T>,
    (tol, check_every): (f64, usize),
) -> Result<()> {
    let n = plan.nrows();
    if plan.ncols() != n {
        return Err(Error::DimensionMismatch {
            what: "columns of the matrix (a solver needs a square one)",
            expected: n,
            actual: plan.ncols(),
        });
    }
    for (what, v) in [("b", b), ("x", x)] {
        check_vector(plan, v, what)?;
    }
    crate::gpu::check_not_aliased(&b.buffer, &x.buffer)?;
    if !(tol >= 0.0 && tol.is_finite()) || check_every == 0 {
        return Err(Error::InvalidParameter {
            name: "solver options",
            value: format!("tol {tol}, check_every {check_every}"),
            reason: "a finite tolerance ≥ 0 and at least one iteration per check".into(),
        });
    }
    Ok(())
}

/// Checks that `v` has `plan`'s rows and lives on its device.
pub(super) fn check_vector<T: Scalar>(
    plan: &SpmvPlan<T>,
    v: &GpuVector<T>,
    what: &'static str,
) -> Result<()> {
    check_length_and_device(plan.gpu(), plan.nrows(), v, what)
}

/// Checks that `v` lives on `gpu` and holds `len` elements.
pub(super) fn check_length_and_device<T: Scalar>(
    gpu: &Gpu,
    len: usize,
    v: &GpuVector<T>,
    what: &'static str,
) -> Result<()> {
    if v.gpu.inner.id != gpu.inner.id {
        return Err(Error::WrongDevice { what });
    }
    if v.len() != len {
        return Err(Error::DimensionMismatch {
            what,
            expected: len,
            actual: v.len(),
        });
    }
    Ok(())
}

/// A solver's working vector of `n` zeros, with the device buffer behind it: from the device's
/// pool where a solve (or a plan) before it left one of its size, and back to the pool when the
/// solve drops it (fresh device memory, and giving it back, cost milliseconds per 100 MB:
/// docs/setup.md). Never handed to the caller.
pub(super) struct Scratch<T> {
    vector: GpuVector<T>,
    _memory: Option<crate::gpu::DeviceBuffer>,
}

impl<T: Scalar> Scratch<T> {
    pub(super) fn zeroed(gpu: &Gpu, n: usize) -> Result<Self> {
        let bytes = n as u64 * std::mem::size_of::<T>() as u64;
        // The pool's size classes round up by at most 1/8: near the binding limit, a vector
        // of its own.
        if bytes + bytes / 8 + 16 > gpu.info().max_binding_bytes() {
            return Ok(Self {
                vector: GpuVector::filled(gpu, n, T::from_f64(0.0))?,
                _memory: None,
            });
        }
        let memory = gpu.storage_zeroed("solver vector", bytes, wgpu::BufferUsages::COPY_SRC)?;
        Ok(Self {
            vector: GpuVector::from_buffer(gpu, (*memory).clone(), n)?,
            _memory: Some(memory),
        })
    }
}

impl<T> std::ops::Deref for Scratch<T> {
    type Target = GpuVector<T>;
    fn deref(&self) -> &GpuVector<T> {
        &self.vector
    }
}

impl<T> std::ops::DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut GpuVector<T> {
        &mut self.vector
    }
}

/// A pipeline and the bind group of one dispatch.
pub(super) struct Bound(Arc<wgpu::ComputePipeline>, wgpu::BindGroup);

impl Bound {
    pub(super) fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, grid: [u32; 2]) {
        pass.set_pipeline(&self.0);
        pass.set_bind_group(0, &self.1, &[]);
        pass.dispatch_workgroups(grid[0], grid[1], 1);
    }
}

/// A solve's buffers on the GPU besides its vectors, and its device.
pub(super) struct Workspace<T: Scalar> {
    pub gpu: Gpu,
    buffers: Arc<Buffers<T>>,
    /// When it was made (about when the solve began), for the debug log of the solve's phases.
    made: std::time::Instant,
}

impl<T: Scalar> std::ops::Deref for Workspace<T> {
    type Target = Buffers<T>;
    fn deref(&self) -> &Buffers<T> {
        &self.buffers
    }
}

/// What the end of a solve reads back ([`Workspace::dots_and_history`]).
pub(super) struct EndReads {
    pub dots: (f64, f64),
    /// ‖b‖², from the start.
    pub bb: f64,
    pub history: Vec<f64>,
}

/// A workspace's buffers (without its `Gpu`, so that the device may keep them: vector
/// operations share one per value type and length, [`Workspace::for_vectors`]).
pub(super) struct Buffers<T: Scalar> {
    pub n: usize,
    pub scalars: wgpu::Buffer,
    pub state: wgpu::Buffer,
    pub history: wgpu::Buffer,
    /// Two regions of `2 · groups` partials: a dot product's from 0, and from `2 · groups`
    /// those of a kernel that reads the first region's sums as it writes its own (CG's step).
    pub partials: crate::gpu::DeviceBuffer,
    pub dot_params: crate::gpu::DeviceBuffer,
    reduce_params: crate::gpu::DeviceBuffer,
    /// The parameters of a reduction into slot 0 or 1 (α or β of `Coefficients`).
    into_params: [crate::gpu::DeviceBuffer; 2],
    pub len: crate::gpu::DeviceBuffer,
    /// Grids of the dot products and of the vector kernels.
    pub dot_grid: [u32; 2],
    pub vector_grid: [u32; 2],
    /// Workgroups of the dot products (partials per dot), and the elements each takes.
    pub groups: u32,
    span: u32,
    max_iter: usize,
    _t: std::marker::PhantomData<T>,
}

/// Kept vector-operation workspaces beyond which the device's set is emptied (each a few KiB;
/// the ones in use live on).
const KEPT_FOR_VECTORS: usize = 64;

impl<T: Scalar> Workspace<T> {
    pub(super) fn new(gpu: &Gpu, n: usize, max_iter: usize) -> Result<Self> {
        Ok(Self {
            gpu: gpu.clone(),
            buffers: Arc::new(Buffers::new(gpu, n, max_iter)?),
            made: std::time::Instant::now(),
        })
    }

    /// The workspace the vector operations on `n` elements of `T` share on `gpu`, made at the
    /// first: making these buffers is most of what recording an operation costs the host.
    /// Operations that share it run in submission order, each its own dot product and
    /// reduction before the next writes the partials (wgpu orders the passes' writes), and a
    /// read back copies its sums in the same submission.
    pub(super) fn for_vectors(gpu: &Gpu, n: usize) -> Result<Self> {
        let key = (std::any::TypeId::of::<T>(), n);
        let kept = crate::lock(&gpu.inner.vector_scratch).get(&key).cloned();
        let buffers = match kept.and_then(|b| b.downcast::<Buffers<T>>().ok()) {
            Some(b) => b,
            None => {
                let b = Arc::new(Buffers::new(gpu, n, 0)?);
                let mut kept = crate::lock(&gpu.inner.vector_scratch);
                if kept.len() >= KEPT_FOR_VECTORS {
                    kept.clear();
                }
                kept.insert(key, b.clone());
                b
            }
        };
        Ok(Self {
            gpu: gpu.clone(),
            buffers,
            made: std::time::Instant::now(),
        })
    }
}

impl<T: Scalar> Buffers<T> {
    fn new(gpu: &Gpu, n: usize, max_iter: usize) -> Result<Self> {
        Self::with_group_cap(gpu, n, max_iter, dot_groups(gpu))
    }

    /// [`Buffers::new`] with at most `cap` workgroups per dot product.
    fn with_group_cap(gpu: &Gpu, n: usize, max_iter: usize, cap: u32) -> Result<Self> {
        let storage = |label: &str, bytes: u64| {
            gpu.scoped(&format!("allocating {label}"), || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes.max(16).next_multiple_of(4),
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            })
        };
        let s = std::mem::size_of::<T>() as u64;
        let history_bytes = (max_iter as u64 + 1)
            .checked_mul(s)
            .filter(|&b| b <= gpu.info().max_binding_bytes())
            .ok_or_else(|| Error::InvalidParameter {
                name: "max_iter",
                value: max_iter.to_string(),
                reason: "the residual history must fit one storage binding".into(),
            })?;
        let n32 = u32::try_from(n).map_err(|_| Error::InvalidParameter {
            name: "rows",
            value: n.to_string(),
            reason: "a solve takes fewer than 2^32 rows".into(),
        })?;
        let groups = n32.div_ceil(WG).clamp(1, cap);
        let span = n32.div_ceil(groups).div_ceil(WG) * WG;
        let uniform =
            |label: &str, words: [u32; 4]| gpu.uniform_buffer(label, bytemuck::cast_slice(&words));
        Ok(Self {
            n,
            scalars: storage("solver scalars", SCALAR_SLOTS as u64 * s)?,
            state: storage("solver state", 8)?,
            history: storage("solver history", history_bytes)?,
            partials: gpu.storage_zeroed(
                "solver partials",
                4 * groups as u64 * s,
                wgpu::BufferUsages::empty(),
            )?,
            dot_params: uniform("solver dot params", [n32, span, groups, 0]),
            reduce_params: uniform("solver reduce params", [groups, 0, 0, 0]),
            into_params: [0, 1].map(|slot| uniform("reduce-into params", [groups, slot, 0, 0])),
            len: uniform("solver length", [n32, 0, 0, 0]),
            dot_grid: gpu.grid(groups),
            groups,
            span,
            vector_grid: gpu.grid(n32.div_ceil(WG)),
            max_iter,
            _t: std::marker::PhantomData,
        })
    }
}

impl<T: Scalar> Workspace<T> {
    /// `kernel` for `T` with `overrides`, bound to `buffers` (bindings 0, 1, ...).
    pub(super) fn bound(
        &self,
        kernel: Kernel,
        overrides: Vec<(&'static str, u32)>,
        buffers: &[&wgpu::Buffer],
    ) -> Result<Bound> {
        let pipeline = self.gpu.pipeline(&Variant::new(
            kernel,
            T::WGSL,
            LaneMode::Workgroup,
            overrides,
        ))?;
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let group = self.gpu.scoped("binding a solver kernel", || {
            self.gpu
                .device()
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(kernel.name),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &entries,
                })
        })?;
        Ok(Bound(pipeline, group))
    }

    /// The partials of `a·b` (and `c·d` where `two`), for a [`Workspace::reduce`] to add.
    pub(super) fn dot(&self, [a, b, c, d]: [&wgpu::Buffer; 4], two: bool) -> Result<Bound> {
        self.bound(
            crate::kernel::DOT,
            vec![("DOTS", 1 + two as u32)],
            &[a, b, c, d, &self.partials, &self.dot_params],
        )
    }

    /// The reduction of the partials in `mode` (see shaders/solvers/reduce.wgsl).
    pub(super) fn reduce(&self, mode: u32) -> Result<Bound> {
        self.reduce_with(mode, &self.reduce_params)
    }

    /// The reduction in `mode` of the partials in their second region (from `2 · groups`).
    pub(super) fn reduce_second(&self, mode: u32) -> Result<Bound> {
        let params = self.gpu.uniform_buffer(
            "reduce params, second region",
            bytemuck::cast_slice(&[self.groups, 0, 2 * self.groups, 0]),
        );
        self.reduce_with(mode, &params)
    }

    fn reduce_with(&self, mode: u32, params: &wgpu::Buffer) -> Result<Bound> {
        self.bound(
            crate::kernel::REDUCE,
            vec![("MODE", mode)],
            &[
                &self.partials,
                &self.scalars,
                &self.state,
                &self.history,
                params,
            ],
        )
    }

    /// The dot products' parameters (span.wgsl's `DotParams`) with CG's ρ slot `parity`
    /// (`dot_params` has parity 0).
    pub(super) fn dot_params_with_parity(&self, parity: u32) -> crate::gpu::DeviceBuffer {
        self.gpu.uniform_buffer(
            "solver dot params",
            bytemuck::cast_slice(&[self.n as u32, self.span, self.groups, parity]),
        )
    }

    /// The reduction that writes the first dot into element `slot` of `target` (MODE 5).
    pub(super) fn reduce_into(&self, target: &wgpu::Buffer, slot: u32) -> Result<Bound> {
        let made;
        let params = match self.into_params.get(slot as usize) {
            Some(p) => p,
            None => {
                made = self.gpu.uniform_buffer(
                    "reduce-into params",
                    bytemuck::cast_slice(&[self.groups, slot, 0u32, 0]),
                );
                &made
            }
        };
        self.bound(
            crate::kernel::REDUCE,
            vec![("MODE", 5)],
            &[&self.partials, target, &self.state, &self.history, params],
        )
    }

    /// Zeroes the scalars but for `set` (slot, value), before the start is submitted.
    pub(super) fn reset(&self, set: &[(usize, f64)]) {
        let mut slots = vec![T::from_f64(0.0); SCALAR_SLOTS];
        for &(slot, v) in set {
            slots[slot] = T::from_f64(v);
        }
        self.gpu
            .queue()
            .write_buffer(&self.scalars, 0, bytemuck::cast_slice(&slots));
    }

    /// Submits `start` (an encoder holding the solve's start), then `check_every` iterations
    /// at a time (`iteration` records one) until the GPU has set a stop or `max_iter` are
    /// recorded; each submission ends with a copy of the stop state, read when it has run.
    /// One submission is recorded and queued while the one before it runs (otherwise the GPU
    /// idles while the host reads back and records; figures in docs/solvers.md), so a stop is
    /// seen one submission late and that submission's iterations do nothing. Returns the
    /// iterations run, why it stopped, and the submissions.
    pub(super) fn iterate(
        &self,
        start: wgpu::CommandEncoder,
        check_every: usize,
        mut iteration: impl FnMut(&mut wgpu::ComputePass<'_>) -> Result<()>,
    ) -> Result<(usize, Stop, usize)> {
        self.log_phase("start recorded");
        let mut queued = std::collections::VecDeque::new();
        queued.push_back(self.gpu.read_later::<u32>(start, &self.state, 2)?);
        self.log_phase("start submitted");
        let (mut submissions, mut recorded) = (1, 0);
        let mut state = vec![0u32; 2];
        let mut stopped = false;
        let mut recording = std::time::Duration::ZERO;
        while let Some(oldest) = queued.pop_front() {
            // Queue the next batch behind the one running, unless a stop was seen.
            if !stopped && recorded < self.max_iter {
                let k = check_every.min(self.max_iter - recorded);
                let t = std::time::Instant::now();
                let mut enc = self
                    .gpu
                    .device()
                    .create_command_encoder(&Default::default());
                {
                    // One pass for the whole batch: a pass costs the host a command buffer
                    // or two to make and finish, a dispatch far less.
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("solver iterations"),
                        timestamp_writes: None,
                    });
                    for _ in 0..k {
                        iteration(&mut pass)?;
                    }
                }
                recording += t.elapsed();
                recorded += k;
                queued.push_back(self.gpu.read_later::<u32>(enc, &self.state, 2)?);
                submissions += 1;
            }
            let first = submissions - queued.len() == 1;
            if first {
                self.log_phase("first iterations submitted");
            }
            state = self.gpu.finish_read::<u32>(oldest, 2)?;
            log::trace!(
                "solve: a submission ran by {:.3} ms ({} iterations counted)",
                self.made.elapsed().as_secs_f64() * 1e3,
                state[0]
            );
            stopped |= state[1] != 0;
            if first {
                self.log_phase("start run");
            }
        }
        self.log_phase(&format!(
            "iterations run ({recorded} recorded in {:.3} ms of the host)",
            recording.as_secs_f64() * 1e3
        ));
        let stop = match state[1] {
            0 => Stop::MaxIterations,
            1 => Stop::Converged,
            2 => Stop::NotPositiveDefinite,
            _ => Stop::Breakdown,
        };
        Ok((state[0] as usize, stop, submissions))
    }

    /// Logs (at debug level) how long after the workspace was made `what` happened.
    pub(super) fn log_phase(&self, what: &str) {
        log::debug!(
            "solve: {what} at {:.3} ms",
            self.made.elapsed().as_secs_f64() * 1e3
        );
    }

    /// `a·b` and `c·d`, recorded after the work in `enc` and read back.
    pub(super) fn dots(
        &self,
        enc: wgpu::CommandEncoder,
        buffers: [&wgpu::Buffer; 4],
    ) -> Result<(f64, f64)> {
        Ok(self.dots_and_history(enc, buffers, 0)?.dots)
    }

    /// [`Workspace::dots`], read back in the same round trip as the convergence measure of
    /// the first `history` iterations from the start (what the reductions kept) and the
    /// start's ‖b‖²: the end of a solve waits on the GPU once.
    pub(super) fn dots_and_history(
        &self,
        mut enc: wgpu::CommandEncoder,
        buffers: [&wgpu::Buffer; 4],
        history: usize,
    ) -> Result<EndReads> {
        let dots = self.dot(buffers, true)?;
        let sums = self.reduce(0)?;
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            dots.dispatch(&mut pass, self.dot_grid);
            sums.dispatch(&mut pass, [1, 1]);
        }
        let s = std::mem::size_of::<T>();
        let mut reads = vec![crate::gpu::RangeRead::first(
            &self.scalars,
            (SCALAR_SLOTS * s) as u64,
        )];
        if history > 0 {
            reads.push(crate::gpu::RangeRead::first(
                &self.history,
                (history * s) as u64,
            ));
        }
        let got = self.gpu.read_ranges_after(Some(enc), &reads)?;
        let words = |bytes: &[u8]| -> Vec<f64> {
            // Collected rather than cast in place: the bytes need not be aligned for T.
            bytemuck::pod_collect_to_vec::<u8, T>(bytes)
                .iter()
                .map(|v| v.to_f64())
                .collect()
        };
        let scalars = words(&got[0][0]);
        Ok(EndReads {
            dots: (scalars[0], scalars[1]),
            bb: scalars[BB],
            history: got.get(1).map_or_else(Vec::new, |g| words(&g[0])),
        })
    }

    /// The report of a Krylov solve that ran `iterations`: the residual history relative to
    /// `‖b‖`, and `‖b − A·x‖ / ‖b‖` computed in `scratch`.
    pub(super) fn report(
        &self,
        plan: &SpmvPlan<T>,
        (b, x, scratch): (&GpuVector<T>, &GpuVector<T>, &mut GpuVector<T>),
        (iterations, stop, submissions): (usize, Stop, usize),
        start: std::time::Instant,
    ) -> Result<SolveReport> {
        let gpu = &self.gpu;
        let s = std::mem::size_of::<T>() as u64;
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        gpu.record_copy(
            &mut enc,
            &b.buffer,
            0,
            &scratch.buffer,
            0,
            self.n as u64 * s,
        )?;
        plan.record_axpby(&mut enc, T::from_f64(-1.0), x, T::from_f64(1.0), scratch)?;
        let q = &scratch.buffer.clone();
        let end = self.dots_and_history(enc, [q, q, &b.buffer, &b.buffer], iterations + 1)?;
        let relative = |rr: f64| {
            if end.bb > 0.0 {
                (rr / end.bb).sqrt()
            } else {
                rr.sqrt()
            }
        };
        let residuals = end.history.iter().map(|&h| relative(h)).collect();
        let (rr, bb) = end.dots;
        self.log_phase("report made");
        Ok(SolveReport {
            stop,
            iterations,
            residuals,
            true_residual: if bb > 0.0 {
                (rr / bb).sqrt()
            } else {
                rr.sqrt()
            },
            submissions,
            time: start.elapsed(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout real GPUs get (up to 1 024 partials, more than one summing workgroup's
    /// invocations) on whatever adapter the tests have, a CPU one included: exact on integers.
    #[test]
    fn dot_products_exact_with_a_gpu_s_workgroup_count() {
        let Some(gpu) = crate::gpu::test_gpu() else {
            return;
        };
        let n = 300_007;
        let a: Vec<f32> = (0..n).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        let b: Vec<f32> = (0..n).map(|i| ((i * 3) % 5) as f32 - 2.0).collect();
        let want = |x: &[f32], y: &[f32]| -> f64 {
            x.iter()
                .zip(y)
                .map(|(x, y)| (*x as f64) * (*y as f64))
                .sum()
        };
        let w = Workspace::<f32> {
            gpu: gpu.clone(),
            buffers: Arc::new(Buffers::with_group_cap(&gpu, n, 0, DOT_GROUPS).unwrap()),
            made: std::time::Instant::now(),
        };
        assert_eq!(w.groups, DOT_GROUPS);
        let (ga, gb) = (
            GpuVector::from_slice(&gpu, &a).unwrap(),
            GpuVector::from_slice(&gpu, &b).unwrap(),
        );
        let enc = gpu.device().create_command_encoder(&Default::default());
        let (ab, aa) = w
            .dots(enc, [&ga.buffer, &gb.buffer, &ga.buffer, &ga.buffer])
            .unwrap();
        assert_eq!((ab, aa), (want(&a, &b), want(&a, &a)));
    }
}
