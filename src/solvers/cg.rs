//! Conjugate gradient on the GPU. Per iteration: `q = A·p` (the plan's product), then one
//! compute pass: `p·q` (partials, then one workgroup that also computes α); `x += α·p`,
//! `r -= α·q` (and `z = r / diag` with Jacobi) with the partials of `r·z` and `r·r` in the same
//! pass (`cg_step.wgsl`; their reduction computes β, counts the iteration, keeps `r·r` and
//! stops the solve at the tolerance); and `p = z + β·p`. Once a stop is set, α and β are 0 and the iterations left in the submission
//! change nothing. shaders/solvers/ holds the kernels; `reference::cg` is the same
//! algorithm on the CPU.

use super::common::{check_args, check_vector, Scratch, Workspace, REL_TOL2};
use super::SolveReport;
use crate::gpu::GpuVector;
use crate::plan::SpmvPlan;
use crate::{Result, Scalar};

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

/// Solves `A·x = b` by conjugate gradient, `A` being `plan`'s matrix (square, symmetric positive
/// definite), starting from the `x` given and leaving the last iterate there. Stopping for a
/// reason other than convergence is a [`super::Stop`] in the report, not an error; errors are
/// bad arguments (lengths, devices, aliasing, a non-square plan) and GPU failures.
pub fn cg<T: Scalar>(
    plan: &SpmvPlan<T>,
    b: &GpuVector<T>,
    x: &mut GpuVector<T>,
    opts: &CgOptions<'_, T>,
) -> Result<SolveReport> {
    solve(plan, b, x, opts, None).map(|(report, _)| report)
}

/// Where an iteration's GPU time goes: solves as [`cg`] does, then runs `rounds` more
/// iterations with every dispatch in a pass of its own between two timestamps, back to back
/// in one submission (the vectors as the solve left them, so use a `max_iter` that stops it
/// short of convergence). Returns each dispatch's median ms in iteration order, `None` where
/// the adapter has no timestamp queries. A diagnostic for `examples/poisson --profile`.
#[doc(hidden)]
pub fn cg_dispatch_times<T: Scalar>(
    plan: &SpmvPlan<T>,
    b: &GpuVector<T>,
    x: &mut GpuVector<T>,
    opts: &CgOptions<'_, T>,
    rounds: u32,
) -> Result<Option<Vec<(&'static str, f64)>>> {
    solve(plan, b, x, opts, Some(rounds.max(1))).map(|(_, times)| times)
}

type DispatchTimes = Option<Vec<(&'static str, f64)>>;

fn solve<T: Scalar>(
    plan: &SpmvPlan<T>,
    b: &GpuVector<T>,
    x: &mut GpuVector<T>,
    opts: &CgOptions<'_, T>,
    profile: Option<u32>,
) -> Result<(SolveReport, DispatchTimes)> {
    let start = std::time::Instant::now();
    check_args(plan, b, x, (opts.tol, opts.check_every))?;
    if let Some(d) = opts.jacobi {
        check_vector(plan, d, "jacobi (1 / diag)")?;
    }
    let gpu = plan.gpu().clone();
    let _turn = gpu.gl_turn();
    let n = plan.nrows();
    let w = Workspace::<T>::new(&gpu, n, opts.max_iter)?;
    let mut r = Scratch::<T>::zeroed(&gpu, n)?;
    let p = Scratch::<T>::zeroed(&gpu, n)?;
    let mut q = Scratch::<T>::zeroed(&gpu, n)?;
    let z_own = match opts.jacobi {
        Some(_) => Some(Scratch::<T>::zeroed(&gpu, n)?),
        None => None,
    };
    let placeholder = |label| gpu.storage_zeroed(label, 16, wgpu::BufferUsages::empty());
    let (no_z, no_diag) = (placeholder("cg no z")?, placeholder("cg no diagonal")?);
    // Without a preconditioner z is r itself, and the kernels' z and 1/diag are placeholders.
    let rb = r.buffer.clone();
    let z = z_own.as_ref().map_or(&rb, |z| &z.buffer);
    let z_out: &wgpu::Buffer = z_own.as_ref().map_or(&no_z, |z| &z.buffer);
    let inv_diag: &wgpu::Buffer = opts.jacobi.map_or(&no_diag, |d| &d.buffer);
    let (pb, qb, xb, bb) = (&p.buffer, &q.buffer.clone(), &x.buffer.clone(), &b.buffer);
    let jacobi = vec![("JACOBI", opts.jacobi.is_some() as u32)];
    let scalars = &w.scalars.clone();
    let pq = w.dot([pb, qb, pb, qb], false)?;
    let alpha = w.reduce(1)?;
    let step = w.bound(
        crate::kernel::CG_STEP,
        jacobi,
        &[
            scalars,
            pb,
            qb,
            inv_diag,
            xb,
            &rb,
            z_out,
            &w.partials,
            &w.dot_params,
        ],
    )?;
    let beta = w.reduce(2)?;
    let pz = w.bound(
        crate::kernel::CG_UPDATE_P,
        vec![],
        &[scalars, z, pb, &w.len],
    )?;
    let (bb_dot, tolerance, begin) = (w.dot([bb, bb, bb, bb], false)?, w.reduce(4)?, w.reduce(3)?);
    let (dg, vg) = (w.dot_grid, w.vector_grid);
    let tail = |enc: &mut wgpu::CommandEncoder, start: bool| {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("cg"),
            timestamp_writes: None,
        });
        if start {
            bb_dot.dispatch(&mut pass, dg);
            tolerance.dispatch(&mut pass, [1, 1]);
        } else {
            pq.dispatch(&mut pass, dg);
            alpha.dispatch(&mut pass, [1, 1]);
        }
        step.dispatch(&mut pass, dg);
        if start { &begin } else { &beta }.dispatch(&mut pass, [1, 1]);
        pz.dispatch(&mut pass, vg);
    };
    // The start: α = β = 0, the tolerance from b·b, r = b − A·x, z, r·z and r·r, p = z.
    w.reset(&[(REL_TOL2, opts.tol * opts.tol)]);
    let s = std::mem::size_of::<T>() as u64;
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    gpu.record_copy(&mut enc, bb, 0, &rb, 0, n as u64 * s)?;
    plan.record_axpby(&mut enc, T::from_f64(-1.0), x, T::from_f64(1.0), &mut r)?;
    tail(&mut enc, true);
    let outcome = w.iterate(enc, opts.check_every, |enc| {
        plan.record(enc, &p, &mut q)?;
        tail(enc, false);
        Ok(())
    })?;
    let times = match profile {
        Some(rounds) => {
            let mut product = plan.pass_product(&p, &q)?;
            let mut pq = |pass: &mut wgpu::ComputePass<'_>| pq.dispatch(pass, dg);
            let mut alpha = |pass: &mut wgpu::ComputePass<'_>| alpha.dispatch(pass, [1, 1]);
            let mut step = |pass: &mut wgpu::ComputePass<'_>| step.dispatch(pass, dg);
            let mut beta = |pass: &mut wgpu::ComputePass<'_>| beta.dispatch(pass, [1, 1]);
            let mut pz = |pass: &mut wgpu::ComputePass<'_>| pz.dispatch(pass, vg);
            let mut records: [&mut dyn FnMut(&mut wgpu::ComputePass<'_>); 6] = [
                &mut product,
                &mut pq,
                &mut alpha,
                &mut step,
                &mut beta,
                &mut pz,
            ];
            let names = ["product", "p·q", "α", "x, r (r·z, r·r)", "β", "p"];
            gpu.time_back_to_back(&mut records, 0, rounds, &[1; 6])?
                .map(|per| {
                    names
                        .iter()
                        .zip(per)
                        .map(|(&name, mut ms)| {
                            ms.sort_by(f64::total_cmp);
                            (name, ms[ms.len() / 2])
                        })
                        .collect()
                })
        }
        None => None,
    };
    Ok((w.report(plan, (b, x, &mut q), outcome, start)?, times))
}
