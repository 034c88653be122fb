//! The device's buffer pool: a plan built into the memory a dropped plan left (stale contents,
//! buffers of a larger size class) equals one built into fresh memory, bit for bit, for every
//! method, from the host CSR and from GPU buffers; a plan recorded into a caller's encoder never
//! lends its buffers; the pool's byte limit holds.
//!
//! Each test opens a device of its own, so that no other test's plans share its pool.

use crate::common;
use wgspmv::testing::suite::{random_vector, SuiteClass};
use wgspmv::{CsrMatrix, Gpu, GpuCsr, GpuVector, Method, PlanOptions, SpmvPlan};

fn own_device() -> Option<Gpu> {
    let gpu = common::gpu()?;
    let own = common::reopened(&gpu, Gpu::wanted_limits);
    if own.is_none() {
        eprintln!("SKIPPED: the adapter could not be opened a second time");
    }
    own
}

/// A plan of `method` for `a`, from the host CSR or from buffers of the caller's.
fn prepare(gpu: &Gpu, a: &CsrMatrix<f32>, method: Method, on_gpu: bool) -> SpmvPlan<f32> {
    let opts = PlanOptions::default();
    if !on_gpu {
        return gpu.prepare_with(a, method, &opts).unwrap();
    }
    let b = crate::gpu_csr::caller_buffers(
        gpu,
        a.row_ptr(),
        a.col_idx(),
        bytemuck::cast_slice(a.values()),
    );
    let desc = GpuCsr {
        nrows: a.nrows(),
        ncols: a.ncols(),
        nnz: a.nnz(),
        row_ptr: &b[0],
        col_idx: &b[1],
        values: &b[2],
    };
    gpu.prepare_gpu_csr(&desc, method, &opts).unwrap()
}

/// y = A·x into a NaN-poisoned y, as bits.
fn product_bits(gpu: &Gpu, plan: &SpmvPlan<f32>, x: &[f32]) -> Vec<u32> {
    let gx = GpuVector::from_slice(gpu, x).unwrap();
    let mut gy = GpuVector::filled(gpu, plan.nrows(), f32::NAN).unwrap();
    plan.run(&gx, &mut gy).unwrap();
    gy.read().unwrap().iter().map(|v| v.to_bits()).collect()
}

/// Builds and runs a plan of `stale` and drops it, leaving its buffers (full of its data) idle.
fn leave_stale_buffers(gpu: &Gpu, stale: &CsrMatrix<f32>, method: Method, on_gpu: bool) {
    let plan = prepare(gpu, stale, method, on_gpu);
    let x: Vec<f32> = vec![f32::NAN; stale.ncols()];
    let _ = product_bits(gpu, &plan, &x);
    drop(plan);
    gpu.wait().unwrap();
}

#[test]
fn plans_in_reused_memory_equal_plans_in_fresh_memory() {
    let Some(gpu) = own_device() else { return };
    for class in SuiteClass::ALL {
        let a: CsrMatrix<f32> = class.generate(3000, 11).cast();
        let x: Vec<f32> = random_vector(a.ncols(), 3)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        // The same pattern with other values (every value-holding buffer the same size), and a
        // larger matrix of the class (buffers of the same or a larger size class).
        let poisoned = a.with_values(vec![-3.0e30f32; a.nnz()]).unwrap();
        let larger: CsrMatrix<f32> = class.generate(3300, 12).cast();
        for &method in Method::ALL {
            for on_gpu in [false, true] {
                let label = format!("{class:?} / {method} / from GPU buffers: {on_gpu}");
                gpu.set_buffer_pool_bytes(0);
                let fresh = product_bits(&gpu, &prepare(&gpu, &a, method, on_gpu), &x);
                assert_eq!(gpu.buffer_pool_bytes(), 0, "{label}");
                gpu.set_buffer_pool_bytes(wgspmv::gpu::DEFAULT_POOL_BYTES);
                for stale in [&poisoned, &larger] {
                    leave_stale_buffers(&gpu, stale, method, on_gpu);
                    let idle = gpu.buffer_pool_bytes();
                    // (From the host CSR, some methods upload every array as it is: nothing
                    // of theirs is pooled.)
                    assert!(!on_gpu || idle > 0, "{label}: a dropped plan left nothing");
                    let plan = prepare(&gpu, &a, method, on_gpu);
                    if on_gpu && stale.nnz() == a.nnz() {
                        assert!(
                            gpu.buffer_pool_bytes() < idle,
                            "{label}: the plan took nothing from the pool"
                        );
                    }
                    let reused = product_bits(&gpu, &plan, &x);
                    assert!(
                        reused == fresh,
                        "{label}: the plan in reused memory differs (stale nnz {}) [{}]",
                        stale.nnz(),
                        plan.report()
                    );
                    drop(plan);
                    gpu.release_buffer_pool();
                }
            }
        }
    }
}

#[test]
fn a_plan_recorded_into_a_callers_encoder_lends_no_buffers() {
    let Some(gpu) = own_device() else { return };
    let a: CsrMatrix<f32> = SuiteClass::PowerLaw.generate(4000, 5).cast();
    // Same pattern, other values: a plan of it would fill the recorded plan's buffers, were they
    // lent, with values the recorded work would then read.
    let b = a
        .with_values(a.values().iter().map(|v| 2.0 * v + 1.0).collect())
        .unwrap();
    let x: Vec<f32> = random_vector(a.ncols(), 9)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    for &method in Method::ALL {
        gpu.release_buffer_pool();
        let want_a = product_bits(&gpu, &prepare(&gpu, &a, method, true), &x);
        let want_b = product_bits(&gpu, &prepare(&gpu, &b, method, true), &x);
        gpu.release_buffer_pool();
        // Recorded, then dropped before the caller submits.
        let recorded = prepare(&gpu, &a, method, true);
        let gx = GpuVector::from_slice(&gpu, &x).unwrap();
        let mut gy = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        recorded.record(&mut enc, &gx, &mut gy).unwrap();
        drop(recorded);
        // Another plan built meanwhile, then the caller's work: both products are right.
        let other = prepare(&gpu, &b, method, true);
        assert!(product_bits(&gpu, &other, &x) == want_b, "{method}");
        gpu.queue().submit([enc.finish()]);
        let y: Vec<u32> = gy.read().unwrap().iter().map(|v| v.to_bits()).collect();
        assert!(y == want_a, "{method}: the recorded product is wrong");
        assert!(
            product_bits(&gpu, &other, &x) == want_b,
            "{method}: the other plan is wrong after the caller's work"
        );
    }
}

#[test]
fn the_pool_keeps_at_most_its_limit() {
    let Some(gpu) = own_device() else { return };
    let a: CsrMatrix<f32> = SuiteClass::Banded.generate(20_000, 2).cast();
    let build = || drop(prepare(&gpu, &a, Method::Cmrs, true));
    gpu.set_buffer_pool_bytes(0);
    build();
    assert_eq!(gpu.buffer_pool_bytes(), 0);
    gpu.set_buffer_pool_bytes(wgspmv::gpu::DEFAULT_POOL_BYTES);
    build();
    let all = gpu.buffer_pool_bytes();
    assert!(all > 0);
    // Half the limit: the oldest idle buffers go at once, and later returns stay under it.
    gpu.set_buffer_pool_bytes(all / 2);
    assert!(gpu.buffer_pool_bytes() <= all / 2);
    build();
    build();
    assert!(gpu.buffer_pool_bytes() <= all / 2);
    gpu.release_buffer_pool();
    assert_eq!(gpu.buffer_pool_bytes(), 0);
}

#[test]
fn large_uploads_through_reused_staging_arrive_whole() {
    let Some(gpu) = own_device() else { return };
    // Arrays above the staged-upload size (1 MiB; these are above 4 MiB), uploaded from the host again and again: the
    // later uploads write through the staging and into the buffers the earlier ones left.
    let a: CsrMatrix<f32> = SuiteClass::Banded.generate(1_500_000, 4).cast();
    let b = a
        .with_values(a.values().iter().map(|v| 0.5 - v).collect())
        .unwrap();
    assert!(a.nnz() * 4 > 4 << 20, "{} entries", a.nnz());
    let x: Vec<f32> = random_vector(a.ncols(), 1)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    for method in [Method::CsrVector, Method::Cmrs, Method::Bccoo] {
        gpu.set_buffer_pool_bytes(0);
        let want_a = product_bits(&gpu, &prepare(&gpu, &a, method, false), &x);
        let want_b = product_bits(&gpu, &prepare(&gpu, &b, method, false), &x);
        gpu.set_buffer_pool_bytes(wgspmv::gpu::DEFAULT_POOL_BYTES);
        for (m, want) in [(&a, &want_a), (&b, &want_b), (&a, &want_a)] {
            let plan = prepare(&gpu, m, method, false);
            assert!(product_bits(&gpu, &plan, &x) == *want, "{method}");
        }
        assert!(gpu.buffer_pool_bytes() > 0, "{method}: nothing was pooled");
    }
    // Vectors take the same path.
    let long: Vec<f32> = (0..1_500_000).map(|i| i as f32 * 0.25 - 7.0).collect();
    for _ in 0..3 {
        let v = GpuVector::from_slice(&gpu, &long).unwrap();
        assert!(v.read().unwrap() == long);
    }
}
