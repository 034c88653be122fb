//! Every method against the f64 CPU reference: the synthetic suite, irregular edge cases,
//! chunking, 2-D dispatch, both lane paths, f32 and f64.

use crate::common;
use common::*;
use wgspmv::{testing::SuiteClass, CsrMatrix, Error, GpuVector, LanePolicy, Method, PlanOptions};

#[test]
fn adapter_describes_itself() {
    let Some(gpu) = gpu() else { return };
    let text = gpu.info().to_string();
    eprintln!("{text}");
    assert!(text.contains("adapter:") && text.contains("storage binding"));
}

#[test]
fn suite_classes_all_methods() {
    for class in SuiteClass::ALL {
        check_all_methods(&class.generate(20_000, 1), class.name());
    }
}

#[test]
fn edge_cases_all_methods() {
    for (label, a) in edge_cases() {
        check_all_methods(&a, label);
    }
}

/// Rows of every length from 0 to 600 side by side (short rows summed alone, longer ones by
/// teams, the longest by the long-row passes), in small integers so that every product is exact:
/// each row equals the CPU's, with no tolerance, in f32 and f64, for every method.
#[test]
fn rows_of_every_length_are_exact() {
    let lens: Vec<usize> = (0..=600).map(|i| (i * 37) % 601).collect();
    let ncols = 700;
    let mut t = Vec::new();
    for (r, &len) in lens.iter().enumerate() {
        for k in 0..len {
            let v = ((r * 5 + k * 3) % 9) as f64 - 4.0;
            t.push((r, (k * 7 + r * 3) % ncols, if v == 0.0 { 2.0 } else { v }));
        }
    }
    let a = CsrMatrix::from_triplets(lens.len(), ncols, t).unwrap();
    let x = integer_vector(ncols, 3);
    let want = exact(&a.cast::<f32>(), &x, 1.0, 0.0, &[]);
    for (dev, gpu) in gpus() {
        for &m in Method::ALL {
            let plan = gpu.prepare(&a.cast::<f32>(), m).unwrap();
            let gx = GpuVector::from_slice(&gpu, &x).unwrap();
            let mut gy = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
            plan.run(&gx, &mut gy).unwrap();
            assert_eq!(
                gy.read().unwrap(),
                want,
                "{m} f32 {dev} [{}]",
                plan.details()
            );
            if has_f64(&gpu) {
                let plan = gpu.prepare(&a, m).unwrap();
                let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                let gx = GpuVector::from_slice(&gpu, &x64).unwrap();
                let mut gy = GpuVector::filled(&gpu, a.nrows(), f64::NAN).unwrap();
                plan.run(&gx, &mut gy).unwrap();
                let want64: Vec<f64> = want.iter().map(|&v| v as f64).collect();
                assert_eq!(
                    gy.read().unwrap(),
                    want64,
                    "{m} f64 {dev} [{}]",
                    plan.details()
                );
            }
        }
    }
}

/// `csr-stream` stores a chunk of a tile's column-sorted entries as offsets from its first
/// column where they span less than 2^21 columns, else as plain columns: a matrix whose sorted
/// tiles hold both kinds (columns near 0 and near 4.5M), built on the host and on the GPU, f32
/// and f64, exact.
#[test]
fn csr_stream_packed_and_plain_chunks_are_exact() {
    let (nrows, ncols) = (2000, 4_600_000);
    let mut t = Vec::new();
    for r in 0..nrows {
        // 1 to 4 columns below 3000, then one above 4.5M.
        let near = (0..=r % 4).map(|k| (r * 13 + k * 1009) % 3000);
        for (k, c) in near.chain([4_500_000 + r * 7]).enumerate() {
            t.push((r, c, ((r + k) % 7) as f64 - 3.0));
        }
    }
    let a = CsrMatrix::from_triplets(nrows, ncols, t).unwrap();
    let x = integer_vector(ncols, 5);
    let want = exact(&a.cast::<f32>(), &x, 1.0, 0.0, &[]);
    for (dev, gpu) in gpus() {
        for build_on in [
            wgspmv::methods::BuildOn::Host,
            wgspmv::methods::BuildOn::Gpu,
        ] {
            let opts = PlanOptions {
                build_on,
                ..Default::default()
            };
            let plan = gpu
                .prepare_with(&a.cast::<f32>(), Method::CsrStream, &opts)
                .unwrap();
            let gx = GpuVector::from_slice(&gpu, &x).unwrap();
            let mut gy = GpuVector::filled(&gpu, nrows, f32::NAN).unwrap();
            plan.run(&gx, &mut gy).unwrap();
            assert_eq!(gy.read().unwrap(), want, "f32 {dev} {build_on:?}");
            if has_f64(&gpu) {
                let plan = gpu.prepare_with(&a, Method::CsrStream, &opts).unwrap();
                let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                let gx = GpuVector::from_slice(&gpu, &x64).unwrap();
                let mut gy = GpuVector::filled(&gpu, nrows, f64::NAN).unwrap();
                plan.run(&gx, &mut gy).unwrap();
                let want64: Vec<f64> = want.iter().map(|&v| v as f64).collect();
                assert_eq!(gy.read().unwrap(), want64, "f64 {dev} {build_on:?}");
            }
        }
    }
}

#[test]
fn workgroup_path_every_team_width_and_workgroup_size() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::PowerLaw.generate(8_000, 3).cast::<f32>();
    for &wg in wgspmv::internals::kernel::WORKGROUP_SIZES {
        if wg > gpu.info().limits.max_compute_invocations_per_workgroup {
            continue;
        }
        for &lanes in wgspmv::internals::kernel::LANE_WIDTHS
            .iter()
            .filter(|&&l| l <= wg)
        {
            let opts = PlanOptions {
                lanes: LanePolicy::Workgroup,
                workgroup_size: Some(wg),
                lanes_per_row: Some(lanes),
                ..Default::default()
            };
            check_method(
                &gpu,
                &a,
                Method::CsrVector,
                &opts,
                &format!("csr-vector wg {wg} lanes {lanes}"),
            );
        }
        let opts = PlanOptions {
            workgroup_size: Some(wg),
            ..Default::default()
        };
        check_method(
            &gpu,
            &a,
            Method::CsrScalar,
            &opts,
            &format!("csr-scalar wg {wg}"),
        );
    }
}

#[test]
fn subgroup_path_when_available() {
    let Some(gpu) = gpu() else { return };
    let opts = PlanOptions {
        lanes: LanePolicy::Subgroup,
        ..Default::default()
    };
    let a = SuiteClass::SingleDenseRow.generate(10_000, 5).cast::<f32>();
    if gpu.info().has(wgpu::Features::SUBGROUP) {
        check_method(&gpu, &a, Method::CsrVector, &opts, "forced subgroups");
    }
    let Some(nosg) = gpu_without_subgroups() else {
        return;
    };
    match nosg.prepare_with(&a, Method::CsrVector, &opts) {
        Err(Error::MissingFeature {
            feature: "SUBGROUP",
            ..
        }) => {}
        other => panic!(
            "forcing subgroups on a device without them must fail clearly, got {:?}",
            other.map(|p| p.details().to_owned())
        ),
    }
}

#[test]
fn row_chunks_when_arrays_exceed_the_binding_limit() {
    let a = SuiteClass::EmptyRows.generate(30_000, 9);
    for (dev, gpu) in gpus() {
        let opts = PlanOptions {
            max_chunk_bytes: Some(16 * 1024),
            ..Default::default()
        };
        for &m in Method::ALL {
            if matches!(m, Method::Suraa | Method::Bccoo | Method::BccooPlus) {
                // These do not split matrices (suraa reads rows through a permutation; bccoo's
                // value planes are one binding): a clear error.
                assert!(matches!(
                    gpu.prepare_with(&a.cast::<f32>(), m, &opts),
                    Err(Error::TooLargeForAdapter { .. })
                ));
                continue;
            }
            let plan = gpu.prepare_with(&a.cast::<f32>(), m, &opts).unwrap();
            assert!(
                plan.dispatches() > 5,
                "{m}: expected several chunks, got {}",
                plan.dispatches()
            );
            check_method(
                &gpu,
                &a.cast::<f32>(),
                m,
                &opts,
                &format!("{m} chunked / {dev}"),
            );
        }
    }
    // A row that alone exceeds the limit cannot be chunked: a clear error.
    let Some(gpu) = gpu() else { return };
    let long =
        CsrMatrix::<f32>::from_triplets(2, 10_000, (0..10_000).map(|c| (1, c, 1.0)).collect())
            .unwrap();
    let opts = PlanOptions {
        max_chunk_bytes: Some(1024),
        ..Default::default()
    };
    assert!(matches!(
        gpu.prepare_with(&long, Method::CsrScalar, &opts),
        Err(Error::TooLargeForAdapter { .. })
    ));
}

#[test]
fn two_dimensional_dispatch_beyond_65535_workgroups() {
    let Some(gpu) = gpu() else { return };
    // One row per workgroup: 70 000 rows need more workgroups than one dimension allows.
    let a = SuiteClass::ShortRows.generate(280_000, 2).cast::<f32>();
    assert!(a.nrows() as u32 > gpu.info().limits.max_compute_workgroups_per_dimension);
    let opts = PlanOptions {
        lanes: LanePolicy::Workgroup,
        workgroup_size: Some(64),
        lanes_per_row: Some(64),
        ..Default::default()
    };
    check_method(&gpu, &a, Method::CsrVector, &opts, "2-D dispatch");
}

#[test]
fn record_into_callers_encoder_and_read_async() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::Banded.generate(5_000, 4).cast::<f32>();
    let plan = gpu.prepare(&a, Method::CsrVector).unwrap();
    let x: Vec<f32> = wgspmv::testing::suite::random_vector(a.ncols(), 1)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let gx = GpuVector::from_slice(&gpu, &x).unwrap();
    let mut y1 = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
    let mut y2 = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
    // Two products in one encoder: y1 = A·x, then y2 = 2·A·x, one submission.
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    plan.record(&mut enc, &gx, &mut y1).unwrap();
    plan.record_axpby(&mut enc, 2.0, &gx, 0.0, &mut y2).unwrap();
    gpu.queue().submit([enc.finish()]);
    let r1 = pollster::block_on(y1.read_async()).unwrap();
    let r2 = y2.read().unwrap();
    let y_ref = wgspmv::reference::spmv_seq(&a, &x).unwrap();
    assert!(wgspmv::reference::check(1.0, &a, &x, 0.0, None, &r1, &y_ref).ok);
    let y_ref2: Vec<f64> = y_ref.iter().map(|v| 2.0 * v).collect();
    assert!(wgspmv::reference::check(2.0, &a, &x, 0.0, None, &r2, &y_ref2).ok);
}

/// Products recorded into the caller's compute pass, every method: the second reads what the
/// first wrote in the same pass (wgpu orders the dispatches), and a wrong length is a typed
/// error that leaves the pass usable.
#[test]
fn record_into_callers_pass() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::PowerLaw.generate(4_000, 6).cast::<f32>();
    assert_eq!(a.nrows(), a.ncols());
    let x: Vec<f32> = wgspmv::testing::suite::random_vector(a.ncols(), 3)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let gx = GpuVector::from_slice(&gpu, &x).unwrap();
    for &m in Method::ALL {
        let plan = gpu.prepare(&a, m).unwrap();
        let mut y1 = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
        let mut y2 = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
        let mut short = GpuVector::filled(&gpu, a.nrows() - 1, 0.0f32).unwrap();
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            plan.record_in_pass(&mut pass, &gx, &mut y1).unwrap();
            assert!(matches!(
                plan.record_in_pass(&mut pass, &gx, &mut short),
                Err(Error::DimensionMismatch { .. })
            ));
            plan.record_in_pass(&mut pass, &y1, &mut y2).unwrap();
        }
        gpu.queue().submit([enc.finish()]);
        let (r1, r2) = (y1.read().unwrap(), y2.read().unwrap());
        let want1 = wgspmv::reference::spmv_seq(&a, &x).unwrap();
        assert!(
            wgspmv::reference::check(1.0, &a, &x, 0.0, None, &r1, &want1).ok,
            "{m}: first"
        );
        let want2 = wgspmv::reference::spmv_seq(&a, &r1).unwrap();
        assert!(
            wgspmv::reference::check(1.0, &a, &r1, 0.0, None, &r2, &want2).ok,
            "{m}: second, from the first's output"
        );
    }
}

#[test]
fn shares_an_application_device() {
    let Some(gpu) = gpu() else { return };
    // The app owns device and queue; wgspmv wraps clones of them.
    let shared = wgspmv::Gpu::from_device(gpu.device().clone(), gpu.queue().clone());
    assert_eq!(shared.info().name, gpu.info().name);
    let a = SuiteClass::Tall.generate(4_000, 8).cast::<f32>();
    check_method(
        &shared,
        &a,
        Method::CsrScalar,
        &PlanOptions::default(),
        "shared device",
    );
}

#[test]
fn vectors_wrap_application_buffers_and_copy_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::ShortRows.generate(3_000, 4).cast::<f32>();
    let x: Vec<f32> = wgspmv::testing::suite::random_vector(a.ncols(), 9)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    // The app's own buffers: x uploaded by the app, y for its next pass.
    let usage = wgspmv::wgpu::BufferUsages::STORAGE
        | wgspmv::wgpu::BufferUsages::COPY_SRC
        | wgspmv::wgpu::BufferUsages::COPY_DST;
    let make = |len: usize| {
        gpu.device().create_buffer(&wgspmv::wgpu::BufferDescriptor {
            label: Some("app buffer"),
            size: (len * 4).max(16) as u64,
            usage,
            mapped_at_creation: false,
        })
    };
    let xb = make(x.len());
    gpu.queue().write_buffer(&xb, 0, bytemuck::cast_slice(&x));
    let gx = GpuVector::<f32>::from_buffer(&gpu, xb, x.len()).unwrap();
    let mut gy = GpuVector::<f32>::from_buffer(&gpu, make(a.nrows()), a.nrows()).unwrap();
    gy.fill(f32::NAN).unwrap();
    let plan = gpu.prepare(&a, Method::CsrVector).unwrap();
    plan.run(&gx, &mut gy).unwrap();
    // Submitted without blocking; the host-finished speculative plan runs its all-GPU path.
    let spec = gpu.prepare(&a, Method::Speculative).unwrap();
    let mut gz = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
    spec.submit(&gx, &mut gz).unwrap();
    let z = gz.read().unwrap();
    let want = wgspmv::reference::spmv_par(&a, &x).unwrap();
    let check = wgspmv::reference::check(1.0, &a, &x, 0.0, None, &z, &want);
    assert!(check.ok, "submit: worst row {:?}", check.worst_row);
    let copy = gy.try_clone().unwrap();
    let want = wgspmv::reference::spmv_par(&a, &x).unwrap();
    let y = copy.read().unwrap();
    let check = wgspmv::reference::check(1.0, &a, &x, 0.0, None, &y, &want);
    assert!(check.ok, "worst row {:?}", check.worst_row);
    assert_eq!(y, gy.read().unwrap());
    // A buffer too small or without STORAGE is a typed error.
    assert!(matches!(
        GpuVector::<f32>::from_buffer(&gpu, make(4), 100),
        Err(Error::InvalidParameter { .. })
    ));
    let plain = gpu.device().create_buffer(&wgspmv::wgpu::BufferDescriptor {
        label: None,
        size: 64,
        usage: wgspmv::wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    assert!(matches!(
        GpuVector::<f32>::from_buffer(&gpu, plain, 4),
        Err(Error::InvalidParameter { .. })
    ));
}

#[test]
fn devices_with_default_limits_get_typed_errors_and_wanted_limits_fix_them() {
    let Some(gpu) = gpu() else { return };
    // Skipped where the adapter cannot be opened again (the default limits always can be).
    let Some(small) = common::reopened(&gpu, |_| wgspmv::wgpu::Limits::default()) else {
        return;
    };
    let open = |limits: wgspmv::wgpu::Limits| common::reopened(&gpu, |_| limits).unwrap();
    let a = SuiteClass::EmptyRows.generate(3_000, 2).cast::<f32>();
    // What most applications request: WebGPU's defaults (8 storage buffers per stage). Every
    // method's default kernels fit them.
    for &m in Method::ALL {
        check_method(
            &small,
            &a,
            m,
            &PlanOptions::default(),
            "WebGPU default limits",
        );
    }
    // Downlevel limits (4 storage buffers): a method runs correctly or is a typed error naming
    // the limit.
    let tiny = open(wgspmv::wgpu::Limits::downlevel_defaults());
    for &m in Method::ALL {
        match tiny.prepare(&a, m) {
            Ok(_) => check_method(&tiny, &a, m, &PlanOptions::default(), "downlevel limits"),
            Err(e @ Error::DeviceLimit { limit_name, .. }) => {
                eprintln!("{m}: {e}");
                assert_eq!(limit_name, "max_storage_buffers_per_shader_stage", "{m}")
            }
            Err(e) => panic!("{m} on a downlevel-limits device: {e}"),
        }
    }
    let wide = common::reopened(&gpu, wgspmv::Gpu::wanted_limits).unwrap();
    for &m in Method::ALL {
        check_method(&wide, &a, m, &PlanOptions::default(), "wanted limits");
    }
}

#[test]
fn bad_calls_are_errors() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::ShortRows.generate(1_000, 1).cast::<f32>();
    let plan = gpu.prepare(&a, Method::CsrScalar).unwrap();
    let x = GpuVector::filled(&gpu, a.ncols(), 1.0f32).unwrap();
    let short = GpuVector::filled(&gpu, a.ncols() - 1, 1.0f32).unwrap();
    let mut y = GpuVector::filled(&gpu, a.nrows(), 7.0f32).unwrap();
    let mut y_short = GpuVector::filled(&gpu, a.nrows() + 1, 7.0f32).unwrap();
    assert!(matches!(
        plan.run(&short, &mut y),
        Err(Error::DimensionMismatch { what: "x", .. })
    ));
    assert!(matches!(
        plan.run(&x, &mut y_short),
        Err(Error::DimensionMismatch { what: "y", .. })
    ));
    // Nothing the caller owns was touched by the refused calls.
    assert!(y.read().unwrap().iter().all(|&v| v == 7.0));

    if let Some(other) = gpu_without_subgroups() {
        let foreign = GpuVector::filled(&other, a.ncols(), 1.0f32).unwrap();
        assert!(matches!(
            plan.run(&foreign, &mut y),
            Err(Error::WrongDevice { what: "x" })
        ));
    }
    let bad_wg = PlanOptions {
        workgroup_size: Some(100),
        ..Default::default()
    };
    assert!(matches!(
        gpu.prepare_with(&a, Method::CsrScalar, &bad_wg),
        Err(Error::InvalidParameter {
            name: "workgroup_size",
            ..
        })
    ));
    let bad_lanes = PlanOptions {
        lanes: LanePolicy::Workgroup,
        lanes_per_row: Some(3),
        ..Default::default()
    };
    assert!(matches!(
        gpu.prepare_with(&a, Method::CsrVector, &bad_lanes),
        Err(Error::InvalidParameter {
            name: "lanes_per_row",
            ..
        })
    ));
    assert!(matches!(
        Method::from_name("nope"),
        Err(Error::UnknownName { .. })
    ));
}

#[test]
fn f64_refused_clearly_without_shader_f64() {
    let opts = wgspmv::GpuOptions {
        disabled_features: wgpu::Features::SHADER_F64,
        ..Default::default()
    };
    let Ok(gpu) = pollster::block_on(wgspmv::Gpu::with_options(opts)) else {
        return;
    };
    let a = SuiteClass::ShortRows.generate(500, 1);
    assert!(matches!(
        gpu.prepare(&a, Method::CsrScalar),
        Err(Error::MissingFeature {
            feature: "SHADER_F64",
            ..
        })
    ));
    assert!(matches!(
        GpuVector::from_slice(&gpu, &[1.0f64]),
        Err(Error::MissingFeature { .. })
    ));
}

#[test]
fn auto_resolves_to_a_concrete_method() {
    let Some(gpu) = gpu() else { return };
    // The plan runs the method the model chose (which one is the profile's business: the
    // choices per class are tested in auto.rs), and its products are right.
    for class in [SuiteClass::Dense, SuiteClass::Permutation] {
        let a = class.generate(10_000, 1).cast::<f32>();
        let opts = PlanOptions::default();
        let plan = gpu.prepare(&a, Method::Auto).unwrap();
        assert_ne!(plan.method(), Method::Auto);
        let chosen = wgspmv::select::choose(&gpu, &a, &opts).unwrap().method;
        assert_eq!(plan.method(), chosen, "{}", class.name());
        check_method(&gpu, &a, Method::Auto, &opts, "auto");
    }
}

#[test]
fn timing_and_copy_bandwidth_are_positive() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::Banded.generate(20_000, 1).cast::<f32>();
    let plan = gpu.prepare(&a, Method::CsrVector).unwrap();
    let x = GpuVector::filled(&gpu, a.ncols(), 1.0f32).unwrap();
    let mut y = GpuVector::filled(&gpu, a.nrows(), 0.0f32).unwrap();
    let t = plan.time(&x, &mut y, 3).unwrap();
    assert!(t.ms > 0.0 && t.ms.is_finite(), "{t:?}");
    let bw = gpu.copy_bandwidth(1 << 20, 3).unwrap();
    assert!(bw > 0.0 && bw.is_finite());
}

#[test]
fn unknown_adapter_name_is_a_clear_error() {
    if gpu().is_none() {
        return;
    }
    let opts = wgspmv::GpuOptions {
        adapter_name: Some("no-such-adapter-xyz".into()),
        ..Default::default()
    };
    match pollster::block_on(wgspmv::Gpu::with_options(opts)) {
        Err(e @ Error::NoAdapter { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("no-such-adapter-xyz") && msg.contains("lavapipe"),
                "{msg}"
            );
        }
        other => panic!("expected NoAdapter, got {other:?}"),
    }
}

#[test]
fn lost_device_is_an_error_not_a_panic() {
    if gpu().is_none() {
        return;
    }
    // A device of our own to destroy (the shared test device must live on).
    let gpu = pollster::block_on(wgspmv::Gpu::with_options(Default::default())).unwrap();
    let a = SuiteClass::ShortRows.generate(1_000, 1).cast::<f32>();
    let plan = gpu.prepare(&a, Method::CsrScalar).unwrap();
    let x = GpuVector::filled(&gpu, a.ncols(), 1.0f32).unwrap();
    let mut y = GpuVector::filled(&gpu, a.nrows(), 0.0f32).unwrap();
    gpu.device().destroy();
    let _ = gpu.device().poll(wgpu::PollType::Poll);
    assert!(matches!(
        plan.run(&x, &mut y),
        Err(Error::DeviceLost { .. })
    ));
    assert!(matches!(y.read(), Err(Error::DeviceLost { .. })));
    assert!(matches!(
        gpu.prepare(&a, Method::CsrVector),
        Err(Error::DeviceLost { .. })
    ));
}

/// The matrix's pattern with other values (seeded, none zero, some negative).
fn revalued(a: &CsrMatrix<f32>, seed: u32) -> CsrMatrix<f32> {
    let values: Vec<f32> = (0..a.nnz() as u32)
        .map(|i| {
            let h = (i ^ seed).wrapping_mul(0x9E37_79B9).rotate_left(13);
            (h % 2001) as f32 / 1000.0 - 1.0 + 1.0 / 4096.0
        })
        .collect();
    CsrMatrix::try_new(
        a.nrows(),
        a.ncols(),
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        values,
    )
    .unwrap()
}

/// `y = A·x` by `plan`, from an output poisoned with NaN.
fn product(gpu: &wgspmv::Gpu, plan: &wgspmv::SpmvPlan<f32>, x: &GpuVector<f32>) -> Vec<f32> {
    let mut y = GpuVector::filled(gpu, plan.nrows(), f32::NAN).unwrap();
    plan.run(x, &mut y).unwrap();
    y.read().unwrap()
}

#[test]
fn update_values_equals_a_fresh_plan_or_is_a_typed_refusal() {
    let Some(gpu) = gpu() else { return };
    // Empty rows; a dense row; a row long enough for the long-row pass.
    let matrices = [
        ("empty_rows", SuiteClass::EmptyRows.generate(4_000, 5)),
        (
            "single_dense_row",
            SuiteClass::SingleDenseRow.generate(4_000, 5),
        ),
        ("long row", rows_of_lengths(&[3, 20_000, 0, 5, 1], 30_000)),
    ];
    // Each also in row chunks of at most 8 KiB (several buffers, bound from offsets).
    let chunked = PlanOptions {
        max_chunk_bytes: Some(8192),
        ..Default::default()
    };
    // suraa's setup on the GPU too (its map back to CSR order is then read back).
    let suraa_on_gpu = PlanOptions {
        suraa: wgspmv::methods::suraa::SuraaOptions {
            setup: wgspmv::methods::suraa::SetupOn::Gpu,
            ..Default::default()
        },
        ..Default::default()
    };
    let cases = matrices.into_iter().flat_map(|(class, a)| {
        let opts = if class == "long row" {
            vec![PlanOptions::default(), suraa_on_gpu.clone()]
        } else {
            vec![PlanOptions::default(), chunked.clone()]
        };
        opts.into_iter().map(move |o| (class, a.clone(), o))
    });
    for (class, a, opts) in cases {
        let a = a.cast::<f32>();
        let b = revalued(&a, 77);
        let xs: Vec<f32> = (0..a.ncols()).map(|i| 1.0 + (i % 7) as f32 / 8.0).collect();
        let x = GpuVector::from_slice(&gpu, &xs).unwrap();
        for &m in Method::ALL {
            if opts.suraa.setup == wgspmv::methods::suraa::SetupOn::Gpu && m != Method::Suraa {
                continue;
            }
            let plan = match gpu.prepare_with(&a, m, &opts) {
                Ok(p) => p,
                // A method that does not split into chunks refuses the small chunk limit.
                Err(Error::TooLargeForAdapter { .. }) if opts.max_chunk_bytes.is_some() => continue,
                Err(e) => panic!("{m} on {class}: {e}"),
            };
            let before = product(&gpu, &plan, &x);
            // A wrong length is an error that leaves the plan as it was.
            assert!(matches!(
                plan.update_values(&b.values()[1..]),
                Err(Error::DimensionMismatch { .. })
            ));
            // Every method takes new values (bccoo's: no stored zeros before or after).
            plan.update_values(b.values())
                .unwrap_or_else(|e| panic!("{m} on {class}: {e}"));
            let fresh = gpu.prepare_with(&b, m, &opts).unwrap();
            let expected = product(&gpu, &fresh, &x);
            let got = product(&gpu, &plan, &x);
            let same =
                |p: &[f32], q: &[f32]| p.iter().zip(q).all(|(u, v)| u.to_bits() == v.to_bits());
            assert!(
                same(&got, &expected),
                "{m} on {class}: updated plan differs from a fresh one"
            );
            // Again from a buffer without STORAGE usage (gathered from a copy of it).
            let copy_only = {
                use wgpu::util::DeviceExt;
                gpu.device()
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("new values, copy only"),
                        contents: bytemuck::cast_slice(b.values()),
                        usage: wgpu::BufferUsages::COPY_SRC,
                    })
            };
            plan.update_values_from_buffer(&copy_only, 0).unwrap();
            assert!(
                same(&product(&gpu, &plan, &x), &expected),
                "{m} on {class}: from a buffer without STORAGE"
            );
            // And back from a GPU buffer (an application computing values on the GPU).
            let old = GpuVector::from_slice(&gpu, a.values()).unwrap();
            plan.update_values_from_buffer(old.buffer(), 0).unwrap();
            assert!(
                same(&product(&gpu, &plan, &x), &before),
                "{m} on {class}: from a GPU buffer"
            );
            // A buffer too short for the values at that offset is refused.
            assert!(matches!(
                plan.update_values_from_buffer(old.buffer(), 4),
                Err(Error::DimensionMismatch { .. })
            ));
        }
    }
}

/// `values` with the entries `zeros` set to `z` (±0).
fn with_zeros(a: &CsrMatrix<f32>, zeros: &[usize], z: f32) -> Vec<f32> {
    let mut v = a.values().to_vec();
    for &i in zeros {
        v[i] = z;
    }
    v
}

#[test]
fn bccoo_updates_take_any_pattern_of_zeros() {
    // The kernels skip +0 (their blocks' fill) and multiply a stored zero, kept as -0; so new
    // values may zero other entries or fill stored zeros, and NaN or Inf in x still reaches
    // exactly the rows the CPU reference says, through every update path.
    let Some(gpu) = gpu() else { return };
    let a = revalued(&SuiteClass::PowerLaw.generate(3_000, 9).cast::<f32>(), 5);
    // Stored zeros spread over the rows, one in the densest part.
    let zeros: Vec<usize> = (0..a.nnz()).step_by(97).collect();
    let a0 = a.with_values(with_zeros(&a, &zeros, 0.0)).unwrap();
    // x is NaN at one zero's column and +Inf at another's; both rows must come out NaN.
    let (nan_col, inf_col) = (
        a0.col_idx()[zeros[1]] as usize,
        a0.col_idx()[zeros[3]] as usize,
    );
    let xs: Vec<f32> = (0..a.ncols())
        .map(|i| match i {
            _ if i == nan_col => f32::NAN,
            _ if i == inf_col => f32::INFINITY,
            _ => 0.5 + (i % 5) as f32 / 4.0,
        })
        .collect();
    let x = GpuVector::from_slice(&gpu, &xs).unwrap();
    let same = |p: &[f32], q: &[f32]| p.iter().zip(q).all(|(u, v)| u.to_bits() == v.to_bits());
    let check = |m: Method, what: &str, values: &[f32], y: &[f32]| {
        let a = a0.with_values(values.to_vec()).unwrap();
        let y_ref = wgspmv::reference::spmv_par(&a, &xs).unwrap();
        let c = wgspmv::reference::check(1.0, &a, &xs, 0.0, None, y, &y_ref);
        assert!(
            c.ok,
            "{m}: {what}: row {:?}, {:?}",
            c.worst_row, c.special_mismatch
        );
    };
    // New values: the old zeros filled (one of them with the NaN column's), other entries
    // zeroed (+0 and -0, one at the Inf column's row), the rest changed.
    let b = revalued(&a, 31);
    let moved: Vec<usize> = zeros.iter().map(|&z| z + 1).collect();
    let mut new = with_zeros(&b, &moved, -0.0);
    new[moved[0]] = 0.0;
    let inf_entry = (0..a.nnz())
        .find(|&e| a0.col_idx()[e] as usize == inf_col && !zeros.contains(&e))
        .expect("another entry in the Inf column");
    new[inf_entry] = 0.0;
    for m in [Method::Bccoo, Method::BccooPlus] {
        let plan = gpu.prepare(&a0, m).unwrap();
        let before = product(&gpu, &plan, &x);
        check(m, "before the update", a0.values(), &before);
        let fresh = gpu
            .prepare(&a0.with_values(new.clone()).unwrap(), m)
            .unwrap();
        let expected = product(&gpu, &fresh, &x);
        check(m, "a fresh plan with the new zeros", &new, &expected);
        plan.update_values(&new).unwrap();
        assert!(
            same(&product(&gpu, &plan, &x), &expected),
            "{m}: host update"
        );
        // Back to the old values from a GPU buffer, then the new from one without STORAGE
        // usage, then recorded into the caller's encoder.
        let old = GpuVector::from_slice(&gpu, a0.values()).unwrap();
        plan.update_values_from_buffer(old.buffer(), 0).unwrap();
        assert!(
            same(&product(&gpu, &plan, &x), &before),
            "{m}: from a GPU buffer"
        );
        let copy_only = {
            use wgpu::util::DeviceExt;
            gpu.device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("new values, copy only"),
                    contents: bytemuck::cast_slice(&new),
                    usage: wgpu::BufferUsages::COPY_SRC,
                })
        };
        plan.update_values_from_buffer(&copy_only, 0).unwrap();
        assert!(
            same(&product(&gpu, &plan, &x), &expected),
            "{m}: from a copy"
        );
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        plan.record_update_values(&mut enc, old.buffer(), 0)
            .unwrap();
        gpu.queue().submit([enc.finish()]);
        assert!(
            same(&product(&gpu, &plan, &x), &before),
            "{m}: recorded into the caller's encoder"
        );
    }
}

/// Regression (GL): `cmrs-padded` built on the GPU dealt a strip's rows wrongly on llvmpipe
/// through GL (products wrong on 89 of 6000 rows of the banded class) while the host build was
/// right. Both builds against the f64 reference, f32.
#[test]
fn cmrs_padded_built_on_the_gpu_or_the_host_is_right() {
    let Some(gpu) = gpu() else { return };
    for class in [SuiteClass::Banded, SuiteClass::PowerLaw] {
        let a = class.generate(6_000, 3).cast::<f32>();
        for build_on in [
            wgspmv::methods::BuildOn::Gpu,
            wgspmv::methods::BuildOn::Host,
        ] {
            let opts = PlanOptions {
                build_on,
                ..Default::default()
            };
            check_method(
                &gpu,
                &a,
                Method::CmrsPadded,
                &opts,
                &format!("{} / cmrs-padded / {build_on:?}", class.name()),
            );
        }
    }
}
