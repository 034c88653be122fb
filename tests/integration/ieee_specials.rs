//! NaN and ±Inf, in `x` and in `A`: SpMV multiplies stored entries only, so a special in `x[j]`
//! reaches exactly the rows with a stored entry in column `j` (a stored zero included: 0·Inf is
//! NaN), and padding of any kind (zero blocks, fill inside blocks, padded strips, quads, staging)
//! contributes nothing. Every method is compared with the CPU's IEEE result: NaN exactly where it
//! has NaN, ±Inf exactly where it has them, finite rows within the usual bound.

use crate::common;
use common::*;
use wgspmv::{
    reference, testing::SuiteClass, CsrMatrix, Gpu, GpuVector, Method, PlanOptions, Scalar,
};

/// `a` with its values replaced by `f(entry index, row, column, value)`.
fn map_values(a: &CsrMatrix<f64>, f: impl Fn(usize, usize, u32, f64) -> f64) -> CsrMatrix<f64> {
    let mut vals = Vec::with_capacity(a.nnz());
    for r in 0..a.nrows() {
        let (cols, v) = a.row(r);
        for (&c, &v) in cols.iter().zip(v) {
            vals.push(f(vals.len(), r, c, v));
        }
    }
    CsrMatrix::try_new(
        a.nrows(),
        a.ncols(),
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        vals,
    )
    .unwrap()
}

/// A random `x` with NaN, +Inf and -Inf in three columns spread over the matrix.
fn special_x(ncols: usize) -> Vec<f64> {
    let mut x = wgspmv::testing::suite::random_vector(ncols, 5);
    for (k, v) in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
        .into_iter()
        .enumerate()
    {
        if ncols > k {
            x[(k * 7919 + ncols / 3 * k) % ncols] = v;
        }
    }
    x
}

/// Runs `y = A·x` and `y = α·A·x + β·y0` and compares both with the CPU (poisoned output first).
fn check_ieee<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    x: &[T],
    method: Method,
    opts: &PlanOptions,
    label: &str,
) {
    let plan = gpu
        .prepare_with(a, method, opts)
        .unwrap_or_else(|e| panic!("{label}: prepare failed: {e}"));
    let gx = GpuVector::from_slice(gpu, x).unwrap();
    let mut gy = GpuVector::filled(gpu, a.nrows(), T::NAN).unwrap();
    plan.run(&gx, &mut gy).unwrap();
    let y = gy.read().unwrap();
    let want = reference::spmv_par(a, x).unwrap();
    let c = reference::check(1.0, a, x, 0.0, None, &y, &want);
    assert!(
        c.ok,
        "{label} [{}]: y = A·x: special mismatch (row, got, want) {:?}, worst finite row {:?}",
        plan.details(),
        c.special_mismatch,
        c.worst_row
    );

    let y0: Vec<T> = wgspmv::testing::suite::random_vector(a.nrows(), 3)
        .into_iter()
        .map(T::from_f64)
        .collect();
    gy.write(&y0).unwrap();
    plan.run_axpby(T::from_f64(0.5), &gx, T::from_f64(-2.0), &mut gy)
        .unwrap();
    let y = gy.read().unwrap();
    let want = reference::spmv_axpby(0.5, a, x, -2.0, &y0).unwrap();
    let c = reference::check(0.5, a, x, -2.0, Some(&y0), &y, &want);
    assert!(
        c.ok,
        "{label} [{}]: y = αAx + βy: special mismatch {:?}, worst finite row {:?}",
        plan.details(),
        c.special_mismatch,
        c.worst_row
    );
}

fn every_method(a: &CsrMatrix<f64>, x: &[f64], label: &str) {
    for (dev, gpu) in gpus() {
        for &m in Method::ALL.iter().chain([&Method::Auto]) {
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            check_ieee(
                &gpu,
                &a.cast::<f32>(),
                &x32,
                m,
                &PlanOptions::default(),
                &format!("{label} / {m} / f32 / {dev}"),
            );
            if has_f64(&gpu) {
                check_ieee(
                    &gpu,
                    a,
                    x,
                    m,
                    &PlanOptions::default(),
                    &format!("{label} / {m} / f64 / {dev}"),
                );
            }
        }
    }
}

/// The three cases of one matrix: specials in `x`; specials in `A` (and stored zeros); stored
/// zeros in the columns where `x` holds specials.
fn three_cases(a: &CsrMatrix<f64>, label: &str) {
    let x = special_x(a.ncols());
    every_method(a, &x, &format!("{label}, specials in x"));
    let finite_x = wgspmv::testing::suite::random_vector(a.ncols(), 6);
    let specials_in_a = map_values(a, |i, _, _, v| match i % 97 {
        5 => f64::NAN,
        17 => f64::INFINITY,
        41 => f64::NEG_INFINITY,
        60 | 61 => 0.0,
        _ => v,
    });
    every_method(
        &specials_in_a,
        &finite_x,
        &format!("{label}, specials in A"),
    );
    let zeros_at_specials = map_values(a, |i, _, c, v| {
        if !x[c as usize].is_finite() || i % 13 == 0 {
            0.0
        } else {
            v
        }
    });
    every_method(
        &zeros_at_specials,
        &x,
        &format!("{label}, stored zeros where x is special"),
    );
}

#[test]
fn suite_classes() {
    for class in SuiteClass::ALL {
        three_cases(&class.generate(3_000, 2), class.name());
    }
}

#[test]
fn edge_matrices() {
    for (label, a) in edge_cases() {
        three_cases(&a, label);
    }
}

#[test]
fn a_long_row_and_dense_rows() {
    let dense = CsrMatrix::from_triplets(
        142,
        142,
        (0..142 * 142)
            .map(|k| (k / 142, k % 142, 1.0 + (k % 5) as f64))
            .collect(),
    )
    .unwrap();
    three_cases(&dense, "142x142 dense");
    three_cases(
        &rows_of_lengths(&[3, 0, 70_000, 1, 0, 0, 40, 2], 90_000),
        "a row of 70 000",
    );
}

/// The reproducers of the bug report, exactly.
#[test]
fn reported_cases() {
    let nan = f64::NAN;
    let diag = CsrMatrix::from_triplets(3, 3, vec![(0, 0, 1.0), (2, 2, 1.0)]).unwrap();
    every_method(&diag, &[nan, 1.0, 1.0], "diag(1, 0, 1) with x0 = NaN");
    every_method(
        &diag,
        &[f64::INFINITY, 1.0, 1.0],
        "diag(1, 0, 1) with x0 = Inf",
    );
    every_method(
        &CsrMatrix::zeros(1, 1).unwrap(),
        &[nan],
        "1x1 empty with x = NaN",
    );
    let ones = CsrMatrix::from_triplets(
        142,
        142,
        (0..142 * 142).map(|k| (k / 142, k % 142, 1.0)).collect(),
    )
    .unwrap();
    let mut x = vec![1.0; 142];
    x[0] = f64::INFINITY;
    every_method(&ones, &x, "142x142 ones with x0 = +Inf");
    let identity = CsrMatrix::from_triplets(4, 4, (0..4).map(|i| (i, i, 1.0)).collect()).unwrap();
    every_method(
        &identity,
        &[nan, 1.0, 1.0, 1.0],
        "4x4 identity with x0 = NaN",
    );
}

/// Zero fill inside every block size of bccoo and bccoo-plus, and each slice count.
#[test]
fn bccoo_block_fill_and_slices() {
    let cases = [
        (
            "4x4 identity",
            CsrMatrix::from_triplets(4, 4, (0..4).map(|i| (i, i, 1.0)).collect()).unwrap(),
        ),
        ("power law", SuiteClass::PowerLaw.generate(3_000, 4)),
        ("empty rows", SuiteClass::EmptyRows.generate(3_000, 4)),
    ];
    for (label, a) in cases {
        let x = special_x(a.ncols());
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        for (dev, gpu) in gpus() {
            for h in [1, 2, 3, 4] {
                for w in [1, 2, 4] {
                    for (m, slices) in [
                        (Method::Bccoo, 1),
                        (Method::BccooPlus, 2),
                        (Method::BccooPlus, 4),
                    ] {
                        let mut o = PlanOptions::default();
                        o.bccoo.block_height = Some(h);
                        o.bccoo.block_width = Some(w);
                        o.bccoo.slices = Some(slices);
                        check_ieee(
                            &gpu,
                            &a.cast::<f32>(),
                            &x32,
                            m,
                            &o,
                            &format!("{label} / {m} {h}x{w} {slices} slices / {dev}"),
                        );
                    }
                }
            }
        }
    }
}
