//! Conjugate gradient on the GPU. Per iteration, four dispatches: `q = A·p` (the plan's
//! product); the partials of `p·q`; `cg_step.wgsl`, whose every workgroup adds those up itself
//! for α, then `x += α·p`, `r -= α·q` and the partials of `r·z` and `r·r`; and
//! `cg_update_p.wgsl`, whose every workgroup adds those up for β (one of them counting the
//! iteration, keeping `r·r` and stopping the solve at the tolerance), then `p = z + β·p`. With
//! Jacobi, `z = r / diag` is computed where it is read, never stored. Once a stop is set, α
//! and β are 0 and the iterations left in the submission change nothing. shaders/solvers/
//! holds the kernels; `reference::cg` is the same algorithm on the CPU.

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
    w.log_phase(&format!(
        "workspace made, {:.3} ms into the call",
        start.elapsed().as_secs_f64() * 1e3
    ));
    let mut r = Scratch::<T>::zeroed(&gpu, n)?;
    let p = Scratch::<T>::zeroed(&gpu, n)?;
    let mut q = Scratch::<T>::zeroed(&gpu, n)?;
    w.log_phase("vectors made");
    let no_diag = gpu.storage_zeroed("cg no diagonal", 16, wgpu::BufferUsages::empty())?;
    // Without a preconditioner z is r itself, and the kernels' 1/diag a placeholder.
    let inv_diag: &wgpu::Buffer = opts.jacobi.map_or(&no_diag, |d| &d.buffer);
    let (rb, pb, qb, xb, bb) = (
        &r.buffer.clone(),
        &p.buffer,
        &q.buffer.clone(),
        &x.buffer.clone(),
        &b.buffer,
    );
    let (scalars, state, history, partials) = (&w.scalars, &w.state, &w.history, &w.partials);
    let jacobi = ("JACOBI", opts.jacobi.is_some() as u32);
    // An iteration's kernels read ρ from one of two slots and the next writes the other: a
    // pair of each, by the parity of the iteration.
    let odd = w.dot_params_with_parity(1);
    let params: [&wgpu::Buffer; 2] = [&w.dot_params, &odd];
    let step = |start: u32, params: &wgpu::Buffer| {
        w.bound(
            crate::kernel::CG_STEP,
            vec![jacobi, ("START", start)],
            &[scalars, state, pb, qb, inv_diag, xb, rb, partials, params],
        )
    };
    let update_p = |start: u32, params: &wgpu::Buffer| {
        w.bound(
            crate::kernel::CG_UPDATE_P,
            vec![jacobi, ("START", start)],
            &[scalars, state, history, rb, inv_diag, pb, partials, params],
        )
    };
    let pq = w.dot([pb, qb, pb, qb], false)?;
    let steps = [step(0, params[0])?, step(0, params[1])?];
    let updates = [update_p(0, params[0])?, update_p(0, params[1])?];
    let (bb_dot, tolerance) = (w.dot([bb, bb, bb, bb], false)?, w.reduce(4)?);
    let (first_step, begin, first_p) = (
        step(1, params[0])?,
        w.reduce_second(3)?,
        update_p(1, params[0])?,
    );
    let dg = w.dot_grid;
    w.log_phase("kernels bound");
    // The start: α = β = 0, the tolerance from b·b, r = b − A·x, r·z and r·r, p = z.
    w.reset(&[(REL_TOL2, opts.tol * opts.tol)]);
    let s = std::mem::size_of::<T>() as u64;
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    gpu.record_copy(&mut enc, bb, 0, rb, 0, n as u64 * s)?;
    plan.record_axpby(&mut enc, T::from_f64(-1.0), x, T::from_f64(1.0), &mut r)?;
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        bb_dot.dispatch(&mut pass, dg);
        tolerance.dispatch(&mut pass, [1, 1]);
        first_step.dispatch(&mut pass, dg);
        begin.dispatch(&mut pass, [1, 1]);
        first_p.dispatch(&mut pass, dg);
    }
    let mut parity = 0;
    let outcome = w.iterate(enc, opts.check_every, |pass| {
        plan.record_in_pass(pass, &p, &mut q)?;
        pq.dispatch(pass, dg);
        steps[parity].dispatch(pass, dg);
        updates[parity].dispatch(pass, dg);
        parity ^= 1;
        Ok(())
    })?;
    let times = match profile {
        Some(rounds) => {
            // Timed back to back, iterations alternate parities as in the solve.
            let parity = std::cell::Cell::new(parity);
            let mut product = plan.pass_product(&p, &q)?;
            let mut pq = |pass: &mut wgpu::ComputePass<'_>| pq.dispatch(pass, dg);
            let mut step =
                |pass: &mut wgpu::ComputePass<'_>| steps[parity.get()].dispatch(pass, dg);
            let mut update = |pass: &mut wgpu::ComputePass<'_>| {
                updates[parity.get()].dispatch(pass, dg);
                parity.set(parity.get() ^ 1);
            };
            let mut records: [&mut dyn FnMut(&mut wgpu::ComputePass<'_>); 4] =
                [&mut product, &mut pq, &mut step, &mut update];
            let names = ["product", "p·q", "α; x, r (r·z, r·r)", "β; p"];
            gpu.time_back_to_back(&mut records, 0, rounds, &[1; 4])?
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
