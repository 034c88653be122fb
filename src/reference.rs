//! The CPU reference, in f64 with rayon, to check GPU results against on the host: SpMV
//! ([`spmv_seq`], [`spmv_par`], [`spmv_axpby`]), the accuracy check every GPU result of this
//! crate's tests goes through ([`check`]), and the solvers' twins ([`cg`], [`bicgstab`],
//! [`pagerank`]), step for step the algorithms of [`crate::solvers`]. Always available (no
//! feature); the library itself never calls it.

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

/// What [`cg`], [`bicgstab`] or [`pagerank`] computed: the last iterate, `‖r_i‖ / ‖b‖` after each iteration (index 0 is the
/// start) and why it stopped.
#[derive(Clone, Debug)]
pub struct CgResult {
    /// The last iterate.
    pub x: Vec<f64>,
    /// `‖r_i‖ / ‖b‖` of the recurrence's residual, from the start.
    pub residuals: Vec<f64>,
    /// Why it stopped.
    pub stop: crate::solvers::Stop,
}

/// Conjugate gradient in f64 on the CPU (rayon), step for step the algorithm of
/// [`crate::solvers::cg`]: the same start, updates, stops and tolerance, for the tests to
/// compare residual histories with.
pub fn cg<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &[T],
    x0: &[T],
    inv_diag: Option<&[T]>,
    tol: f64,
    max_iter: usize,
) -> Result<CgResult> {
    use crate::solvers::Stop;
    let dot = |u: &[f64], v: &[f64]| -> f64 { u.par_iter().zip(v).map(|(a, b)| a * b).sum() };
    let precondition = |r: &[f64]| -> Vec<f64> {
        match inv_diag {
            Some(d) => r.iter().zip(d).map(|(r, d)| r * d.to_f64()).collect(),
            None => r.to_vec(),
        }
    };
    let mut x: Vec<f64> = x0.iter().map(|v| v.to_f64()).collect();
    let ax = spmv_par(a, x0)?;
    let mut r: Vec<f64> = b.iter().zip(&ax).map(|(b, ax)| b.to_f64() - ax).collect();
    let mut z = precondition(&r);
    let mut p = z.clone();
    let mut rz = dot(&r, &z);
    let bf: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
    let bb = dot(&bf, &bf);
    let norm = |rr: f64| {
        if bb > 0.0 {
            (rr / bb).sqrt()
        } else {
            rr.sqrt()
        }
    };
    let rr0 = dot(&r, &r);
    let tol2 = tol * tol * bb;
    let mut residuals = vec![norm(rr0)];
    let mut stop = if rr0 <= tol2 {
        Stop::Converged
    } else {
        Stop::MaxIterations
    };
    for _ in 0..max_iter {
        if stop != Stop::MaxIterations {
            break;
        }
        let pt: Vec<T> = p.iter().map(|&v| T::from_f64(v)).collect();
        let q = spmv_par(a, &pt)?;
        let pq = dot(&p, &q);
        if !(pq > 0.0 && pq.is_finite()) {
            stop = if pq < 0.0 {
                Stop::NotPositiveDefinite
            } else {
                Stop::Breakdown
            };
            break;
        }
        let alpha = rz / pq;
        x.par_iter_mut().zip(&p).for_each(|(x, p)| *x += alpha * p);
        r.par_iter_mut().zip(&q).for_each(|(r, q)| *r -= alpha * q);
        z = precondition(&r);
        let (rz_new, rr) = (dot(&r, &z), dot(&r, &r));
        residuals.push(norm(rr));
        if !(rr.is_finite() && rz_new.is_finite()) {
            stop = Stop::Breakdown;
        } else if rr <= tol2 {
            stop = Stop::Converged;
        } else {
            let beta = rz_new / rz;
            rz = rz_new;
            p.par_iter_mut()
                .zip(&z)
                .for_each(|(p, z)| *p = z + beta * *p);
        }
    }
    Ok(CgResult { x, residuals, stop })
}

/// BiCGStab in f64 on the CPU (rayon), step for step the algorithm of
/// [`crate::solvers::bicgstab`] (the shadow residual is the first residual).
pub fn bicgstab<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &[T],
    x0: &[T],
    tol: f64,
    max_iter: usize,
) -> Result<CgResult> {
    use crate::solvers::Stop;
    let dot = |u: &[f64], v: &[f64]| -> f64 { u.par_iter().zip(v).map(|(a, b)| a * b).sum() };
    let product = |v: &[f64]| -> Result<Vec<f64>> {
        let vt: Vec<T> = v.iter().map(|&e| T::from_f64(e)).collect();
        spmv_par(a, &vt)
    };
    let mut x: Vec<f64> = x0.iter().map(|v| v.to_f64()).collect();
    let ax = spmv_par(a, x0)?;
    let mut r: Vec<f64> = b.iter().zip(&ax).map(|(b, ax)| b.to_f64() - ax).collect();
    let shadow = r.clone();
    let bf: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
    let bb = dot(&bf, &bf);
    let norm = |rr: f64| {
        if bb > 0.0 {
            (rr / bb).sqrt()
        } else {
            rr.sqrt()
        }
    };
    let tol2 = tol * tol * bb;
    let rr0 = dot(&r, &r);
    let mut rho = dot(&shadow, &r);
    let mut residuals = vec![norm(rr0)];
    let mut p = r.clone();
    let mut v = vec![0.0; r.len()];
    let mut stop = if rr0 <= tol2 {
        Stop::Converged
    } else {
        Stop::MaxIterations
    };
    for _ in 0..max_iter {
        if stop != Stop::MaxIterations {
            break;
        }
        v = product(&p)?;
        let hv = dot(&shadow, &v);
        if hv == 0.0 || !hv.is_finite() {
            stop = Stop::Breakdown;
            break;
        }
        let alpha = rho / hv;
        x.par_iter_mut().zip(&p).for_each(|(x, p)| *x += alpha * p);
        r.par_iter_mut().zip(&v).for_each(|(r, v)| *r -= alpha * v);
        let t = product(&r)?;
        let (ts, tt) = (dot(&t, &r), dot(&t, &t));
        if !(ts.is_finite() && tt.is_finite()) {
            stop = Stop::Breakdown;
            break;
        }
        let omega = if tt == 0.0 { 0.0 } else { ts / tt };
        if omega != 0.0 {
            x.par_iter_mut().zip(&r).for_each(|(x, s)| *x += omega * s);
            r.par_iter_mut().zip(&t).for_each(|(s, t)| *s -= omega * t);
        }
        let (rho_new, rr) = (dot(&shadow, &r), dot(&r, &r));
        residuals.push(norm(rr));
        if !(rr.is_finite() && rho_new.is_finite()) {
            stop = Stop::Breakdown;
        } else if rr <= tol2 {
            stop = Stop::Converged;
        } else if rho_new == 0.0 || omega == 0.0 {
            stop = Stop::Breakdown;
        } else {
            let beta = (rho_new / rho) * (alpha / omega);
            rho = rho_new;
            p.par_iter_mut()
                .zip(&r)
                .zip(&v)
                .for_each(|((p, r), v)| *p = r + beta * (*p - omega * v));
        }
    }
    Ok(CgResult { x, residuals, stop })
}

/// PageRank by power iteration in f64 on the CPU, step for step the algorithm of
/// [`crate::solvers::pagerank`]: G's entry (i, j) a link i → j of that weight, a node whose
/// out-weights sum to 0 or less dangling, `v` the personalization (uniform where `None`), the
/// L1 change of each iteration in `residuals` (index 0: 0).
pub fn pagerank<T: Scalar>(
    g: &CsrMatrix<T>,
    damping: f64,
    v: Option<&[f64]>,
    tol: f64,
    max_iter: usize,
) -> Result<CgResult> {
    use crate::solvers::Stop;
    let n = g.nrows();
    let v: Vec<f64> = match v {
        Some(v) => v.to_vec(),
        None => vec![1.0 / n.max(1) as f64; n],
    };
    let degree: Vec<f64> = (0..n)
        .map(|i| g.row(i).1.iter().map(|w| w.to_f64()).sum())
        .collect();
    let mut r = v.clone();
    let mut residuals = vec![0.0];
    let mut stop = Stop::MaxIterations;
    for _ in 0..max_iter {
        let dangling: f64 = (0..n).filter(|&i| degree[i] <= 0.0).map(|i| r[i]).sum();
        let mut y = vec![0.0; n];
        for i in 0..n {
            if degree[i] > 0.0 {
                let w = r[i] / degree[i];
                let (cols, vals) = g.row(i);
                for (&j, &a) in cols.iter().zip(vals) {
                    y[j as usize] += a.to_f64() * w;
                }
            }
        }
        let add = damping * dangling + 1.0 - damping;
        let mut change = 0.0;
        for i in 0..n {
            let next = damping * y[i] + add * v[i];
            change += (next - r[i]).abs();
            r[i] = next;
        }
        residuals.push(change);
        if !change.is_finite() {
            stop = Stop::Breakdown;
            break;
        }
        if change <= tol {
            stop = Stop::Converged;
            break;
        }
    }
    Ok(CgResult {
        x: r,
        residuals,
        stop,
    })
}
