//! `Y = α·A·X + β·Y` for dense X and Y of k columns (SpMM) on every method: the CSR kernel
//! that reads each entry once for all columns, one product per column elsewhere; both layouts,
//! k = 1, 3, 8, 64, exact integer products, IEEE specials in X, long rows, f64, bad operands.

use crate::common;
use common::*;
use wgspmv::methods::speculative::Finish;
use wgspmv::{CsrMatrix, Error, Gpu, GpuMatrix, GpuVector, Layout, Method, PlanOptions, SpmvPlan};

/// `rows × k` values in `layout` from column-major `cols[j][r]`.
fn laid_out(cols: &[Vec<f32>], layout: Layout) -> Vec<f32> {
    let (k, rows) = (cols.len(), cols.first().map_or(0, |c| c.len()));
    let mut out = vec![0.0; rows * k];
    for (j, c) in cols.iter().enumerate() {
        for (r, &v) in c.iter().enumerate() {
            let at = match layout {
                Layout::RowMajor => r * k + j,
                Layout::ColumnMajor => j * rows + r,
            };
            out[at] = v;
        }
    }
    out
}

/// Equal (±0 alike: an empty row's sum is +0 here and -0 in Rust's `Sum`), or both NaN.
fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

fn plans(gpu: &Gpu, a: &CsrMatrix<f32>) -> Vec<(String, SpmvPlan<f32>)> {
    let mut plans = Vec::new();
    for &m in Method::ALL.iter().chain([&Method::Auto]) {
        plans.push((m.to_string(), gpu.prepare(a, m).unwrap()));
    }
    let mut o = PlanOptions::default();
    o.speculative.finish = Finish::Host;
    plans.push((
        "speculative finished on the host".into(),
        gpu.prepare_with(a, Method::Speculative, &o).unwrap(),
    ));
    plans
}

/// Runs `Y = αAX + βY0` on `plan` with X of `k` columns and checks it against the f64 CPU
/// product of every column, in every pair of layouts, by `run` and by `record`.
fn check_spmm(gpu: &Gpu, plan: &SpmvPlan<f32>, a: &CsrMatrix<f32>, k: usize, label: &str) {
    let xs: Vec<Vec<f32>> = (0..k)
        .map(|j| integer_vector(a.ncols(), 7 + j as u64))
        .collect();
    let y0: Vec<Vec<f32>> = (0..k)
        .map(|j| integer_vector(a.nrows(), 3 + j as u64))
        .collect();
    let layouts = [
        (Layout::RowMajor, Layout::RowMajor),
        (Layout::ColumnMajor, Layout::ColumnMajor),
        (Layout::RowMajor, Layout::ColumnMajor),
    ];
    for (round, (lx, ly)) in layouts.into_iter().enumerate() {
        let (alpha, beta) = if round == 1 { (2.0, -1.0) } else { (1.0, 0.0) };
        let want: Vec<Vec<f32>> = (0..k)
            .map(|j| exact(a, &xs[j], alpha as f64, beta as f64, &y0[j]))
            .collect();
        let x = GpuMatrix::from_slice(gpu, a.ncols(), k, lx, &laid_out(&xs, lx)).unwrap();
        let start = if beta == 0.0 {
            vec![f32::NAN; a.nrows() * k]
        } else {
            laid_out(&y0, ly)
        };
        let mut y = GpuMatrix::from_slice(gpu, a.nrows(), k, ly, &start).unwrap();
        let label = format!("{label}: k={k} X {lx:?} Y {ly:?} α={alpha} β={beta}");
        if round == 2 {
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            plan.record_spmm_axpby(&mut enc, alpha, &x, beta, &mut y)
                .unwrap();
            gpu.queue().submit([enc.finish()]);
        } else {
            plan.run_spmm_axpby(alpha, &x, beta, &mut y).unwrap();
        }
        let got = y.read().unwrap();
        let w = laid_out(&want, ly);
        if !same(&got, &w) {
            let bad: Vec<_> = (0..got.len())
                .filter(|&i| !same(&got[i..i + 1], &w[i..i + 1]))
                .take(5)
                .map(|i| (i, got[i], w[i]))
                .collect();
            panic!("{label}: {bad:?}");
        }
    }
}

#[test]
fn every_method_many_vectors_both_layouts() {
    let a = integer_matrix(300, 420, 21);
    for (dev, gpu) in gpus() {
        for (name, plan) in plans(&gpu, &a) {
            let native = plan.has_spmm_kernel();
            let is_csr = matches!(plan.method(), Method::CsrScalar | Method::CsrVector);
            assert_eq!(native, is_csr, "{name}: SpMM kernel");
            for k in [1, 3, 8, 64] {
                check_spmm(&gpu, &plan, &a, k, &format!("{name} / {dev}"));
            }
        }
    }
}

#[test]
fn edge_matrices_and_long_rows() {
    // A row longer than one loop of the kernel, beside empty and short ones.
    let mut t = Vec::new();
    for c in 0..40_000usize {
        t.push((
            1,
            c % 50_000,
            ((c % 7) as f32) - 3.0 + if c % 7 == 3 { 1.0 } else { 0.0 },
        ));
    }
    t.push((3, 5, 2.0));
    let long = CsrMatrix::from_triplets(5, 50_000, t.clone()).unwrap();
    // Long rows of one piece and of more pieces than a workgroup's parts (34 pieces of 2048).
    for c in 0..600usize {
        t.push((0, (c * 13) % 50_000, ((c % 5) as f32) - 2.0));
    }
    for c in 0..70_000usize {
        t.push((4, (c * 7) % 50_000, ((c % 3) as f32) - 1.0));
    }
    let three_long = CsrMatrix::from_triplets(6, 50_000, t).unwrap();
    let empty_rows = CsrMatrix::<f32>::try_new(4, 6, vec![0; 5], vec![], vec![]).unwrap();
    let no_cols = CsrMatrix::<f32>::try_new(3, 0, vec![0; 4], vec![], vec![]).unwrap();
    for (dev, gpu) in gpus() {
        for (name, a) in [
            ("long row", &long),
            ("no entries", &empty_rows),
            ("no columns", &no_cols),
        ] {
            for m in [Method::CsrVector, Method::CsrScalar, Method::Bccoo] {
                let plan = gpu.prepare(a, m).unwrap();
                check_spmm(&gpu, &plan, a, 5, &format!("{name} / {m} / {dev}"));
            }
        }
        // Two blocks of 32 columns over the long rows' pieces.
        for m in [Method::CsrVector, Method::CsrScalar] {
            let plan = gpu.prepare(&three_long, m).unwrap();
            assert!(plan.has_spmm_kernel(), "{m}");
            for k in [3, 40] {
                check_spmm(
                    &gpu,
                    &plan,
                    &three_long,
                    k,
                    &format!("three long rows / {m} / {dev}"),
                );
            }
        }
    }
}

#[test]
fn ieee_specials_in_x_reach_the_rows_the_cpu_says() {
    let a = integer_matrix(200, 150, 9);
    let k = 4;
    let mut xs: Vec<Vec<f32>> = (0..k).map(|j| integer_vector(150, j as u64)).collect();
    xs[1][7] = f32::INFINITY;
    xs[2][11] = f32::NAN;
    xs[3][20] = f32::NEG_INFINITY;
    xs[3][21] = f32::INFINITY;
    let want: Vec<Vec<f32>> = xs.iter().map(|x| exact(&a, x, 1.0, 0.0, &[])).collect();
    for (dev, gpu) in gpus() {
        for (name, plan) in plans(&gpu, &a) {
            for layout in [Layout::RowMajor, Layout::ColumnMajor] {
                let x =
                    GpuMatrix::from_slice(&gpu, 150, k, layout, &laid_out(&xs, layout)).unwrap();
                let mut y = GpuMatrix::filled(&gpu, 200, k, layout, f32::NAN).unwrap();
                plan.run_spmm(&x, &mut y).unwrap();
                assert!(
                    same(&y.read().unwrap(), &laid_out(&want, layout)),
                    "{name} / {dev} / {layout:?}"
                );
            }
        }
    }
}

#[test]
fn f64_many_vectors() {
    let Some(gpu) = gpu() else { return };
    if !has_f64(&gpu) {
        return;
    }
    let a = integer_matrix(250, 260, 5).cast::<f64>();
    let k = 6;
    let xs: Vec<Vec<f64>> = (0..k)
        .map(|j| {
            integer_vector(260, j as u64)
                .into_iter()
                .map(f64::from)
                .collect()
        })
        .collect();
    for m in [Method::CsrVector, Method::Suraa] {
        let plan = gpu.prepare(&a, m).unwrap();
        let mut flat = vec![0.0; 260 * k];
        for (j, x) in xs.iter().enumerate() {
            flat[j * 260..(j + 1) * 260].copy_from_slice(x);
        }
        let x = GpuMatrix::from_slice(&gpu, 260, k, Layout::ColumnMajor, &flat).unwrap();
        let mut y = GpuMatrix::filled(&gpu, 250, k, Layout::ColumnMajor, f64::NAN).unwrap();
        plan.run_spmm(&x, &mut y).unwrap();
        let got = y.read().unwrap();
        for (j, x) in xs.iter().enumerate() {
            let want = wgspmv::reference::spmv_seq(&a, x).unwrap();
            assert_eq!(&got[j * 250..(j + 1) * 250], &want[..], "{m}: column {j}");
        }
    }
}

#[test]
fn bad_operands_are_typed_errors() {
    let Some(gpu) = gpu() else { return };
    let a = integer_matrix(40, 30, 2);
    for m in [Method::CsrVector, Method::Cmrs] {
        let plan = gpu.prepare(&a, m).unwrap();
        let x = GpuMatrix::filled(&gpu, 30, 3, Layout::RowMajor, 1.0f32).unwrap();
        let mut y = GpuMatrix::filled(&gpu, 40, 3, Layout::RowMajor, 0.0f32).unwrap();
        let mut short = GpuMatrix::filled(&gpu, 39, 3, Layout::RowMajor, 0.0f32).unwrap();
        let mut wide = GpuMatrix::filled(&gpu, 40, 4, Layout::RowMajor, 0.0f32).unwrap();
        let xt = GpuMatrix::filled(&gpu, 40, 3, Layout::RowMajor, 1.0f32).unwrap();
        let dims = |r: wgspmv::Result<()>| matches!(r, Err(Error::DimensionMismatch { .. }));
        assert!(dims(plan.run_spmm(&x, &mut short)), "{m}: rows of Y");
        assert!(dims(plan.run_spmm(&x, &mut wide)), "{m}: columns of Y");
        assert!(
            dims(plan.run_spmm(&xt, &mut y)),
            "{m}: rows of X (a transposed product's)"
        );
        // A vector's elements that are not rows × cols.
        let v = GpuVector::filled(&gpu, 89, 0.0f32).unwrap();
        assert!(matches!(
            GpuMatrix::from_vector(v, 30, 3, Layout::ColumnMajor),
            Err(Error::DimensionMismatch { .. })
        ));
        // One buffer as X and Y.
        let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 4 * 40 * 3,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let bx = GpuVector::<f32>::from_buffer(&gpu, buffer.clone(), 90).unwrap();
        let by = GpuVector::<f32>::from_buffer(&gpu, buffer, 120).unwrap();
        let bx = GpuMatrix::from_vector(bx, 30, 3, Layout::RowMajor).unwrap();
        let mut by = GpuMatrix::from_vector(by, 40, 3, Layout::RowMajor).unwrap();
        assert!(plan.run_spmm(&bx, &mut by).is_err(), "{m}: aliased");
        // Still usable.
        plan.run_spmm(&x, &mut y).unwrap();
        let want = exact(&a, &[1.0; 30], 1.0, 0.0, &[]);
        assert_eq!(
            y.read().unwrap(),
            laid_out(&[want.clone(), want.clone(), want], Layout::RowMajor)
        );
    }
    if let Some(there) = gpu_without_subgroups() {
        {
            let plan = gpu.prepare(&a, Method::CsrVector).unwrap();
            let x = GpuMatrix::filled(&there, 30, 2, Layout::RowMajor, 1.0f32).unwrap();
            let mut y = GpuMatrix::filled(&gpu, 40, 2, Layout::RowMajor, 0.0f32).unwrap();
            assert!(matches!(
                plan.run_spmm(&x, &mut y),
                Err(Error::WrongDevice { what: "X" })
            ));
        }
    }
}

/// Told that products take many vectors, `Auto` chooses a method with an SpMM kernel, on every
/// suite class (it would run one product per vector otherwise).
#[test]
fn auto_told_of_many_vectors_chooses_an_spmm_kernel() {
    let Some(gpu) = gpu() else { return };
    for class in wgspmv::testing::SuiteClass::ALL {
        let a = class.generate(3_000, 4).cast::<f32>();
        let opts = PlanOptions {
            spmm_columns: Some(8),
            ..Default::default()
        };
        let plan = gpu.prepare_with(&a, Method::Auto, &opts).unwrap();
        assert!(plan.has_spmm_kernel(), "{class:?}: {}", plan.method());
        let x: Vec<Vec<f32>> = (0..8).map(|j| vec![1.0 + j as f32; a.ncols()]).collect();
        let gx = GpuMatrix::from_slice(
            &gpu,
            a.ncols(),
            8,
            Layout::RowMajor,
            &laid_out(&x, Layout::RowMajor),
        )
        .unwrap();
        let mut gy = GpuMatrix::filled(&gpu, a.nrows(), 8, Layout::RowMajor, f32::NAN).unwrap();
        plan.run_spmm(&gx, &mut gy).unwrap();
        let got = gy.read().unwrap();
        for (j, xj) in x.iter().enumerate() {
            let want = wgspmv::reference::spmv_par(&a, xj).unwrap();
            let col: Vec<f32> = (0..a.nrows()).map(|r| got[r * 8 + j]).collect();
            let c = wgspmv::reference::check(1.0, &a, xj, 0.0, None, &col, &want);
            assert!(c.ok, "{class:?} column {j}: {c:?}");
        }
    }
}

/// SpMM after a value update reads the new values (kernel and by-column plans alike), and
/// several threads' SpMM on one plan, each with its own X and Y, are each right (the by-column
/// plans share their two vectors).
#[test]
fn after_value_updates_and_from_several_threads() {
    let a = integer_matrix(260, 300, 13);
    let doubled: Vec<f32> = a.values().iter().map(|v| 2.0 * v).collect();
    let b = CsrMatrix::try_new(
        a.nrows(),
        a.ncols(),
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        doubled.clone(),
    )
    .unwrap();
    for (dev, gpu) in gpus() {
        for m in [Method::CsrVector, Method::Bccoo, Method::Suraa] {
            let plan = gpu.prepare(&a, m).unwrap();
            plan.update_values(&doubled).unwrap();
            check_spmm(&gpu, &plan, &b, 5, &format!("{m} / {dev}: updated"));
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    let (plan, gpu, b) = (&plan, &gpu, &b);
                    s.spawn(move || {
                        for round in 0..3u64 {
                            let xs: Vec<Vec<f32>> = (0..3)
                                .map(|j| integer_vector(b.ncols(), 10 * t + round + j))
                                .collect();
                            let want: Vec<Vec<f32>> =
                                xs.iter().map(|x| exact(b, x, 1.0, 0.0, &[])).collect();
                            let layout = if t % 2 == 0 {
                                Layout::RowMajor
                            } else {
                                Layout::ColumnMajor
                            };
                            let x = GpuMatrix::from_slice(
                                gpu,
                                b.ncols(),
                                3,
                                layout,
                                &laid_out(&xs, layout),
                            )
                            .unwrap();
                            let mut y =
                                GpuMatrix::filled(gpu, b.nrows(), 3, layout, f32::NAN).unwrap();
                            plan.run_spmm(&x, &mut y).unwrap();
                            assert!(
                                same(&y.read().unwrap(), &laid_out(&want, layout)),
                                "{m} / {dev}: thread {t} round {round}"
                            );
                        }
                    });
                }
            });
        }
    }
}

/// A CSR plan split into row chunks has no SpMM kernel (its kernel reads one chunk's arrays):
/// it runs one product per column, and is right.
#[test]
fn row_chunks_run_one_product_per_column() {
    let a = integer_matrix(2_000, 900, 17);
    for (dev, gpu) in gpus() {
        for m in [Method::CsrScalar, Method::CsrVector] {
            let opts = PlanOptions {
                max_chunk_bytes: Some(4096),
                ..Default::default()
            };
            let plan = gpu.prepare_with(&a, m, &opts).unwrap();
            assert!(!plan.has_spmm_kernel(), "{m} / {dev}: {}", plan.details());
            check_spmm(&gpu, &plan, &a, 3, &format!("{m} / {dev}: row chunks"));
        }
    }
}
