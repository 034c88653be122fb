//! Conjugate gradient on the GPU (`solvers::cg`): its residual history against the CPU twin
//! (`reference::cg`) step for step, f32 and f64, with and without Jacobi, on every
//! method; the same bits run to run; the typed stops (not positive definite, NaN, the iteration
//! limit, b = 0) and the bad calls; BiCGStab on a non-symmetric matrix and PageRank (through
//! the transposed product, personalized or not) against their twins too.

use crate::common;
use common::*;
use wgspmv::reference;
use wgspmv::solvers::{
    bicgstab, cg, inverse_diagonal, pagerank, BicgstabOptions, CgOptions, PageRankOptions, Stop,
};
use wgspmv::{CsrMatrix, Error, Gpu, GpuVector, Method, Scalar};

/// The 5-point Laplacian of a k × k grid with a varying diagonal shift (SPD, not trivially
/// scaled, so Jacobi changes the iteration).
fn laplacian(k: usize) -> CsrMatrix<f64> {
    let mut t = Vec::new();
    for i in 0..k {
        for j in 0..k {
            let r = i * k + j;
            t.push((r, r, 4.0 + (r % 7) as f64 * 0.5));
            if i > 0 {
                t.push((r, r - k, -1.0));
            }
            if i + 1 < k {
                t.push((r, r + k, -1.0));
            }
            if j > 0 {
                t.push((r, r - 1, -1.0));
            }
            if j + 1 < k {
                t.push((r, r + 1, -1.0));
            }
        }
    }
    CsrMatrix::from_triplets(k * k, k * k, t).unwrap()
}

fn rhs(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + ((i * 37) % 11) as f64 / 5.0).collect()
}

/// Solves with `method`, and checks the GPU's history against the CPU's step for step while
/// the residual is well above rounding, the stop, and the true residual.
fn check_cg<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<f64>, method: Method, jacobi: bool, label: &str) {
    let at = a.cast::<T>();
    let f32 = std::mem::size_of::<T>() == 4;
    let tol = if f32 { 1e-4 } else { 1e-10 };
    let b: Vec<T> = rhs(a.nrows()).into_iter().map(T::from_f64).collect();
    let plan = gpu.prepare(&at, method).unwrap();
    let gb = GpuVector::from_slice(gpu, &b).unwrap();
    let mut gx = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0)).unwrap();
    let diag = inverse_diagonal(&at).unwrap();
    let gd = GpuVector::from_slice(gpu, &diag).unwrap();
    let opts = CgOptions {
        tol,
        check_every: 7,
        jacobi: jacobi.then_some(&gd),
        ..Default::default()
    };
    let rep = cg(&plan, &gb, &mut gx, &opts).unwrap();
    let zeros = vec![T::from_f64(0.0); a.nrows()];
    let cpu = reference::cg(&at, &b, &zeros, jacobi.then_some(&diag[..]), tol, 10_000).unwrap();
    assert_eq!(rep.residuals.len(), rep.iterations + 1, "{label}");
    agrees_with_twin(&rep, &cpu, &gx, tol, label);
}

/// Checks a GPU solve against its CPU twin: both converged, iteration counts within rounding,
/// residual histories step for step while well above rounding, the true residual, and x.
fn agrees_with_twin<T: Scalar>(
    rep: &wgspmv::solvers::SolveReport,
    cpu: &reference::CgResult,
    gx: &GpuVector<T>,
    tol: f64,
    label: &str,
) {
    let f32 = std::mem::size_of::<T>() == 4;
    assert_eq!(rep.stop, Stop::Converged, "{label}: {rep:?}");
    assert_eq!(cpu.stop, Stop::Converged, "{label}");
    // Rounding moves the last iterations by one or two.
    let (g, c) = (rep.iterations as i64, cpu.residuals.len() as i64 - 1);
    assert!(
        (g - c).abs() <= 2 + g / 10,
        "{label}: {g} iterations, CPU {c}"
    );
    let close = if f32 { 2e-2 } else { 1e-7 };
    for (i, (gr, cr)) in rep.residuals.iter().zip(&cpu.residuals).enumerate() {
        if *cr < if f32 { 1e-2 } else { 1e-6 } {
            break;
        }
        assert!(
            (gr - cr).abs() <= close * cr,
            "{label}: iteration {i}: GPU {gr:e}, CPU {cr:e}"
        );
    }
    assert!(
        rep.true_residual <= 20.0 * tol,
        "{label}: true residual {:e}",
        rep.true_residual
    );
    let x = gx.read().unwrap();
    let err = x
        .iter()
        .zip(&cpu.x)
        .map(|(g, c)| (g.to_f64() - c).abs())
        .fold(0.0, f64::max);
    let scale = cpu.x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(
        err <= if f32 { 1e-3 } else { 1e-8 } * scale,
        "{label}: x off by {err:e}"
    );
}

#[test]
fn agrees_with_the_cpu_step_for_step() {
    let a = laplacian(24);
    for (dev, gpu) in gpus() {
        for jacobi in [false, true] {
            let label = format!("jacobi {jacobi} / {dev}");
            check_cg::<f32>(&gpu, &a, Method::CsrVector, jacobi, &format!("f32 {label}"));
            if has_f64(&gpu) {
                check_cg::<f64>(&gpu, &a, Method::Auto, jacobi, &format!("f64 {label}"));
            }
        }
    }
}

#[test]
fn every_method_and_the_same_bits_run_to_run() {
    let a = laplacian(16).cast::<f32>();
    let gpu = match gpu() {
        Some(g) => g,
        None => return,
    };
    let b: Vec<f32> = rhs(a.nrows()).into_iter().map(|v| v as f32).collect();
    let gb = GpuVector::from_slice(&gpu, &b).unwrap();
    for &m in Method::ALL.iter().chain([&Method::Auto]) {
        let plan = gpu.prepare(&a, m).unwrap();
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut gx = GpuVector::filled(&gpu, a.nrows(), 0.0f32).unwrap();
            let opts = CgOptions {
                tol: 1e-4,
                ..Default::default()
            };
            let rep = cg(&plan, &gb, &mut gx, &opts).unwrap();
            assert!(rep.converged(), "{m}: {rep:?}");
            let bits: Vec<u32> = gx.read().unwrap().iter().map(|v| v.to_bits()).collect();
            runs.push((rep.iterations, bits));
        }
        assert_eq!(runs[0], runs[1], "{m}: two solves differ");
    }
}

#[test]
fn stops_are_typed_outcomes() {
    let gpu = match gpu() {
        Some(g) => g,
        None => return,
    };
    let a = laplacian(10).cast::<f32>();
    let n = a.nrows();
    let b: Vec<f32> = rhs(n).into_iter().map(|v| v as f32).collect();
    let gb = GpuVector::from_slice(&gpu, &b).unwrap();
    // Negative definite: -A.
    let neg = a
        .with_values(a.values().iter().map(|v| -v).collect())
        .unwrap();
    let plan = gpu.prepare(&neg, Method::CsrScalar).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let rep = cg(&plan, &gb, &mut gx, &CgOptions::default()).unwrap();
    assert_eq!(rep.stop, Stop::NotPositiveDefinite, "{rep:?}");
    assert!(gx.read().unwrap().iter().all(|v| v.is_finite()));
    // NaN in b.
    let plan = gpu.prepare(&a, Method::CsrScalar).unwrap();
    let mut nan_b = b.clone();
    nan_b[3] = f32::NAN;
    let gnan = GpuVector::from_slice(&gpu, &nan_b).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let rep = cg(&plan, &gnan, &mut gx, &CgOptions::default()).unwrap();
    assert_eq!(rep.stop, Stop::Breakdown, "{rep:?}");
    // The iteration limit, mid-submission.
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let opts = CgOptions {
        tol: 1e-7,
        max_iter: 5,
        check_every: 3,
        ..Default::default()
    };
    let rep = cg(&plan, &gb, &mut gx, &opts).unwrap();
    assert_eq!(
        (rep.stop, rep.iterations),
        (Stop::MaxIterations, 5),
        "{rep:?}"
    );
    // b = 0 from x = 0: done at the start.
    let zero = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let rep = cg(&plan, &zero, &mut gx, &CgOptions::default()).unwrap();
    assert_eq!((rep.stop, rep.iterations), (Stop::Converged, 0), "{rep:?}");
    assert!(gx.read().unwrap().iter().all(|&v| v == 0.0));
    // A start at the solution: done at once too.
    let exact = gpu.prepare(&a, Method::CsrScalar).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    cg(
        &exact,
        &gb,
        &mut gx,
        &CgOptions {
            tol: 1e-5,
            ..Default::default()
        },
    )
    .unwrap();
    let again = cg(
        &exact,
        &gb,
        &mut gx,
        &CgOptions {
            tol: 1e-3,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(again.iterations, 0, "{again:?}");
}

#[test]
fn bad_calls_are_typed_errors() {
    let gpu = match gpu() {
        Some(g) => g,
        None => return,
    };
    let a = laplacian(6).cast::<f32>();
    let n = a.nrows();
    let plan = gpu.prepare(&a, Method::CsrVector).unwrap();
    let gb = GpuVector::from_slice(&gpu, &vec![1.0f32; n]).unwrap();
    let short = GpuVector::filled(&gpu, n - 1, 0.0f32).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let e = cg(&plan, &short, &mut gx, &CgOptions::default());
    assert!(matches!(e, Err(Error::DimensionMismatch { .. })), "{e:?}");
    let mut same = GpuVector::<f32>::from_buffer(&gpu, gb.buffer().clone(), n).unwrap();
    let e = cg(&plan, &gb, &mut same, &CgOptions::default());
    assert!(e.is_err(), "{e:?}");
    let e = cg(
        &plan,
        &gb,
        &mut gx,
        &CgOptions {
            jacobi: Some(&short),
            ..Default::default()
        },
    );
    assert!(matches!(e, Err(Error::DimensionMismatch { .. })), "{e:?}");
    let e = cg(
        &plan,
        &gb,
        &mut gx,
        &CgOptions {
            check_every: 0,
            ..Default::default()
        },
    );
    assert!(matches!(e, Err(Error::InvalidParameter { .. })), "{e:?}");
    let rect = CsrMatrix::from_triplets(3, 4, vec![(0, 0, 1.0f32)]).unwrap();
    let rplan = gpu.prepare(&rect, Method::CsrScalar).unwrap();
    let b3 = GpuVector::from_slice(&gpu, &[1.0f32; 3]).unwrap();
    let mut x3 = GpuVector::filled(&gpu, 3, 0.0f32).unwrap();
    let e = cg(&rplan, &b3, &mut x3, &CgOptions::default());
    assert!(matches!(e, Err(Error::DimensionMismatch { .. })), "{e:?}");
    assert!(inverse_diagonal(&rect).is_err());
    let no_diag = CsrMatrix::from_triplets(2, 2, vec![(0, 1, 1.0f32), (1, 1, 2.0)]).unwrap();
    assert!(matches!(
        inverse_diagonal(&no_diag),
        Err(Error::InvalidParameter { .. })
    ));
    // The plan still solves.
    let rep = cg(&plan, &gb, &mut gx, &CgOptions::default()).unwrap();
    assert!(rep.converged());
}

/// A convection-diffusion operator on a k × k grid: the Laplacian plus an upwind convection
/// term, so the matrix is not symmetric.
fn convection(k: usize) -> CsrMatrix<f64> {
    let lap = laplacian(k);
    let mut t = Vec::new();
    for r in 0..lap.nrows() {
        let (cols, vals) = lap.row(r);
        for (&c, &v) in cols.iter().zip(vals) {
            let c = c as usize;
            let skew = if c + 1 == r {
                -0.8
            } else if c == r + 1 {
                0.3
            } else {
                0.0
            };
            t.push((r, c, v + skew));
        }
    }
    CsrMatrix::from_triplets(lap.nrows(), lap.ncols(), t).unwrap()
}

fn check_bicgstab<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<f64>, method: Method, label: &str) {
    let at = a.cast::<T>();
    let f32 = std::mem::size_of::<T>() == 4;
    let tol = if f32 { 1e-4 } else { 1e-10 };
    let b: Vec<T> = rhs(a.nrows()).into_iter().map(T::from_f64).collect();
    let plan = gpu.prepare(&at, method).unwrap();
    let gb = GpuVector::from_slice(gpu, &b).unwrap();
    let mut gx = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0)).unwrap();
    let opts = BicgstabOptions {
        tol,
        check_every: 5,
        ..Default::default()
    };
    let rep = bicgstab(&plan, &gb, &mut gx, &opts).unwrap();
    let zeros = vec![T::from_f64(0.0); a.nrows()];
    let cpu = reference::bicgstab(&at, &b, &zeros, tol, 10_000).unwrap();
    agrees_with_twin(&rep, &cpu, &gx, tol, label);
}

#[test]
fn bicgstab_agrees_with_the_cpu_step_for_step() {
    let a = convection(20);
    for (dev, gpu) in gpus() {
        check_bicgstab::<f32>(&gpu, &a, Method::CsrVector, &format!("f32 / {dev}"));
        check_bicgstab::<f32>(&gpu, &a, Method::Bccoo, &format!("f32 bccoo / {dev}"));
        if has_f64(&gpu) {
            check_bicgstab::<f64>(&gpu, &a, Method::Auto, &format!("f64 / {dev}"));
        }
    }
}

#[test]
fn bicgstab_stops_are_typed_outcomes() {
    let gpu = match gpu() {
        Some(g) => g,
        None => return,
    };
    let a = convection(8).cast::<f32>();
    let n = a.nrows();
    let plan = gpu.prepare(&a, Method::CsrScalar).unwrap();
    let b: Vec<f32> = rhs(n).into_iter().map(|v| v as f32).collect();
    // NaN in b.
    let mut nan_b = b.clone();
    nan_b[5] = f32::NAN;
    let gnan = GpuVector::from_slice(&gpu, &nan_b).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let rep = bicgstab(&plan, &gnan, &mut gx, &BicgstabOptions::default()).unwrap();
    assert_eq!(rep.stop, Stop::Breakdown, "{rep:?}");
    // The iteration limit; b = 0.
    let gb = GpuVector::from_slice(&gpu, &b).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let opts = BicgstabOptions {
        tol: 1e-7,
        max_iter: 3,
        check_every: 2,
    };
    let rep = bicgstab(&plan, &gb, &mut gx, &opts).unwrap();
    assert_eq!(
        (rep.stop, rep.iterations),
        (Stop::MaxIterations, 3),
        "{rep:?}"
    );
    let zero = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let rep = bicgstab(&plan, &zero, &mut gx, &BicgstabOptions::default()).unwrap();
    assert_eq!((rep.stop, rep.iterations), (Stop::Converged, 0), "{rep:?}");
    // A singular matrix with b outside its range: a typed stop, never a panic.
    let singular = CsrMatrix::from_triplets(n, n, vec![(0, 0, 1.0f32)]).unwrap();
    let splan = gpu.prepare(&singular, Method::CsrScalar).unwrap();
    let mut gx = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
    let rep = bicgstab(&splan, &gb, &mut gx, &BicgstabOptions::default()).unwrap();
    assert_ne!(rep.stop, Stop::Converged, "{rep:?}");
}

/// A directed graph of `n` nodes: irregular out-degrees, some dangling nodes, weights 1 or 2.
fn graph(n: usize) -> CsrMatrix<f64> {
    let mut t = Vec::new();
    for i in 0..n {
        if i % 9 == 4 {
            continue; // dangling
        }
        let links = 1 + (i * 7) % 6;
        for k in 0..links {
            let j = (i * 31 + k * 17 + 3) % n;
            t.push((i, j, 1.0 + ((i + k) % 2) as f64));
        }
    }
    CsrMatrix::from_triplets(n, n, t).unwrap()
}

fn check_pagerank<T: Scalar>(gpu: &Gpu, g: &CsrMatrix<f64>, method: Method, label: &str) {
    let gt = g.cast::<T>();
    let f32 = std::mem::size_of::<T>() == 4;
    let tol = if f32 { 1e-6 } else { 1e-12 };
    let plan = gpu
        .prepare_with(
            &gt,
            method,
            &wgspmv::PlanOptions {
                transposed: Some(Method::Auto),
                ..Default::default()
            },
        )
        .unwrap();
    // A personalization that favours the first nodes.
    let n = g.nrows();
    let raw: Vec<f64> = (0..n).map(|i| if i < 10 { 3.0 } else { 1.0 }).collect();
    let total: f64 = raw.iter().sum();
    let v: Vec<f64> = raw.iter().map(|x| x / total).collect();
    for personal in [false, true] {
        let gv = GpuVector::from_slice(gpu, &v.iter().map(|&x| T::from_f64(x)).collect::<Vec<_>>())
            .unwrap();
        let opts = PageRankOptions {
            tol,
            check_every: 6,
            personalization: personal.then_some(&gv),
            ..Default::default()
        };
        let (ranks, rep) = pagerank(&plan, &opts).unwrap();
        let cpu = reference::pagerank(&gt, 0.85, personal.then_some(&v[..]), tol, 1000).unwrap();
        let label = format!("{label}, personalized {personal}");
        assert_eq!(rep.stop, Stop::Converged, "{label}: {rep:?}");
        let (gi, ci) = (rep.iterations as i64, cpu.residuals.len() as i64 - 1);
        assert!((gi - ci).abs() <= 2, "{label}: {gi} iterations, CPU {ci}");
        for (i, (gr, cr)) in rep.residuals.iter().zip(&cpu.residuals).enumerate().skip(1) {
            if *cr < if f32 { 1e-4 } else { 1e-10 } {
                break;
            }
            assert!(
                (gr - cr).abs() <= 1e-3 * cr,
                "{label}: iteration {i}: {gr:e} vs {cr:e}"
            );
        }
        let r = ranks.read().unwrap();
        let err = r
            .iter()
            .zip(&cpu.x)
            .map(|(g, c)| (g.to_f64() - c).abs())
            .fold(0.0, f64::max);
        assert!(
            err <= if f32 { 1e-5 } else { 1e-11 },
            "{label}: ranks off by {err:e}"
        );
        assert!(
            rep.true_residual <= if f32 { 1e-4 } else { 1e-12 },
            "{label}: Σr − 1 = {:e}",
            rep.true_residual
        );
    }
}

#[test]
fn pagerank_agrees_with_the_cpu() {
    let g = graph(500);
    for (dev, gpu) in gpus() {
        check_pagerank::<f32>(&gpu, &g, Method::CsrScalar, &format!("f32 / {dev}"));
        if has_f64(&gpu) {
            check_pagerank::<f64>(&gpu, &g, Method::Auto, &format!("f64 / {dev}"));
        }
    }
}

#[test]
fn pagerank_needs_the_transpose_and_good_options() {
    let gpu = match gpu() {
        Some(g) => g,
        None => return,
    };
    let g = graph(50).cast::<f32>();
    let plain = gpu.prepare(&g, Method::CsrScalar).unwrap();
    let e = pagerank(&plain, &PageRankOptions::default());
    assert!(matches!(e, Err(Error::Unsupported { .. })), "{e:?}");
    let plan = gpu
        .prepare_with(
            &g,
            Method::CsrScalar,
            &wgspmv::PlanOptions {
                transposed: Some(Method::CsrScalar),
                ..Default::default()
            },
        )
        .unwrap();
    let e = pagerank(
        &plan,
        &PageRankOptions {
            damping: 1.5,
            ..Default::default()
        },
    );
    assert!(matches!(e, Err(Error::InvalidParameter { .. })), "{e:?}");
    let short = GpuVector::filled(&gpu, 10, 0.1f32).unwrap();
    let e = pagerank(
        &plan,
        &PageRankOptions {
            personalization: Some(&short),
            ..Default::default()
        },
    );
    assert!(matches!(e, Err(Error::DimensionMismatch { .. })), "{e:?}");
    // A graph with no links at all: every node dangling, the ranks stay v.
    let empty = CsrMatrix::<f32>::zeros(20, 20).unwrap();
    let eplan = gpu
        .prepare_with(
            &empty,
            Method::CsrScalar,
            &wgspmv::PlanOptions {
                transposed: Some(Method::Auto),
                ..Default::default()
            },
        )
        .unwrap();
    let (r, rep) = pagerank(&eplan, &PageRankOptions::default()).unwrap();
    assert!(rep.converged(), "{rep:?}");
    assert!(r.read().unwrap().iter().all(|&x| (x - 0.05).abs() < 1e-6));
    // The plan still ranks.
    let (_, rep) = pagerank(&plan, &PageRankOptions::default()).unwrap();
    assert!(rep.converged());
}

#[test]
fn vector_operations_exact_deterministic_and_chained_on_the_gpu() {
    use wgspmv::{Coefficient, Coefficients};
    for (dev, gpu) in gpus() {
        // Exact on small integers (every partial sum is an integer below 2^24).
        let n = 100_003;
        let a: Vec<f32> = (0..n).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        let b: Vec<f32> = (0..n).map(|i| ((i * 3) % 5) as f32 - 2.0).collect();
        let want: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (*x as f64) * (*y as f64))
            .sum();
        let (ga, gb) = (
            GpuVector::from_slice(&gpu, &a).unwrap(),
            GpuVector::from_slice(&gpu, &b).unwrap(),
        );
        assert_eq!(ga.dot(&gb).unwrap() as f64, want, "{dev}");
        // The same bits run to run on values that round.
        let r: Vec<f32> = wgspmv::testing::suite::random_vector(n, 4)
            .iter()
            .map(|&v| v as f32)
            .collect();
        let gr = GpuVector::from_slice(&gpu, &r).unwrap();
        let first = gr.dot(&ga).unwrap().to_bits();
        for _ in 0..3 {
            assert_eq!(gr.dot(&ga).unwrap().to_bits(), first, "{dev}");
        }
        // axpby with β = 0 ignores NaN in y; with β ≠ 0 it is exact on integers.
        let mut gy = GpuVector::filled(&gpu, n, f32::NAN).unwrap();
        gy.axpby(2.0, &ga, 0.0).unwrap();
        let y = gy.read().unwrap();
        assert!(y.iter().zip(&a).all(|(y, a)| *y == 2.0 * a), "{dev}");
        gy.axpby(-1.0, &gb, 3.0).unwrap();
        let y = gy.read().unwrap();
        assert!(
            y.iter()
                .zip(&a)
                .zip(&b)
                .all(|((y, a), b)| *y == 6.0 * a - b),
            "{dev}"
        );
        // A dot product written into α on the GPU, then read by an update: no read back.
        let coeffs = Coefficients::new(&gpu, 0.0f32, 1.0).unwrap();
        let small: Vec<f32> = (0..n).map(|i| if i < 3 { 1.0 } else { 0.0 }).collect();
        let gs = GpuVector::from_slice(&gpu, &small).unwrap();
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        gs.record_dot(&mut enc, &ga, &coeffs, Coefficient::Alpha)
            .unwrap();
        let mut gz = GpuVector::from_slice(&gpu, &b).unwrap();
        gz.record_axpby_with(&mut enc, &coeffs, &ga).unwrap();
        gpu.queue().submit([enc.finish()]);
        let alpha: f32 = a[..3].iter().sum();
        assert_eq!(coeffs.read().unwrap(), (alpha, 1.0), "{dev}");
        let z = gz.read().unwrap();
        assert!(
            z.iter()
                .zip(&a)
                .zip(&b)
                .all(|((z, a), b)| *z == alpha * a + b),
            "{dev}"
        );
        // Elementwise product and scaling, exact on integers; α·y from a GPU buffer.
        let mut gm = GpuVector::from_slice(&gpu, &a).unwrap();
        gm.mul(&gb).unwrap();
        gm.scale(-3.0).unwrap();
        let m = gm.read().unwrap();
        assert!(
            m.iter()
                .zip(&a)
                .zip(&b)
                .all(|((m, a), b)| *m == -3.0 * a * b),
            "{dev}"
        );
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        gm.record_scale_with(&mut enc, &coeffs).unwrap();
        gm.record_mul(&mut enc, &gs).unwrap();
        gpu.queue().submit([enc.finish()]);
        let m2 = gm.read().unwrap();
        assert!(
            m2.iter()
                .zip(&m)
                .zip(&small)
                .all(|((m2, m), s)| *m2 == alpha * m * s),
            "{dev}"
        );
        // Bad operands.
        let short = GpuVector::filled(&gpu, 5, 0.0f32).unwrap();
        assert!(matches!(
            ga.dot(&short),
            Err(Error::DimensionMismatch { .. })
        ));
        let mut same = GpuVector::<f32>::from_buffer(&gpu, ga.buffer().clone(), n).unwrap();
        assert!(same.axpby(1.0, &ga, 1.0).is_err());
        assert!(matches!(
            gm.mul(&short),
            Err(Error::DimensionMismatch { .. })
        ));
    }
}

/// Vector operations of one length share their working buffers on a device: dot products
/// recorded one after another into one encoder (α, then β), and threads each taking dot
/// products of their own vectors at once, all get their own exact sums.
#[test]
fn vector_operations_sharing_working_buffers_keep_their_own_results() {
    use wgspmv::{Coefficient, Coefficients};
    for (dev, gpu) in gpus() {
        let n = 30_011;
        let ints = |k: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * (2 * k + 3)) % 13) as f32 - 6.0)
                .collect()
        };
        let exact = |a: &[f32], b: &[f32]| -> f32 {
            a.iter()
                .zip(b)
                .map(|(x, y)| (*x as f64) * (*y as f64))
                .sum::<f64>() as f32
        };
        let (a, b, c) = (ints(0), ints(1), ints(2));
        let (ga, gb, gc) = (
            GpuVector::from_slice(&gpu, &a).unwrap(),
            GpuVector::from_slice(&gpu, &b).unwrap(),
            GpuVector::from_slice(&gpu, &c).unwrap(),
        );
        let coeffs = Coefficients::new(&gpu, f32::NAN, f32::NAN).unwrap();
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        ga.record_dot(&mut enc, &gb, &coeffs, Coefficient::Alpha)
            .unwrap();
        gb.record_dot(&mut enc, &gc, &coeffs, Coefficient::Beta)
            .unwrap();
        gpu.queue().submit([enc.finish()]);
        assert_eq!(
            coeffs.read().unwrap(),
            (exact(&a, &b), exact(&b, &c)),
            "{dev}"
        );
        let vectors: Vec<Vec<f32>> = (3..9).map(ints).collect();
        std::thread::scope(|s| {
            for (k, v) in vectors.iter().enumerate() {
                let (gpu, a, ga) = (&gpu, &a, &ga);
                s.spawn(move || {
                    let gv = GpuVector::from_slice(gpu, v).unwrap();
                    let want = exact(v, a);
                    for round in 0..20 {
                        assert_eq!(
                            gv.dot(ga).unwrap(),
                            want,
                            "{dev}: thread {k}, round {round}"
                        );
                    }
                });
            }
        });
    }
}
