//! BiCGStab (van der Vorst) on the GPU, for non-symmetric systems. Per iteration: `v = A·p`;
//! `r̂·v` and α; `x += α·p`, `s = r − α·v` (in r); `t = A·s`; `t·s`, `t·t` and ω; `x += ω·s`,
//! `r = s − ω·t`; `r̂·r` and `r·r` in one pass (the iteration counted, a stop at the tolerance,
//! β = (ρ'/ρ)(α/ω)); `p = r + β·(p − ω·v)`. Breakdowns (ρ, r̂·v or ω of 0, NaN) are a
//! [`Stop::Breakdown`](super::Stop::Breakdown). `reference::bicgstab` is the same
//! algorithm on the CPU.

use super::common::{check_args, Scratch, Workspace, REL_TOL2};
use super::SolveReport;
use crate::gpu::GpuVector;
use crate::plan::SpmvPlan;
use crate::{Result, Scalar};

/// Options of [`bicgstab`].
#[derive(Clone, Debug)]
pub struct BicgstabOptions {
    /// Stop once `‖r‖ ≤ tol · ‖b‖` (`r` the recurrence's residual). Default 1e-6.
    pub tol: f64,
    /// Most iterations (each two products). Default 10 000.
    pub max_iter: usize,
    /// Iterations recorded per submission, between two looks at whether to stop. Default 16.
    pub check_every: usize,
}

impl Default for BicgstabOptions {
    fn default() -> Self {
        Self {
            tol: 1e-6,
            max_iter: 10_000,
            check_every: 16,
        }
    }
}

/// Solves `A·x = b` by BiCGStab, `A` being `plan`'s matrix (square), starting from the `x`
/// given and leaving the last iterate there. The shadow residual is the first residual.
pub fn bicgstab<T: Scalar>(
    plan: &SpmvPlan<T>,
    b: &GpuVector<T>,
    x: &mut GpuVector<T>,
    opts: &BicgstabOptions,
) -> Result<SolveReport> {
    let start = std::time::Instant::now();
    check_args(plan, b, x, (opts.tol, opts.check_every))?;
    let gpu = plan.gpu().clone();
    let _turn = gpu.gl_turn();
    let n = plan.nrows();
    let w = Workspace::<T>::new(&gpu, n, opts.max_iter)?;
    let mut r = Scratch::<T>::zeroed(&gpu, n)?;
    let shadow = Scratch::<T>::zeroed(&gpu, n)?;
    let p = Scratch::<T>::zeroed(&gpu, n)?;
    let mut v = Scratch::<T>::zeroed(&gpu, n)?;
    let mut t = Scratch::<T>::zeroed(&gpu, n)?;
    let (rb, hb, pb, vb, tb) = (
        &r.buffer.clone(),
        &shadow.buffer,
        &p.buffer,
        &v.buffer.clone(),
        &t.buffer.clone(),
    );
    let (xb, bb, scalars) = (&x.buffer.clone(), &b.buffer, &w.scalars.clone());
    let hv = w.dot([hb, vb, hb, vb], false)?;
    let alpha = w.reduce(6)?;
    let s_of = w.bound(
        crate::kernel::BICGSTAB_HALF_STEP,
        vec![],
        &[scalars, pb, vb, xb, rb, &w.len],
    )?;
    let ts = w.dot([tb, rb, tb, tb], true)?;
    let omega = w.reduce(7)?;
    let update = w.bound(
        crate::kernel::BICGSTAB_UPDATE,
        vec![],
        &[scalars, tb, xb, rb, &w.len],
    )?;
    let hr = w.dot([hb, rb, rb, rb], true)?;
    let rho = w.reduce(8)?;
    let next_p = w.bound(
        crate::kernel::BICGSTAB_P,
        vec![],
        &[scalars, rb, vb, pb, &w.len],
    )?;
    let (bb_dot, tolerance, begin) = (w.dot([bb, bb, bb, bb], false)?, w.reduce(4)?, w.reduce(3)?);
    let (dg, vg) = (w.dot_grid, w.vector_grid);
    fn pass(enc: &mut wgpu::CommandEncoder) -> wgpu::ComputePass<'_> {
        enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("bicgstab"),
            timestamp_writes: None,
        })
    }
    // The start: r = b − A·x, r̂ = r, the tolerance, ρ = r̂·r, p = r.
    w.reset(&[(REL_TOL2, opts.tol * opts.tol)]);
    let s = std::mem::size_of::<T>() as u64;
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    gpu.record_copy(&mut enc, bb, 0, rb, 0, n as u64 * s)?;
    plan.record_axpby(&mut enc, T::from_f64(-1.0), x, T::from_f64(1.0), &mut r)?;
    gpu.record_copy(&mut enc, rb, 0, hb, 0, n as u64 * s)?;
    {
        let mut pass = pass(&mut enc);
        bb_dot.dispatch(&mut pass, dg);
        tolerance.dispatch(&mut pass, [1, 1]);
        hr.dispatch(&mut pass, dg);
        begin.dispatch(&mut pass, [1, 1]);
        next_p.dispatch(&mut pass, vg);
    }
    let outcome = w.iterate(enc, opts.check_every, |pass| {
        plan.record_in_pass(pass, &p, &mut v)?;
        hv.dispatch(pass, dg);
        alpha.dispatch(pass, [1, 1]);
        s_of.dispatch(pass, vg);
        plan.record_in_pass(pass, &r, &mut t)?;
        ts.dispatch(pass, dg);
        omega.dispatch(pass, [1, 1]);
        update.dispatch(pass, vg);
        hr.dispatch(pass, dg);
        rho.dispatch(pass, [1, 1]);
        next_p.dispatch(pass, vg);
        Ok(())
    })?;
    w.report(plan, (b, x, &mut v), outcome, start)
}
