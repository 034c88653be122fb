//! One plan shared by several threads (`SpmvPlan` is `Send + Sync`): every product correct, and
//! the plan still usable afterwards and after an error.

use crate::common;
use common::*;
use wgspmv::{reference, testing::SuiteClass, Error, GpuVector, Method, PlanOptions};

#[test]
fn threads_share_one_plan_of_every_method() {
    let a = SuiteClass::EmptyRows.generate(40_000, 7).cast::<f32>();
    for (dev, gpu) in gpus() {
        for &m in Method::ALL.iter().chain([&Method::Auto]) {
            let plan = gpu.prepare(&a, m).unwrap();
            let label = format!("{m} / {dev} [{}]", plan.details());
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    let (plan, gpu, a, label) = (&plan, &gpu, &a, &label);
                    s.spawn(move || {
                        for run in 0..5u64 {
                            let x: Vec<f32> =
                                wgspmv::testing::suite::random_vector(a.ncols(), 100 * t + run)
                                    .into_iter()
                                    .map(|v| v as f32)
                                    .collect();
                            let gx = GpuVector::from_slice(gpu, &x).unwrap();
                            let mut gy = GpuVector::filled(gpu, a.nrows(), f32::NAN).unwrap();
                            plan.run(&gx, &mut gy)
                                .unwrap_or_else(|e| panic!("{label}: thread {t} run {run}: {e}"));
                            let y = gy.read().unwrap();
                            let want = reference::spmv_par(a, &x).unwrap();
                            let c = reference::check(1.0, a, &x, 0.0, None, &y, &want);
                            assert!(c.ok, "{label}: thread {t} run {run} wrong: {c:?}");
                        }
                    });
                }
            });
            // Usable after a caller's mistake, and after the threads.
            let short = GpuVector::from_slice(&gpu, &[1.0f32]).unwrap();
            let mut gy = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
            assert!(matches!(
                plan.run(&short, &mut gy),
                Err(Error::DimensionMismatch { .. })
            ));
            check_method(
                &gpu,
                &a,
                m,
                &PlanOptions::default(),
                &format!("{label} after threads"),
            );
        }
    }
}

/// The speculative plan finishing on the host, forced, where the adapter allows it.
#[test]
fn threads_share_a_host_finished_speculative_plan() {
    let a = SuiteClass::PowerLaw.generate(30_000, 8).cast::<f32>();
    for (dev, gpu) in gpus() {
        let mut opts = PlanOptions::default();
        opts.speculative.finish = wgspmv::methods::speculative::Finish::Host;
        let Ok(plan) = gpu.prepare_with(&a, Method::Speculative, &opts) else {
            continue;
        };
        assert!(plan.finishes_on_host());
        std::thread::scope(|s| {
            for t in 0..6u64 {
                let (plan, gpu, a) = (&plan, &gpu, &a);
                s.spawn(move || {
                    for run in 0..6u64 {
                        let x: Vec<f32> =
                            wgspmv::testing::suite::random_vector(a.ncols(), 7 * t + run)
                                .into_iter()
                                .map(|v| v as f32)
                                .collect();
                        let gx = GpuVector::from_slice(gpu, &x).unwrap();
                        let mut gy = GpuVector::filled(gpu, a.nrows(), f32::NAN).unwrap();
                        plan.run(&gx, &mut gy).unwrap();
                        let want = reference::spmv_par(a, &x).unwrap();
                        assert!(
                            reference::check(1.0, a, &x, 0.0, None, &gy.read().unwrap(), &want).ok,
                            "{dev}: thread {t} run {run}"
                        );
                    }
                });
            }
        });
    }
}

/// Threads opening, using and dropping `Gpu`s at once, as the tests of an app do: every open
/// succeeds and every product is right. wgpu-hal gives the GL adapters of every enumeration one
/// EGL context with a lock each, and dropping one made that context current while another thread
/// held it (a panic inside wgpu, `BadAccess`), so GL is enumerated once per process.
#[test]
fn threads_open_use_and_drop_gpus_at_once() {
    if gpu().is_none() {
        return;
    }
    let a = SuiteClass::PowerLaw.generate(3_000, 3).cast::<f32>();
    let x: Vec<f32> = (0..a.ncols()).map(|i| (i % 7) as f32).collect();
    let want = reference::spmv_par(&a, &x).unwrap();
    std::thread::scope(|s| {
        for t in 0..6 {
            let (a, x, want) = (&a, &x, &want);
            s.spawn(move || {
                for round in 0..4 {
                    let gpu = wgspmv::Gpu::new()
                        .unwrap_or_else(|e| panic!("thread {t} round {round}: {e}"));
                    let plan = gpu.prepare(a, Method::CsrVector).unwrap();
                    let gx = GpuVector::from_slice(&gpu, x).unwrap();
                    let mut gy = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
                    plan.run(&gx, &mut gy).unwrap();
                    let y = gy.read().unwrap();
                    let c = reference::check(1.0, a, x, 0.0, None, &y, want);
                    assert!(c.ok, "thread {t} round {round}: {c:?}");
                }
            });
        }
    });
}
