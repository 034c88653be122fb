//! PageRank by power iteration on the GPU, on a graph's adjacency matrix as given: G's entry
//! (i, j) is a link i → j of that weight. With P = D⁻¹G (D the weighted out-degrees, G·1,
//! computed by the plan itself) each iteration is
//! `r' = d·Pᵀr + (d·Σ_dangling r + 1 − d)·v`: `y = Gᵀ·w` by the plan's plan of Gᵀ
//! (`PlanOptions::transposed`), where `w = r / D` (0 for dangling nodes), then one pass that
//! writes `r'` and the next `w`, and sums the L1 change `‖r' − r‖₁` (which stops the iteration
//! at the tolerance) and the dangling nodes' rank; one workgroup then adds those up. Three
//! dispatches per iteration.
//! `reference::pagerank` is the same algorithm on the CPU.

use super::common::{check_vector, Scratch, Workspace, DAMPING, TOL2};
use super::SolveReport;
use crate::gpu::GpuVector;
use crate::plan::SpmvPlan;
use crate::{Error, Result, Scalar};

/// Options of [`pagerank`].
#[derive(Clone, Debug)]
pub struct PageRankOptions<'a, T> {
    /// The damping factor d (the probability of following a link). Default 0.85.
    pub damping: f64,
    /// Stop once an iteration changes the ranks by at most this much in L1. Default 1e-6.
    pub tol: f64,
    /// Most iterations. Default 1 000.
    pub max_iter: usize,
    /// Iterations per submission, between two looks at whether to stop. Default 32.
    pub check_every: usize,
    /// Where the random jumps (and the dangling nodes' rank) go, summing to 1; `None`: every
    /// node alike (1/n each). Also the start.
    pub personalization: Option<&'a GpuVector<T>>,
}

impl<T> Default for PageRankOptions<'_, T> {
    fn default() -> Self {
        Self {
            damping: 0.85,
            tol: 1e-6,
            max_iter: 1_000,
            check_every: 32,
            personalization: None,
        }
    }
}

/// The PageRank of the graph whose adjacency matrix `plan` holds (square, non-negative
/// weights; a node whose out-weights sum to 0 or less is dangling), `plan` prepared with
/// [`PlanOptions::transposed`](crate::PlanOptions::transposed). Returns the ranks (summing to 1
/// up to rounding) and a report whose `residuals` are each iteration's L1 change (index 0: 0)
/// and whose `true_residual` is `|Σ r − 1|`.
pub fn pagerank<T: Scalar>(
    plan: &SpmvPlan<T>,
    opts: &PageRankOptions<'_, T>,
) -> Result<(GpuVector<T>, SolveReport)> {
    let start = std::time::Instant::now();
    let n = plan.nrows();
    if plan.ncols() != n {
        return Err(Error::DimensionMismatch {
            what: "columns of the adjacency matrix (it must be square)",
            expected: n,
            actual: plan.ncols(),
        });
    }
    let transposed = plan.transposed()?;
    if let Some(v) = opts.personalization {
        check_vector(plan, v, "personalization")?;
    }
    let d = opts.damping;
    let valid = (0.0..=1.0).contains(&d) && opts.tol >= 0.0 && opts.tol.is_finite();
    if !valid || opts.check_every == 0 {
        return Err(Error::InvalidParameter {
            name: "PageRankOptions",
            value: format!(
                "damping {d}, tol {}, check_every {}",
                opts.tol, opts.check_every
            ),
            reason: "a damping in [0, 1], a finite tolerance ≥ 0, at least one iteration per check"
                .into(),
        });
    }
    let gpu = plan.gpu().clone();
    let _turn = gpu.gl_turn();
    let w = Workspace::<T>::new(&gpu, n, opts.max_iter)?;
    let zero = T::from_f64(0.0);
    let uniform = T::from_f64(1.0 / n.max(1) as f64);
    let ones = GpuVector::filled(&gpu, n, T::from_f64(1.0))?;
    let mut degree = Scratch::<T>::zeroed(&gpu, n)?;
    let inv_degree = Scratch::<T>::zeroed(&gpu, n)?;
    let scaled = Scratch::<T>::zeroed(&gpu, n)?;
    let mut linked = Scratch::<T>::zeroed(&gpu, n)?;
    let own_v = match opts.personalization {
        Some(_) => None,
        None => Some(GpuVector::filled(&gpu, n, uniform)?),
    };
    let v = opts
        .personalization
        .or(own_v.as_ref())
        .expect("one of the two");
    let ranks = GpuVector::filled(&gpu, n, zero)?;
    let (rb, vb, sb, yb) = (
        &ranks.buffer.clone(),
        &v.buffer,
        &scaled.buffer,
        &linked.buffer.clone(),
    );
    let ib = &inv_degree.buffer;
    let prepare = w.bound(
        crate::kernel::PAGERANK_PREPARE,
        vec![],
        &[
            &degree.buffer.clone(),
            vb,
            ib,
            rb,
            sb,
            &w.partials,
            &w.dot_params,
        ],
    )?;
    let add = w.reduce(9)?;
    let update = w.bound(
        crate::kernel::PAGERANK_UPDATE,
        vec![],
        &[
            &w.scalars.clone(),
            &w.state.clone(),
            yb,
            vb,
            ib,
            rb,
            sb,
            &w.partials,
            &w.dot_params,
        ],
    )?;
    let change = w.reduce(10)?;
    let dg = w.dot_grid;
    // The start: the out-degrees G·1, then 1/degree (negative: dangling), r = v, w = r / D and
    // the dangling nodes' rank in one pass; the stop state cleared (a start with no rank to
    // move is not yet converged: history[0] = 0).
    w.reset(&[(TOL2, opts.tol), (DAMPING, d)]);
    gpu.queue()
        .write_buffer(&w.state, 0, bytemuck::cast_slice(&[0u32, 0]));
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    plan.record(&mut enc, &ones, &mut degree)?;
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        prepare.dispatch(&mut pass, dg);
        add.dispatch(&mut pass, [1, 1]);
    }
    let outcome = w.iterate(enc, opts.check_every, |pass| {
        transposed.record_in_pass(pass, &scaled, &mut linked)?;
        update.dispatch(pass, dg);
        change.dispatch(pass, [1, 1]);
        Ok(())
    })?;
    let (iterations, stop, submissions) = outcome;
    let enc = gpu.device().create_command_encoder(&Default::default());
    let ob = &ones.buffer;
    let end = w.dots_and_history(enc, [rb, ob, rb, ob], iterations + 1)?;
    let (residuals, (sum, _)) = (end.history, end.dots);
    Ok((
        ranks,
        SolveReport {
            stop,
            iterations,
            residuals,
            true_residual: (sum - 1.0).abs(),
            submissions,
            time: start.elapsed(),
        },
    ))
}
