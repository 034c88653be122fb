//! What a caller brings and how it shares a plan: every way of running a plan from eight threads
//! at once, checked exactly; buffers without the usages an operation needs, of another device,
//! or passed as both input and output are typed errors, and the `Gpu` stays usable after each.

use crate::common;
use common::*;
use wgspmv::methods::speculative::Finish;
use wgspmv::wgpu::{self, BufferUsages as U};
use wgspmv::{CsrMatrix, Error, Gpu, GpuCsr, GpuVector, Method, PlanOptions, SpmvPlan};

/// One product in `mode`, from the thread's own `x` and `y`; returns what `y` should hold.
fn product(
    gpu: &Gpu,
    plan: &SpmvPlan<f32>,
    a: &CsrMatrix<f32>,
    mode: usize,
    x: &GpuVector<f32>,
    xs: &[f32],
    y: &mut GpuVector<f32>,
) -> wgspmv::Result<Vec<f32>> {
    let y0: Vec<f32> = (0..a.nrows()).map(|r| (r % 5) as f32 - 2.0).collect();
    let poison = vec![f32::NAN; a.nrows()];
    match mode {
        0 => {
            y.write(&poison)?;
            plan.run(x, y)?;
        }
        1 => {
            y.write(&y0)?;
            plan.run_axpby(2.0, x, -0.5, y)?;
            return Ok(exact(a, xs, 2.0, -0.5, &y0));
        }
        2 => {
            y.write(&poison)?;
            plan.submit(x, y)?;
        }
        3 => {
            y.write(&y0)?;
            // The caller's own calls on a device its threads share with wgspmv take the turn
            // (GL runs one thread at a time; elsewhere it holds nothing).
            let _turn = gpu.turn();
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            plan.record_axpby(&mut enc, -1.0, x, 3.0, y)?;
            gpu.queue().submit([enc.finish()]);
            return Ok(exact(a, xs, -1.0, 3.0, &y0));
        }
        4 => {
            y.write(&poison)?;
            plan.time(x, y, 2)?;
        }
        _ => {
            // The same values again: the update path runs beside the others' products, and
            // every product, before or after it, has one right answer.
            plan.update_values(a.values())?;
            y.write(&poison)?;
            plan.run(x, y)?;
        }
    }
    Ok(exact(a, xs, 1.0, 0.0, &y0))
}

/// Eight threads share one plan, each with its own `x` and `y`, 50 products each (20 without
/// subgroups, 12 on GL), rotating through `run`, `run_axpby`, `submit`, `record_axpby`, `time`
/// and `update_values` + `run`;
/// every product is checked exactly. (A speculative plan finishing on the host once let a
/// product submitted by one thread overwrite the scratch buffers another's host stage read.)
#[test]
fn eight_threads_share_a_plan_in_every_mode() {
    let a = integer_matrix(600, 1300, 5);
    let mut configs: Vec<(String, Method, PlanOptions)> = Method::ALL
        .iter()
        .chain([&Method::Auto])
        .map(|&m| (m.to_string(), m, PlanOptions::default()))
        .collect();
    for finish in [Finish::Host, Finish::Gpu] {
        let mut o = PlanOptions::default();
        o.speculative.finish = finish;
        configs.push((
            format!("speculative, finish {finish:?}"),
            Method::Speculative,
            o,
        ));
    }
    for (dev, gpu) in gpus() {
        // wgpu's GL backend (llvmpipe in CI) runs one thread at a time and has no subgroups to
        // turn off: fewer products, on one device.
        let gl = gpu.info().backend == wgpu::Backend::Gl;
        if gl && dev == PORTABLE {
            continue;
        }
        // 50 per thread on the default device; the workgroup-memory paths (`PORTABLE`)
        // share the same plan code and get 20, to keep CI short.
        let products = if gl {
            12
        } else if dev == PORTABLE {
            20
        } else {
            50
        };
        for (name, m, opts) in &configs {
            let plan = gpu.prepare_with(&a, *m, opts).unwrap();
            let label = format!("{name} / {dev} [{}]", plan.details());
            let wrong = std::sync::atomic::AtomicUsize::new(0);
            std::thread::scope(|s| {
                for t in 0..8usize {
                    let (plan, gpu, a, label, wrong) = (&plan, &gpu, &a, &label, &wrong);
                    s.spawn(move || {
                        let xs = integer_vector(a.ncols(), t as u64 + 1);
                        let x = GpuVector::from_slice(gpu, &xs).unwrap();
                        let mut y = GpuVector::filled(gpu, a.nrows(), f32::NAN).unwrap();
                        for i in 0..products {
                            // `time` settles the GPU's clocks first (a fraction of a second):
                            // once per thread, while the others multiply.
                            let mode = if i == 10 { 4 } else { [0, 1, 2, 3, 5][(t + i) % 5] };
                            let want = product(gpu, plan, a, mode, &x, &xs, &mut y)
                                .unwrap_or_else(|e| panic!("{label}: thread {t} mode {mode}: {e}"));
                            let got = y.read().unwrap();
                            if let Some(r) = (0..a.nrows()).find(|&r| got[r] != want[r]) {
                                wrong.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                eprintln!(
                                    "{label}: thread {t} product {i} mode {mode}: row {r} is {}, expected {}",
                                    got[r], want[r]
                                );
                            }
                        }
                    });
                }
            });
            assert_eq!(
                wrong.into_inner(),
                0,
                "{label}: wrong products of {} (rows listed above)",
                8 * products
            );
        }
    }
}

fn buffer(gpu: &Gpu, bytes: u64, usage: U) -> wgpu::Buffer {
    gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("caller's buffer"),
        size: bytes.max(16),
        usage,
        mapped_at_creation: false,
    })
}

/// The `Gpu` still multiplies right (no poisoned lock, no lost device).
fn still_usable(gpu: &Gpu, a: &CsrMatrix<f32>, label: &str) {
    check_method(
        gpu,
        a,
        Method::Speculative,
        &PlanOptions::default(),
        &format!("{label}: afterwards"),
    );
    check_method(
        gpu,
        a,
        Method::CsrVector,
        &PlanOptions::default(),
        &format!("{label}: afterwards"),
    );
}

/// A caller's `y` with `STORAGE | COPY_SRC` but no `COPY_DST`: the host-finished speculative
/// plan cannot write its rows from the host, so `run` takes its all-GPU stages (this panicked
/// inside `Queue::write_buffer` and poisoned the `Gpu`); `write` and `fill` are typed errors.
#[test]
fn outputs_without_copy_dst_still_multiply() {
    let a = integer_matrix(700, 900, 9);
    let xs = integer_vector(a.ncols(), 3);
    let want = exact(&a, &xs, 1.0, 0.0, &[]);
    for (dev, gpu) in gpus() {
        let x = GpuVector::from_slice(&gpu, &xs).unwrap();
        for finish in [Finish::Auto, Finish::Host, Finish::Gpu] {
            let mut o = PlanOptions::default();
            o.speculative.finish = finish;
            let Ok(plan) = gpu.prepare_with(&a, Method::Speculative, &o) else {
                continue;
            };
            let label = format!("{dev}, finish {finish:?}");
            let raw = buffer(&gpu, 4 * a.nrows() as u64, U::STORAGE | U::COPY_SRC);
            let mut y = GpuVector::<f32>::from_buffer(&gpu, raw, a.nrows()).unwrap();
            assert!(
                matches!(y.fill(1.0), Err(Error::CallerBuffer { array: "vector", ref problem }) if problem.contains("COPY_DST")),
                "{label}"
            );
            for _ in 0..3 {
                plan.run(&x, &mut y).unwrap();
                assert_eq!(y.read().unwrap(), want, "{label}: run");
                plan.run_axpby(2.0, &x, 0.0, &mut y).unwrap();
                let twice: Vec<f32> = want.iter().map(|v| 2.0 * v).collect();
                assert_eq!(y.read().unwrap(), twice, "{label}: run_axpby");
                plan.time(&x, &mut y, 2).unwrap();
                assert_eq!(y.read().unwrap(), want, "{label}: time");
            }
        }
        still_usable(&gpu, &a, dev);
    }
}

/// Reading a vector whose buffer lacks `COPY_SRC`, and cloning it, are typed errors naming the
/// flag (wgpu's default handler panicked on the copy).
#[test]
fn reading_without_copy_src_is_a_typed_error() {
    let a = integer_matrix(300, 300, 4);
    for (dev, gpu) in gpus() {
        let raw = buffer(&gpu, 4 * 300, U::STORAGE | U::COPY_DST);
        let mut y = GpuVector::<f32>::from_buffer(&gpu, raw, 300).unwrap();
        y.fill(2.0).unwrap();
        let x = GpuVector::from_slice(&gpu, &integer_vector(300, 1)).unwrap();
        for &m in Method::ALL {
            gpu.prepare(&a, m).unwrap().run(&x, &mut y).unwrap();
        }
        let missing = |r: &wgspmv::Result<Vec<f32>>| matches!(r, Err(Error::CallerBuffer { array: "vector", problem }) if problem.contains("COPY_SRC"));
        assert!(missing(&y.read()), "{dev}: read");
        assert!(
            missing(&pollster::block_on(y.read_async())),
            "{dev}: read_async"
        );
        assert!(y.try_clone().is_err(), "{dev}: try_clone");
        still_usable(&gpu, &a, dev);
    }
}

/// Buffers of another device are `WrongDevice` wherever a caller hands one in: a vector, a CSR
/// in GPU buffers, new values (wgpu-core asserted on the CSR and the values).
#[test]
fn buffers_of_another_device_are_refused() {
    let (Some(here), Some(there)) = (gpu(), gpu_without_subgroups()) else {
        return;
    };
    let a = integer_matrix(400, 500, 2);
    let theirs = |data: &[u8], usage: U| {
        let b = buffer(&there, data.len() as u64, usage | U::COPY_DST);
        there.queue().write_buffer(&b, 0, data);
        b
    };
    let all = U::STORAGE | U::COPY_SRC | U::COPY_DST;
    // A vector.
    let foreign = theirs(&[0u8; 64], all);
    assert!(matches!(
        GpuVector::<f32>::from_buffer(&here, foreign, 4),
        Err(Error::WrongDevice { what: "buffer" })
    ));
    // A CSR: each array in turn from the other device.
    let mine = |data: &[u8]| {
        let b = buffer(&here, data.len() as u64, all);
        here.queue().write_buffer(&b, 0, data);
        b
    };
    let arrays: [&[u8]; 3] = [
        bytemuck::cast_slice(a.row_ptr()),
        bytemuck::cast_slice(a.col_idx()),
        bytemuck::cast_slice(a.values()),
    ];
    for (k, name) in ["row_ptr", "col_idx", "values"].into_iter().enumerate() {
        let bufs: Vec<wgpu::Buffer> = arrays
            .iter()
            .enumerate()
            .map(|(i, d)| if i == k { theirs(d, all) } else { mine(d) })
            .collect();
        let csr = GpuCsr {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            row_ptr: &bufs[0],
            col_idx: &bufs[1],
            values: &bufs[2],
        };
        for &m in Method::ALL.iter().chain([&Method::Auto]) {
            let r = here.prepare_gpu_csr::<f32>(&csr, m, &PlanOptions::default());
            assert!(
                matches!(r, Err(Error::WrongDevice { what }) if what == name),
                "{m}, {name} of another device: {:?}",
                r.err()
            );
        }
    }
    // New values, with and without STORAGE usage.
    for usage in [U::COPY_SRC, all] {
        let values = theirs(bytemuck::cast_slice(a.values()), usage);
        for &m in Method::ALL {
            let plan = here.prepare(&a, m).unwrap();
            assert!(
                matches!(
                    plan.update_values_from_buffer(&values, 0),
                    Err(Error::WrongDevice { what: "values" })
                ),
                "{m}, {usage:?}"
            );
            let mut enc = here.device().create_command_encoder(&Default::default());
            assert!(matches!(
                plan.record_update_values(&mut enc, &values, 0),
                Err(Error::WrongDevice { what: "values" })
            ));
            // The caller's encoder is still valid: nothing was recorded into it.
            here.queue().submit([enc.finish()]);
        }
    }
    still_usable(&here, &a, "here");
    still_usable(&there, &a, "there");
}

/// The same buffer as `x` and `y` is a typed error in every way of running a plan, and the
/// caller's encoder stays valid (wgpu panicked at the caller's `finish` after `record`).
#[test]
fn one_buffer_as_input_and_output_is_refused() {
    let a = integer_matrix(500, 500, 8);
    for (dev, gpu) in gpus() {
        let raw = buffer(&gpu, 4 * 500, U::STORAGE | U::COPY_SRC | U::COPY_DST);
        let x = GpuVector::<f32>::from_buffer(&gpu, raw.clone(), 500).unwrap();
        let mut y = GpuVector::<f32>::from_buffer(&gpu, raw, 500).unwrap();
        for &m in Method::ALL {
            let plan = gpu.prepare(&a, m).unwrap();
            let aliased =
                |r: wgspmv::Result<()>| matches!(r, Err(Error::InvalidParameter { name: "y", .. }));
            assert!(aliased(plan.run(&x, &mut y)), "{dev} {m}: run");
            assert!(
                aliased(plan.submit(&x, &mut y).map(|_| ())),
                "{dev} {m}: submit"
            );
            assert!(
                aliased(plan.time(&x, &mut y, 1).map(|_| ())),
                "{dev} {m}: time"
            );
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            assert!(
                aliased(plan.record(&mut enc, &x, &mut y)),
                "{dev} {m}: record"
            );
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                assert!(
                    aliased(plan.record_in_pass(&mut pass, &x, &mut y)),
                    "{dev} {m}: record_in_pass"
                );
            }
            gpu.queue().submit([enc.finish()]);
        }
        still_usable(&gpu, &a, dev);
    }
}

/// A values buffer shorter than the plan's entries: the error counts elements, as its message
/// says (it counted bytes and called them elements).
#[test]
fn short_values_buffer_counts_elements() {
    let a = integer_matrix(200, 200, 6);
    let Some(gpu) = gpu() else { return };
    let short = buffer(&gpu, 4 * 10, U::COPY_SRC | U::STORAGE);
    for &m in Method::ALL {
        let plan = gpu.prepare(&a, m).unwrap();
        match plan.update_values_from_buffer(&short, 8) {
            Err(Error::DimensionMismatch {
                expected, actual, ..
            }) => assert_eq!((expected, actual), (a.nnz(), 8), "{m}"),
            other => panic!("{m}: {other:?}"),
        }
    }
}
