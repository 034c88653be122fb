//! `y = α·Aᵀ·x + β·y` (`PlanOptions::transposed`) on every method: Aᵀ made on the GPU against
//! its host twin word for word, exact integer products for every main method and every method
//! of Aᵀ, α and β changed between calls, value updates that keep both in step, a CSR given on
//! the GPU, edge matrices with NaN and ±Inf in A and x, f64, and the errors.

use crate::common;
use common::*;
use wgspmv::reference;
use wgspmv::{CsrMatrix, Error, Gpu, GpuCsr, GpuVector, Method, PlanOptions, SpmvPlan};

fn transposed(method: Method) -> PlanOptions {
    PlanOptions {
        transposed: Some(method),
        ..Default::default()
    }
}

/// Equal (±0 alike), or both NaN.
fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

/// Checks `y = αAᵀx + βy0` on `plan` against the exact product of `at` (A's transpose), by
/// `run_transposed`, `run_transposed_axpby` (α and β changed every call) and
/// `record_transposed_axpby`, outputs poisoned first.
fn check_transposed(gpu: &Gpu, plan: &SpmvPlan<f32>, at: &CsrMatrix<f32>, label: &str) {
    let x = integer_vector(at.ncols(), 5);
    let y0 = integer_vector(at.nrows(), 9);
    let gx = GpuVector::from_slice(gpu, &x).unwrap();
    let mut gy = GpuVector::filled(gpu, at.nrows(), f32::NAN).unwrap();
    plan.run_transposed(&gx, &mut gy).unwrap();
    let want = exact(at, &x, 1.0, 0.0, &y0);
    assert!(same(&gy.read().unwrap(), &want), "{label}: Aᵀx");
    for (round, (alpha, beta)) in [(2.0, -1.0), (-3.0, 0.5), (1.0, 2.0)]
        .into_iter()
        .enumerate()
    {
        gy.write(&y0).unwrap();
        if round == 2 {
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            plan.record_transposed_axpby(&mut enc, alpha, &gx, beta, &mut gy)
                .unwrap();
            gpu.queue().submit([enc.finish()]);
        } else {
            plan.run_transposed_axpby(alpha, &gx, beta, &mut gy)
                .unwrap();
        }
        let want = exact(at, &x, alpha as f64, beta as f64, &y0);
        assert!(
            same(&gy.read().unwrap(), &want),
            "{label}: α={alpha} β={beta}"
        );
    }
}

#[test]
fn gpu_transpose_matches_its_host_twin_word_for_word() {
    let mut cases: Vec<(String, CsrMatrix<f32>)> = vec![
        ("integer 300x420".into(), integer_matrix(300, 420, 3)),
        (
            "integer 2000x70 (long columns)".into(),
            integer_matrix(2000, 70, 4),
        ),
        (
            "integer 40x70000 (three digits)".into(),
            integer_matrix(40, 70_000, 5),
        ),
    ];
    for (name, a) in edge_cases() {
        if a.nnz() > 0 {
            cases.push((name.into(), a.cast()));
        }
    }
    for (dev, gpu) in gpus() {
        for (name, a) in &cases {
            let (host, host_sources) = a.transpose_with_sources().unwrap();
            let (t, sources) = wgspmv::testing::transpose_on_gpu(&gpu, a).unwrap();
            let label = format!("{name} / {dev}");
            assert_eq!(t.shape(), host.shape(), "{label}");
            assert_eq!(t.row_ptr(), host.row_ptr(), "{label}: row pointers");
            assert_eq!(t.col_idx(), host.col_idx(), "{label}: columns");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(t.values()), bits(host.values()), "{label}: values");
            assert_eq!(sources, host_sources, "{label}: sources");
            // The twin is the transpose.
            let back = host.transpose().unwrap();
            assert_eq!(back.row_ptr(), a.row_ptr(), "{label}: (Aᵀ)ᵀ");
            assert_eq!(back.col_idx(), a.col_idx(), "{label}: (Aᵀ)ᵀ");
        }
    }
}

#[test]
fn every_method_and_every_method_of_the_transpose() {
    let a = integer_matrix(300, 420, 21);
    let at = a.transpose().unwrap();
    for (dev, gpu) in gpus() {
        // Each main method, Aᵀ by Auto; then Aᵀ by each method.
        for &m in Method::ALL.iter().chain([&Method::Auto]) {
            let plan = gpu.prepare_with(&a, m, &transposed(Method::Auto)).unwrap();
            check_transposed(&gpu, &plan, &at, &format!("{m}, Aᵀ by auto / {dev}"));
            // The product with A is unchanged.
            check_method(
                &gpu,
                &a,
                m,
                &transposed(Method::Auto),
                &format!("{m} Ax / {dev}"),
            );
            let t = plan.report().transposed.as_ref().expect("a report of Aᵀ");
            assert!(t.setup_ms > 0.0 && plan.report().setup_ms >= t.setup_ms);
        }
        for &m in Method::ALL {
            let plan = gpu
                .prepare_with(&a, Method::CsrVector, &transposed(m))
                .unwrap();
            assert_eq!(plan.transposed().unwrap().method(), m, "{dev}");
            check_transposed(&gpu, &plan, &at, &format!("csr-vector, Aᵀ by {m} / {dev}"));
        }
    }
}

#[test]
fn built_on_the_host_or_the_gpu_alike() {
    let a = integer_matrix(500, 300, 8);
    let at = a.transpose().unwrap();
    for (dev, gpu) in gpus() {
        for build_on in [wgspmv::BuildOn::Host, wgspmv::BuildOn::Gpu] {
            let opts = PlanOptions {
                build_on,
                ..transposed(Method::CsrScalar)
            };
            let plan = gpu.prepare_with(&a, Method::Cmrs, &opts).unwrap();
            check_transposed(&gpu, &plan, &at, &format!("{build_on:?} / {dev}"));
        }
    }
}

#[test]
fn value_updates_keep_both_in_step() {
    let a = integer_matrix(257, 199, 13);
    for (dev, gpu) in gpus() {
        for &m in Method::ALL.iter().chain([&Method::Auto]) {
            let plan = gpu.prepare_with(&a, m, &transposed(Method::Auto)).unwrap();
            let label = format!("{m} / {dev}");
            // From the host.
            let v1: Vec<f32> = (0..a.nnz()).map(|i| (i % 7) as f32 - 3.0).collect();
            plan.update_values(&v1).unwrap();
            let a1 = a.with_values(v1.clone()).unwrap();
            check_transposed(
                &gpu,
                &plan,
                &a1.transpose().unwrap(),
                &format!("{label}, host update"),
            );
            // From a GPU buffer, at an offset.
            let v2: Vec<f32> = (0..a.nnz()).map(|i| (i % 5) as f32 - 1.0).collect();
            let mut padded = vec![9.0f32; 4];
            padded.extend(&v2);
            let buf = wgpu::util::DeviceExt::create_buffer_init(
                gpu.device(),
                &wgpu::util::BufferInitDescriptor {
                    label: None,
                    contents: bytemuck::cast_slice(&padded),
                    usage: wgpu::BufferUsages::COPY_SRC,
                },
            );
            plan.update_values_from_buffer(&buf, 16).unwrap();
            let a2 = a.with_values(v2.clone()).unwrap();
            check_transposed(
                &gpu,
                &plan,
                &a2.transpose().unwrap(),
                &format!("{label}, buffer update"),
            );
            let x = integer_vector(a.ncols(), 2);
            let gx = GpuVector::from_slice(&gpu, &x).unwrap();
            let mut gy = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
            plan.run(&gx, &mut gy).unwrap();
            let want = exact(&a2, &x, 1.0, 0.0, &vec![0.0; a.nrows()]);
            assert!(
                same(&gy.read().unwrap(), &want),
                "{label}: Ax after updates"
            );
            // The plan of Aᵀ takes no update of its own.
            let e = plan.transposed().unwrap().update_values(&v2);
            assert!(
                matches!(e, Err(Error::Unsupported { .. })),
                "{label}: {e:?}"
            );
        }
    }
}

#[test]
fn from_a_csr_on_the_gpu() {
    use wgpu::util::DeviceExt;
    let a = integer_matrix(333, 222, 17);
    let at = a.transpose().unwrap();
    for (dev, gpu) in gpus() {
        let buffer = |data: &[u8]| {
            gpu.device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: None,
                    contents: data,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                })
        };
        let (rp, ci, vs) = (
            buffer(bytemuck::cast_slice(a.row_ptr())),
            buffer(bytemuck::cast_slice(a.col_idx())),
            buffer(bytemuck::cast_slice(a.values())),
        );
        let g = GpuCsr {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            row_ptr: &rp,
            col_idx: &ci,
            values: &vs,
        };
        for &m in Method::ALL.iter().chain([&Method::Auto]) {
            let plan = gpu
                .prepare_gpu_csr::<f32>(&g, m, &transposed(Method::Auto))
                .unwrap();
            check_transposed(&gpu, &plan, &at, &format!("{m} from GPU buffers / {dev}"));
        }
    }
}

/// NaN and ±Inf in A and x reach exactly the entries of y the CPU says, f32 and f64.
fn check_specials<T: wgspmv::Scalar>(gpu: &Gpu, a: &CsrMatrix<T>, label: &str) {
    let at = a.transpose().unwrap();
    let mut x: Vec<T> = wgspmv::testing::suite::random_vector(a.nrows(), 3)
        .into_iter()
        .map(T::from_f64)
        .collect();
    if x.len() > 2 {
        x[1] = T::NAN;
        let last = x.len() - 1;
        x[last] = T::from_f64(f64::INFINITY);
    }
    let plan = gpu
        .prepare_with(a, Method::Auto, &transposed(Method::Auto))
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let gx = GpuVector::from_slice(gpu, &x).unwrap();
    let mut gy = GpuVector::filled(gpu, a.ncols(), T::NAN).unwrap();
    plan.run_transposed(&gx, &mut gy).unwrap();
    let y = gy.read().unwrap();
    let want = reference::spmv_par(&at, &x).unwrap();
    let c = reference::check(1.0, &at, &x, 0.0, None, &y, &want);
    assert!(
        c.ok,
        "{label}: worst row {:?}, rel_err {:e}",
        c.worst_row, c.rel_err
    );
}

#[test]
fn edge_matrices_with_specials_f32_and_f64() {
    for (dev, gpu) in gpus() {
        for (name, a) in edge_cases() {
            let mut a = a;
            if a.nnz() > 2 {
                let mut v = a.values().to_vec();
                v[0] = f64::NEG_INFINITY;
                v[a.nnz() / 2] = f64::NAN;
                a = a.with_values(v).unwrap();
            }
            check_specials(&gpu, &a.cast::<f32>(), &format!("{name} f32 / {dev}"));
            if has_f64(&gpu) {
                check_specials(&gpu, &a, &format!("{name} f64 / {dev}"));
            }
        }
    }
}

#[test]
fn suite_classes() {
    let gpu = match gpu() {
        Some(g) => g,
        None => return,
    };
    for class in wgspmv::testing::SuiteClass::ALL {
        let a = class.generate(20_000, 7);
        let label = class.name().to_string();
        check_specials(&gpu, &a.cast::<f32>(), &format!("{label} f32"));
        if has_f64(&gpu) {
            check_specials(&gpu, &a, &format!("{label} f64"));
        }
    }
}

#[test]
fn bad_calls_are_typed_errors() {
    let a = integer_matrix(30, 20, 1);
    let gpu = match gpu() {
        Some(g) => g,
        None => return,
    };
    let x = GpuVector::from_slice(&gpu, &integer_vector(30, 1)).unwrap();
    let mut y = GpuVector::filled(&gpu, 20, 0.0f32).unwrap();
    // No transposed products unless asked for.
    let plain = gpu.prepare(&a, Method::CsrVector).unwrap();
    let e = plain.run_transposed(&x, &mut y);
    assert!(matches!(e, Err(Error::Unsupported { .. })), "{e:?}");
    let plan = gpu
        .prepare_with(&a, Method::Bccoo, &transposed(Method::Auto))
        .unwrap();
    // Lengths of A's product, not Aᵀ's.
    let x_short = GpuVector::from_slice(&gpu, &integer_vector(20, 1)).unwrap();
    let mut y_long = GpuVector::filled(&gpu, 30, 0.0f32).unwrap();
    let e = plan.run_transposed(&x_short, &mut y);
    assert!(matches!(e, Err(Error::DimensionMismatch { .. })), "{e:?}");
    let e = plan.run_transposed(&x, &mut y_long);
    assert!(matches!(e, Err(Error::DimensionMismatch { .. })), "{e:?}");
    // Aliased input and output.
    let mut same_buf = GpuVector::<f32>::from_buffer(&gpu, x.buffer().clone(), 20).unwrap();
    let e = plan.run_transposed(&x, &mut same_buf);
    assert!(e.is_err(), "{e:?}");
    // A vector of another device.
    if let Some(other) = gpu_without_subgroups() {
        let x_other = GpuVector::from_slice(&other, &integer_vector(30, 1)).unwrap();
        let e = plan.run_transposed(&x_other, &mut y);
        assert!(matches!(e, Err(Error::WrongDevice { .. })), "{e:?}");
    }
    // The plan still works.
    plan.run_transposed(&x, &mut y).unwrap();
    let want = exact(
        &a.transpose().unwrap(),
        &integer_vector(30, 1),
        1.0,
        0.0,
        &[0.0; 20],
    );
    assert!(same(&y.read().unwrap(), &want));
}
