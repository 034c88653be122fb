//! Conjugate gradient on the GPU. Per iteration: `q = A·p` (the plan's product), then one
//! compute pass: `p·q` (partials, then one workgroup that also computes α), `x += α·p`,
//! `r -= α·q` (and `z = r / diag` with Jacobi), `r·z` and `r·r` in one pass (their reduction
//! computes β, counts the iteration, keeps `r·r` and stops the solve at the tolerance), and
//! `p = z + β·p`. Once a stop is set, α and β are 0 and the iterations left in the submission
//! change nothing. shaders/solvers/ holds the kernels; `testing::reference::cg` is the same
//! algorithm on the CPU.

use super::{SolveReport, Stop};
use crate::gpu::{Gpu, GpuVector};
use crate::plan::SpmvPlan;
use crate::{Error, Result, Scalar};
use std::sync::Arc;

/// Options of [`cg`].
#[derive(Clone, Debug)]
pub struct CgOptions<'a, T> {
    /// Stop once `‖r‖ ≤ tol · ‖b‖` (`r` the recurrence's residual). Default 1e-6.
    pub tol: f64,
    /// Most iterations. Default 10 000.
    pub max_iter: usize,
    /// Iterations recorded per submission, between two looks at whether to stop; up to that
    /// many − 1 products run after the stop (doing nothing). Default 32.
    pub check_every: usize,
    /// `1 / diag(A)` on the GPU for a Jacobi preconditioner ([`super::inverse_diagonal`]);
    /// `None`: no preconditioner.
    pub jacobi: Option<&'a GpuVector<T>>,
}

impl<T> Default for CgOptions<'_, T> {
    fn default() -> Self {
        Self {
            tol: 1e-6,
            max_iter: 10_000,
            check_every: 32,
            jacobi: None,
        }
    }
}

/// Workgroups of the dot products: at most this many partials, so one workgroup adds them.
const DOT_GROUPS: u32 = 1024;
const WG: u32 = 256;

/// Solves `A·x = b` by conjugate gradient, `A` being `plan`'s matrix (square, symmetric positive
/// definite), starting from the `x` given and leaving the last iterate there. Stopping for a
/// reason other than convergence is a [`Stop`] in the report, not an error; errors are bad
/// arguments (lengths, devices, aliasing, a non-square plan) and GPU failures.
pub fn cg<T: Scalar>(
    plan: &SpmvPlan<T>,
    b: &GpuVector<T>,
    x: &mut GpuVector<T>,
    opts: &CgOptions<'_, T>,
) -> Result<SolveReport> {
    let start = std::time::Instant::now();
    let gpu = plan.gpu().clone();
    let n = plan.nrows();
    if plan.ncols() != n {
        return Err(Error::DimensionMismatch {
            what: "columns of the matrix (CG needs a square one)",
            expected: n,
            actual: plan.ncols(),
        });
    }
    for (what, v) in [("b", b), ("x", &*x)] {
        if v.gpu.inner.id != gpu.inner.id {
            return Err(Error::WrongDevice { what });
        }
        if v.len() != n {
            return Err(Error::DimensionMismatch {
                what,
                expected: n,
                actual: v.len(),
            });
        }
    }
    crate::gpu::check_not_aliased(&b.buffer, &x.buffer)?;
    if let Some(d) = opts.jacobi {
        if d.gpu.inner.id != gpu.inner.id {
            return Err(Error::WrongDevice { what: "jacobi" });
        }
        if d.len() != n {
            return Err(Error::DimensionMismatch {
                what: "jacobi (1 / diag)",
                expected: n,
                actual: d.len(),
            });
        }
    }
    if !(opts.tol >= 0.0 && opts.tol.is_finite()) || opts.check_every == 0 {
        return Err(Error::InvalidParameter {
            name: "CgOptions",
            value: format!("tol {}, check_every {}", opts.tol, opts.check_every),
            reason: "a finite tolerance ≥ 0 and at least one iteration per check".into(),
        });
    }
    let _turn = gpu.gl_turn();
    let mut s = Solver::new(&gpu, n, opts)?;
    let report = s.run(plan, b, x, opts, start)?;
    Ok(report)
}

/// The buffers and bind groups of one solve.
struct Solver<T: Scalar> {
    gpu: Gpu,
    n: usize,
    r: GpuVector<T>,
    p: GpuVector<T>,
    q: GpuVector<T>,
    scalars: wgpu::Buffer,
    state: wgpu::Buffer,
    history: wgpu::Buffer,
    max_iter: usize,
}

/// Mirrors the slots of shaders/solvers/reduce.wgsl.
const REL_TOL2: usize = 4;
const BB: usize = 5;
const SCALAR_SLOTS: usize = 8;

impl<T: Scalar> Solver<T> {
    fn new(gpu: &Gpu, n: usize, opts: &CgOptions<'_, T>) -> Result<Self> {
        let zero = T::from_f64(0.0);
        let storage = |label: &str, bytes: u64, extra: wgpu::BufferUsages| {
            gpu.scoped(&format!("allocating {label}"), || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes.max(16).next_multiple_of(4),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | extra,
                    mapped_at_creation: false,
                })
            })
        };
        let s = std::mem::size_of::<T>() as u64;
        let max_iter = opts.max_iter;
        let history_bytes = (max_iter as u64 + 1)
            .checked_mul(s)
            .filter(|&b| b <= gpu.info().max_binding_bytes())
            .ok_or_else(|| Error::InvalidParameter {
                name: "max_iter",
                value: max_iter.to_string(),
                reason: "the residual history must fit one storage binding".into(),
            })?;
        Ok(Self {
            gpu: gpu.clone(),
            n,
            r: GpuVector::filled(gpu, n, zero)?,
            p: GpuVector::filled(gpu, n, zero)?,
            q: GpuVector::filled(gpu, n, zero)?,
            scalars: storage(
                "cg scalars",
                SCALAR_SLOTS as u64 * s,
                wgpu::BufferUsages::COPY_SRC,
            )?,
            state: storage("cg state", 8, wgpu::BufferUsages::COPY_SRC)?,
            history: storage("cg history", history_bytes, wgpu::BufferUsages::COPY_SRC)?,
            max_iter,
        })
    }

    fn pipeline(
        &self,
        kernel: crate::kernel::Kernel,
        overrides: Vec<(&'static str, u32)>,
    ) -> Result<Arc<wgpu::ComputePipeline>> {
        self.gpu.pipeline(&crate::kernel::Variant::new(
            kernel,
            T::WGSL,
            crate::kernel::LaneMode::Workgroup,
            overrides,
        ))
    }
}

/// A bind group of `buffers` at bindings 0, 1, ... of `pipeline`.
fn bind(gpu: &Gpu, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("cg"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

impl<T: Scalar> Solver<T> {
    fn run(
        &mut self,
        plan: &SpmvPlan<T>,
        b: &GpuVector<T>,
        x: &mut GpuVector<T>,
        opts: &CgOptions<'_, T>,
        start: std::time::Instant,
    ) -> Result<SolveReport> {
        let gpu = self.gpu.clone();
        let n = self.n as u32;
        let groups = n.div_ceil(WG).clamp(1, DOT_GROUPS);
        let span = n.div_ceil(groups).div_ceil(WG) * WG;
        let s = std::mem::size_of::<T>() as u64;
        let jacobi = opts.jacobi.is_some();
        let uniform =
            |label: &str, words: [u32; 4]| gpu.uniform_buffer(label, bytemuck::cast_slice(&words));
        let dot_params = uniform("cg dot params", [n, span, groups, 0]);
        let reduce_params = uniform("cg reduce params", [groups, 0, 0, 0]);
        let len = uniform("cg length", [n, 0, 0, 0]);
        let partials = gpu.storage_zeroed(
            "cg partials",
            2 * groups as u64 * s,
            wgpu::BufferUsages::empty(),
        )?;
        let dummy = |label: &str| gpu.storage_zeroed(label, 16, wgpu::BufferUsages::empty());
        let (z_own, diag_none) = (
            if jacobi {
                Some(GpuVector::filled(&gpu, self.n, T::from_f64(0.0))?)
            } else {
                None
            },
            dummy("cg no diagonal")?,
        );
        let z_dummy = dummy("cg no z")?;
        let r_buf = self.r.buffer.clone();
        let z: &wgpu::Buffer = z_own.as_ref().map_or(&r_buf, |z| &z.buffer);
        let inv_diag: &wgpu::Buffer = opts.jacobi.map_or(&diag_none, |d| &d.buffer);
        let z_out: &wgpu::Buffer = z_own.as_ref().map_or(&z_dummy, |z| &z.buffer);

        let dot1 = self.pipeline(crate::kernel::DOT, vec![("DOTS", 1)])?;
        let dot2 = self.pipeline(crate::kernel::DOT, vec![("DOTS", 2)])?;
        let reduce = |mode: u32| self.pipeline(crate::kernel::REDUCE, vec![("MODE", mode)]);
        let (alpha_of, beta_of, start_of, tol_of) =
            (reduce(1)?, reduce(2)?, reduce(3)?, reduce(4)?);
        let update_xr =
            self.pipeline(crate::kernel::CG_UPDATE_XR, vec![("JACOBI", jacobi as u32)])?;
        let update_p = self.pipeline(crate::kernel::CG_UPDATE_P, vec![])?;

        let (r, p, q) = (
            &self.r.buffer.clone(),
            &self.p.buffer.clone(),
            &self.q.buffer.clone(),
        );
        let (scalars, state_buf, history) = (
            &self.scalars.clone(),
            &self.state.clone(),
            &self.history.clone(),
        );
        let groups_of = |pipeline: &Arc<wgpu::ComputePipeline>, buffers: &[&wgpu::Buffer]| {
            (pipeline.clone(), bind(&gpu, pipeline, buffers))
        };
        let bound = gpu.scoped("binding the CG kernels", || {
            let reduce_with = |pl: &Arc<wgpu::ComputePipeline>| {
                groups_of(
                    pl,
                    &[&partials, scalars, state_buf, history, &reduce_params],
                )
            };
            (
                groups_of(&dot1, &[p, q, p, q, &partials, &dot_params]),
                reduce_with(&alpha_of),
                groups_of(
                    &update_xr,
                    &[scalars, p, q, inv_diag, &x.buffer.clone(), r, z_out, &len],
                ),
                groups_of(&dot2, &[r, z, r, r, &partials, &dot_params]),
                reduce_with(&beta_of),
                groups_of(&update_p, &[scalars, z, p, &len]),
                reduce_with(&start_of),
                groups_of(
                    &dot1,
                    &[
                        &b.buffer,
                        &b.buffer,
                        &b.buffer,
                        &b.buffer,
                        &partials,
                        &dot_params,
                    ],
                ),
                reduce_with(&tol_of),
            )
        })?;
        let (pq, alpha, xr, rz, beta, pz, begin, bb, tolerance) = bound;
        let (dot_grid, update_grid) = (gpu.grid(groups), gpu.grid(n.div_ceil(WG)));
        let dispatch = |pass: &mut wgpu::ComputePass<'_>,
                        (pl, bg): &(Arc<wgpu::ComputePipeline>, wgpu::BindGroup),
                        grid: [u32; 2]| {
            pass.set_pipeline(pl);
            pass.set_bind_group(0, bg, &[]);
            pass.dispatch_workgroups(grid[0], grid[1], 1);
        };
        let record_tail = |enc: &mut wgpu::CommandEncoder, start: bool| {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("cg"),
                timestamp_writes: None,
            });
            if start {
                dispatch(&mut pass, &bb, dot_grid);
                dispatch(&mut pass, &tolerance, [1, 1]);
            } else {
                dispatch(&mut pass, &pq, dot_grid);
                dispatch(&mut pass, &alpha, [1, 1]);
            }
            dispatch(&mut pass, &xr, update_grid);
            dispatch(&mut pass, &rz, dot_grid);
            dispatch(&mut pass, if start { &begin } else { &beta }, [1, 1]);
            dispatch(&mut pass, &pz, update_grid);
        };

        // The start: α = β = 0, the tolerance from b·b, r = b − A·x, z, r·z and r·r, p = z.
        let mut slots = vec![T::from_f64(0.0); SCALAR_SLOTS];
        slots[REL_TOL2] = T::from_f64(opts.tol * opts.tol);
        gpu.queue()
            .write_buffer(&self.scalars, 0, bytemuck::cast_slice(&slots));
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        gpu.record_copy(&mut enc, &b.buffer, 0, r, 0, self.n as u64 * s)?;
        plan.record_axpby(
            &mut enc,
            T::from_f64(-1.0),
            x,
            T::from_f64(1.0),
            &mut self.r,
        )?;
        record_tail(&mut enc, true);
        let mut state = gpu.read_buffer_after::<u32>(Some(enc), &self.state, 2)?;
        let mut submissions = 1;
        let mut recorded = 0;
        while state[1] == 0 && recorded < self.max_iter {
            let k = opts.check_every.min(self.max_iter - recorded);
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            for _ in 0..k {
                plan.record(&mut enc, &self.p, &mut self.q)?;
                record_tail(&mut enc, false);
            }
            recorded += k;
            state = gpu.read_buffer_after::<u32>(Some(enc), &self.state, 2)?;
            submissions += 1;
        }
        let iterations = state[0] as usize;
        let stop = match state[1] {
            0 => Stop::MaxIterations,
            1 => Stop::Converged,
            2 => Stop::NotPositiveDefinite,
            _ => Stop::Breakdown,
        };
        let rr: Vec<T> = gpu.read_buffer(&self.history, iterations + 1)?;
        let bb = gpu.read_buffer::<T>(&self.scalars, SCALAR_SLOTS)?[BB].to_f64();
        let residuals = rr
            .iter()
            .map(|h| {
                if bb > 0.0 {
                    (h.to_f64() / bb).sqrt()
                } else {
                    h.to_f64().sqrt()
                }
            })
            .collect();
        // ‖b − A·x‖ / ‖b‖, in q.
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        gpu.record_copy(&mut enc, &b.buffer, 0, q, 0, self.n as u64 * s)?;
        plan.record_axpby(
            &mut enc,
            T::from_f64(-1.0),
            x,
            T::from_f64(1.0),
            &mut self.q,
        )?;
        let plain = self.pipeline(crate::kernel::REDUCE, vec![("MODE", 0)])?;
        let norms = gpu.scoped("binding the residual check", || {
            (
                groups_of(&dot2, &[q, q, &b.buffer, &b.buffer, &partials, &dot_params]),
                groups_of(
                    &plain,
                    &[&partials, scalars, state_buf, history, &reduce_params],
                ),
            )
        })?;
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            dispatch(&mut pass, &norms.0, dot_grid);
            dispatch(&mut pass, &norms.1, [1, 1]);
        }
        let sums = gpu.read_buffer_after::<T>(Some(enc), &self.scalars, 2)?;
        let (rr, bb) = (sums[0].to_f64(), sums[1].to_f64());
        let true_residual = if bb > 0.0 {
            (rr / bb).sqrt()
        } else {
            rr.sqrt()
        };
        Ok(SolveReport {
            stop,
            iterations,
            residuals,
            true_residual,
            submissions,
            time: start.elapsed(),
        })
    }
}
