//! α and β that change between calls, on the host and in GPU buffers ([`Coefficients`]): every
//! method, both devices, exact integer products; a plan is never rebuilt for new coefficients.

use crate::common;
use common::*;
use wgspmv::methods::speculative::Finish;
use wgspmv::{wgpu, Coefficients, Error, GpuVector, Method, PlanOptions};

/// Pairs a solver might pass in turn (halves and small integers: exact in f32), with β = 0
/// (y not read), a repeat and a change of α alone.
const PAIRS: [(f32, f32); 7] = [
    (1.0, 0.0),
    (2.0, 0.0),
    (-3.0, 1.0),
    (0.5, -2.0),
    (0.5, -2.0),
    (4.0, -2.0),
    (0.0, 1.0),
];

/// Every method, and `speculative` finishing on the host and on the GPU.
fn plans_of(gpu: &wgspmv::Gpu, a: &wgspmv::CsrMatrix<f32>) -> Vec<(String, wgspmv::SpmvPlan<f32>)> {
    let mut plans = Vec::new();
    for &m in Method::ALL.iter().chain([&Method::Auto]) {
        plans.push((m.to_string(), gpu.prepare(a, m).unwrap()));
    }
    for finish in [Finish::Host, Finish::Gpu] {
        let mut o = PlanOptions::default();
        o.speculative.finish = finish;
        let plan = gpu.prepare_with(a, Method::Speculative, &o).unwrap();
        plans.push((format!("speculative finished {finish:?}"), plan));
    }
    plans
}

#[test]
fn host_coefficients_change_every_call() {
    let a = integer_matrix(900, 1_300, 11);
    let x = integer_vector(a.ncols(), 3);
    let y0 = integer_vector(a.nrows(), 5);
    for (dev, gpu) in gpus() {
        let gx = GpuVector::from_slice(&gpu, &x).unwrap();
        let mut gy = GpuVector::from_slice(&gpu, &y0).unwrap();
        for (label, plan) in plans_of(&gpu, &a) {
            for (round, &(alpha, beta)) in PAIRS.iter().enumerate() {
                let want = exact(&a, &x, alpha as f64, beta as f64, &y0);
                let label = format!("{label} / {dev}: α={alpha} β={beta}");
                // run, submit and record in turn; y starts from y0 each time (NaN where β = 0).
                let start = if beta == 0.0 {
                    vec![f32::NAN; y0.len()]
                } else {
                    y0.clone()
                };
                gy.write(&start).unwrap();
                match round % 3 {
                    0 => plan.run_axpby(alpha, &gx, beta, &mut gy).unwrap(),
                    1 => {
                        plan.submit_axpby(alpha, &gx, beta, &mut gy).unwrap();
                    }
                    _ => {
                        let mut enc = gpu.device().create_command_encoder(&Default::default());
                        plan.record_axpby(&mut enc, alpha, &gx, beta, &mut gy)
                            .unwrap();
                        gpu.queue().submit([enc.finish()]);
                    }
                }
                assert_eq!(gy.read().unwrap(), want, "{label}");
            }
        }
    }
}

#[test]
fn gpu_coefficients_are_read_when_the_product_runs() {
    let a = integer_matrix(700, 600, 4);
    let x = integer_vector(a.ncols(), 8);
    let y0 = integer_vector(a.nrows(), 2);
    for (dev, gpu) in gpus() {
        let gx = GpuVector::from_slice(&gpu, &x).unwrap();
        let mut gy = GpuVector::from_slice(&gpu, &y0).unwrap();
        let mut gz = GpuVector::from_slice(&gpu, &y0).unwrap();
        let coeffs = Coefficients::new(&gpu, 1.0f32, 0.0).unwrap();
        let other = Coefficients::new(&gpu, -1.0f32, 2.0).unwrap();
        for (label, plan) in plans_of(&gpu, &a) {
            let label = format!("{label} / {dev}");
            // Set from the host between calls: run_with and submit_with.
            for &(alpha, beta) in &PAIRS {
                coeffs.set(alpha, beta).unwrap();
                assert_eq!(coeffs.read().unwrap(), (alpha, beta));
                let start = if beta == 0.0 {
                    vec![f32::NAN; y0.len()]
                } else {
                    y0.clone()
                };
                gy.write(&start).unwrap();
                plan.run_with(&coeffs, &gx, &mut gy).unwrap();
                let want = exact(&a, &x, alpha as f64, beta as f64, &y0);
                assert_eq!(
                    gy.read().unwrap(),
                    want,
                    "{label}: run_with α={alpha} β={beta}"
                );
                gy.write(&start).unwrap();
                plan.submit_with(&coeffs, &gx, &mut gy).unwrap();
                assert_eq!(
                    gy.read().unwrap(),
                    want,
                    "{label}: submit_with α={alpha} β={beta}"
                );
            }
            // Written on the GPU in the caller's encoder before the products that read them
            // (as a solver's kernels would), two sets of coefficients in one encoder.
            gy.write(&y0).unwrap();
            gz.write(&y0).unwrap();
            let computed = GpuVector::from_slice(&gpu, &[3.0f32, -1.0]).unwrap();
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(computed.buffer(), 0, coeffs.buffer(), 0, 8);
            plan.record_with(&mut enc, &coeffs, &gx, &mut gy).unwrap();
            plan.record_with(&mut enc, &other, &gx, &mut gz).unwrap();
            gpu.queue().submit([enc.finish()]);
            assert_eq!(
                gy.read().unwrap(),
                exact(&a, &x, 3.0, -1.0, &y0),
                "{label}: GPU-written"
            );
            assert_eq!(
                gz.read().unwrap(),
                exact(&a, &x, -1.0, 2.0, &y0),
                "{label}: second set"
            );
            // Host values after GPU ones, and the other way round, on the same plan.
            gy.write(&y0).unwrap();
            plan.run_axpby(2.0, &gx, 1.0, &mut gy).unwrap();
            assert_eq!(
                gy.read().unwrap(),
                exact(&a, &x, 2.0, 1.0, &y0),
                "{label}: host after"
            );
            // Both kinds in one encoder: a host pair (immediate data where the device has it)
            // between products that read a buffer.
            gy.write(&y0).unwrap();
            gz.write(&y0).unwrap();
            other.set(-1.0, 2.0).unwrap();
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            plan.record_with(&mut enc, &other, &gx, &mut gz).unwrap();
            plan.record_axpby(&mut enc, 3.0, &gx, -1.0, &mut gy)
                .unwrap();
            plan.record_with(&mut enc, &other, &gx, &mut gy).unwrap();
            gpu.queue().submit([enc.finish()]);
            let first = exact(&a, &x, 3.0, -1.0, &y0);
            assert_eq!(
                gy.read().unwrap(),
                exact(&a, &x, -1.0, 2.0, &first),
                "{label}: mixed in one encoder"
            );
            assert_eq!(
                gz.read().unwrap(),
                exact(&a, &x, -1.0, 2.0, &y0),
                "{label}: mixed in one encoder, second vector"
            );
        }
    }
}

/// Where the adapter has immediate data (lavapipe and NVIDIA through Vulkan), products take α
/// and β there, so the tests above run both forms: the default device's immediate data and the
/// portable device's bound buffer.
#[test]
fn coefficients_are_immediate_data_where_the_device_has_it() {
    let Some(gpu) = gpu() else { return };
    let info = gpu.info();
    if info.backend == wgpu::Backend::Vulkan {
        assert!(info.has_immediate_coeffs(), "{}", info.name);
    }
    if info.backend == wgpu::Backend::Gl {
        assert!(!info.has_immediate_coeffs(), "{}", info.name);
    }
    if let Some(portable) = gpu_without_subgroups() {
        assert!(!portable.info().has_immediate_coeffs());
    }
}

#[test]
fn coefficients_of_another_device_are_refused() {
    let (Some(here), Some(there)) = (gpu(), gpu_without_subgroups()) else {
        return;
    };
    let a = integer_matrix(50, 40, 1);
    let plan = here.prepare(&a, Method::CsrVector).unwrap();
    let x = GpuVector::from_slice(&here, &integer_vector(40, 1)).unwrap();
    let mut y = GpuVector::filled(&here, 50, 0.0f32).unwrap();
    let foreign = Coefficients::new(&there, 1.0f32, 0.0).unwrap();
    for r in [
        plan.run_with(&foreign, &x, &mut y),
        plan.submit_with(&foreign, &x, &mut y).map(drop),
        plan.record_with(
            &mut here.device().create_command_encoder(&Default::default()),
            &foreign,
            &x,
            &mut y,
        ),
    ] {
        assert!(
            matches!(
                r,
                Err(Error::WrongDevice {
                    what: "coefficients"
                })
            ),
            "{r:?}"
        );
    }
    plan.run(&x, &mut y).unwrap();
}
