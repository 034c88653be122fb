//! Iterative solvers that stay on the GPU, over any plan (any method, `Auto` included): the
//! vector updates, dot products and scalars between products run as kernels of their own
//! (deterministic: fixed reduction trees, no float atomics), many iterations per submission,
//! with one small read back per submission to see whether to stop.
//!
//! - [`cg`]: conjugate gradient for symmetric positive definite matrices, optionally with a
//!   Jacobi (diagonal) preconditioner ([`inverse_diagonal`]);
//! - [`bicgstab`]: BiCGStab for non-symmetric systems;
//! - [`pagerank`]: PageRank by power iteration on a graph's adjacency matrix (through the
//!   plan's plan of the transpose);
//! - on [`GpuVector`](crate::GpuVector): `dot` (deterministic), `record_dot` into α or β of a
//!   [`Coefficients`](crate::Coefficients) buffer, `axpby` and `record_axpby_with` (α, β from
//!   such a buffer), `mul` (elementwise), `scale` and `record_scale_with`: the same kernels,
//!   for an application's own iterations.

mod bicgstab;
mod cg;
mod common;
mod pagerank;
mod vector;

pub use bicgstab::{bicgstab, BicgstabOptions};
pub use cg::{cg, cg_dispatch_times, CgOptions};
pub use pagerank::{pagerank, PageRankOptions};

use crate::{CsrMatrix, Error, Result, Scalar};

/// Why a solve stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The residual reached the tolerance.
    Converged,
    /// The iteration limit came first.
    MaxIterations,
    /// CG met a direction `p` with `p·Ap ≤ 0`: the matrix is not positive definite.
    NotPositiveDefinite,
    /// A scalar of the iteration became 0, NaN or infinite (e.g. NaN in A or b).
    Breakdown,
}

/// What a solve did.
#[derive(Clone, Debug)]
pub struct SolveReport {
    /// Why it stopped.
    pub stop: Stop,
    /// Iterations run (each one product with A).
    pub iterations: usize,
    /// The convergence measure after each iteration `i` (index 0: the start): for CG and
    /// BiCGStab `‖r_i‖ / ‖b‖` of the recurrence's residual (`‖r_i‖` where b = 0), for PageRank
    /// the L1 change of the ranks.
    pub residuals: Vec<f64>,
    /// Recomputed from the result once the solve stopped: for CG and BiCGStab `‖b − A·x‖ / ‖b‖`
    /// (`‖b − A·x‖` where b = 0), for PageRank `|Σ r − 1|`.
    pub true_residual: f64,
    /// Submissions to the GPU, each followed by one read back of 8 bytes.
    pub submissions: usize,
    /// Wall-clock time of the solve, setup of its buffers included.
    pub time: std::time::Duration,
}

impl SolveReport {
    /// Whether the residual reached the tolerance.
    pub fn converged(&self) -> bool {
        self.stop == Stop::Converged
    }
}

/// `1 / a_ii` for each row of a square matrix, for [`CgOptions::jacobi`]; an error where a
/// diagonal entry is missing, zero or not finite.
pub fn inverse_diagonal<T: Scalar>(a: &CsrMatrix<T>) -> Result<Vec<T>> {
    if a.nrows() != a.ncols() {
        return Err(Error::DimensionMismatch {
            what: "columns of a matrix to precondition (it must be square)",
            expected: a.nrows(),
            actual: a.ncols(),
        });
    }
    (0..a.nrows())
        .map(|r| {
            let (cols, vals) = a.row(r);
            let d = cols
                .iter()
                .position(|&c| c as usize == r)
                .map_or(0.0, |p| vals[p].to_f64());
            if d == 0.0 || !d.is_finite() {
                return Err(Error::InvalidParameter {
                    name: "matrix",
                    value: format!("diagonal entry {r} = {d}"),
                    reason: "a Jacobi preconditioner needs a finite, non-zero diagonal".into(),
                });
            }
            Ok(T::from_f64(1.0 / d))
        })
        .collect()
}
