//! CPU reference SpMV, accumulating in f64, and the accuracy check every GPU result goes through.

use crate::{CsrMatrix, Error, Result, Scalar};
use rayon::prelude::*;

fn check_dims<T: Scalar>(a: &CsrMatrix<T>, x: &[T]) -> Result<()> {
    if x.len() != a.ncols() {
        return Err(Error::DimensionMismatch {
            what: "x",
            expected: a.ncols(),
            actual: x.len(),
        });
    }
    Ok(())
}

fn row_dot<T: Scalar>(a: &CsrMatrix<T>, x: &[T], r: usize) -> f64 {
    let (cols, vals) = a.row(r);
    cols.iter()
        .zip(vals)
        .map(|(&c, v)| v.to_f64() * x[c as usize].to_f64())
        .sum()
}

/// `A·x` in f64, one row after another.
pub fn spmv_seq<T: Scalar>(a: &CsrMatrix<T>, x: &[T]) -> Result<Vec<f64>> {
    check_dims(a, x)?;
    Ok((0..a.nrows()).map(|r| row_dot(a, x, r)).collect())
}

/// `A·x` in f64, rows in parallel with rayon.
pub fn spmv_par<T: Scalar>(a: &CsrMatrix<T>, x: &[T]) -> Result<Vec<f64>> {
    check_dims(a, x)?;
    Ok((0..a.nrows())
        .into_par_iter()
        .map(|r| row_dot(a, x, r))
        .collect())
}

/// `α·A·x + β·y` in f64 (rayon). With β = 0, `y` is not read (it may hold NaN), as in BLAS.
pub fn spmv_axpby<T: Scalar>(
    alpha: f64,
    a: &CsrMatrix<T>,
    x: &[T],
    beta: f64,
    y: &[T],
) -> Result<Vec<f64>> {
    if y.len() != a.nrows() {
        return Err(Error::DimensionMismatch {
            what: "y",
            expected: a.nrows(),
            actual: y.len(),
        });
    }
    let ax = spmv_par(a, x)?;
    Ok(ax
        .into_par_iter()
        .zip(y.par_iter())
        .map(|(s, &yv)| {
            if beta == 0.0 {
                alpha * s
            } else {
                alpha * s + beta * yv.to_f64()
            }
        })
        .collect())
}

/// How a computed `y` compares with the f64 reference.
#[derive(Clone, Debug)]
pub struct Check {
    /// `‖y − y_ref‖₂ / ‖y_ref‖₂` over the rows whose reference is finite (the `rel_err` column of
    /// the benchmark); infinite when such a row of `y` is not finite.
    pub rel_err: f64,
    /// The row whose error is largest relative to its own bound, with that error and bound.
    pub worst_row: Option<(usize, f64, f64)>,
    /// The first row whose IEEE class differs from the reference (NaN where it has none, or none
    /// where it has one; an infinity of the wrong sign, or where the reference is finite).
    pub special_mismatch: Option<(usize, f64, f64)>,
    /// Whether every row is within its bound and every NaN and infinity is where the reference has
    /// it.
    pub ok: bool,
}

/// Compares `y` (computed in `T`) with the f64 reference for `y = α·A·x + β·y0`.
///
/// Specials are compared exactly: a row must be NaN exactly where the reference is NaN and `±∞`
/// exactly where it is (whatever the summation order, a sum's class does not depend on it).
/// Each finite row gets its own bound from its length: any summation order of `n` products in a
/// type with unit roundoff `u` errs by at most about `n·u·Σ|a_ij·x_j|`; we allow `2·(n+2)·u` times
/// that (products, the α/β update and the final rounding), plus `4u·|β·y0|`. A row with no entries
/// must come out exactly `β·y0` (0 when β = 0). The bound is a worst case: tests whose point is
/// that no entry is lost use exact oracles (small integers) instead.
pub fn check<T: Scalar>(
    alpha: f64,
    a: &CsrMatrix<T>,
    x: &[T],
    beta: f64,
    y0: Option<&[T]>,
    y: &[T],
    y_ref: &[f64],
) -> Check {
    let u = T::EPSILON;
    let rows: Vec<(f64, f64)> = (0..a.nrows())
        .into_par_iter()
        .map(|r| {
            let (got, want) = (y[r].to_f64(), y_ref[r]);
            if !want.is_finite() {
                return (0.0, 1.0);
            }
            let (cols, vals) = a.row(r);
            let mag: f64 = cols
                .iter()
                .zip(vals)
                .map(|(&c, v)| (v.to_f64() * x[c as usize].to_f64()).abs())
                .sum();
            let by = if beta == 0.0 {
                0.0
            } else {
                (beta * y0.map_or(0.0, |y0| y0[r].to_f64())).abs()
            };
            let bound = 2.0 * (cols.len() as f64 + 2.0) * u * alpha.abs() * mag
                + 4.0 * u * by
                + f64::MIN_POSITIVE;
            let err = (got - want).abs();
            (if err.is_finite() { err } else { f64::INFINITY }, bound)
        })
        .collect();
    let same_class = |got: f64, want: f64| match (got.is_nan(), want.is_nan()) {
        (true, true) => true,
        (false, false) => want.is_finite() == got.is_finite() && (want.is_finite() || got == want),
        _ => false,
    };
    let special_mismatch = (0..a.nrows())
        .find(|&r| !same_class(y[r].to_f64(), y_ref[r]))
        .map(|r| (r, y[r].to_f64(), y_ref[r]));
    let worst = rows
        .iter()
        .enumerate()
        .max_by(|a, b| (a.1 .0 / a.1 .1).total_cmp(&(b.1 .0 / b.1 .1)))
        .map(|(r, &(e, b))| (r, e, b));
    let ok = special_mismatch.is_none() && rows.iter().all(|&(e, b)| e <= b);
    let finite = |r: usize| y_ref[r].is_finite();
    let num: f64 = (0..a.nrows())
        .into_par_iter()
        .filter(|&r| finite(r))
        .map(|r| (y[r].to_f64() - y_ref[r]).powi(2))
        .sum();
    let den: f64 = (0..a.nrows())
        .into_par_iter()
        .filter(|&r| finite(r))
        .map(|r| y_ref[r] * y_ref[r])
        .sum();
    let rel_err = if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    };
    Check {
        rel_err: if rel_err.is_nan() {
            f64::INFINITY
        } else {
            rel_err
        },
        worst_row: worst,
        special_mismatch,
        ok,
    }
}
