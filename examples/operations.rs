//! Times the operations beyond one product on Matrix Market files, as CSV on stdout: `y = Ax`,
//! `Y = AX` for k vectors (per product and per vector; both layouts), and `y = αAx + βy` with α
//! changed every call against α fixed. Each time is the mean over back-to-back products recorded
//! into one submission, wall clock including the submission's wait (the same for every row).
//!
//!     cargo run --release --example operations -- DIR [METHODS] [KS] [OFF]
//!
//! METHODS: comma-separated (default `csr-vector,auto`); KS: comma-separated k (default 8,32,
//! `-` for none); OFF: `immediates` opens the device without immediate data, so α and β are
//! written into a buffer (the path of adapters without `Features::IMMEDIATES`).
//! GB/s is of the minimal traffic: the matrix once, x and y k times.

use std::time::Instant;
use wgspmv::{CsrMatrix, Gpu, GpuMatrix, GpuVector, Layout, Method, PlanOptions, SpmvPlan};

/// Mean ms of one of `reps` products recorded by `record` into one encoder, after a warm-up.
fn time_recorded(
    gpu: &Gpu,
    reps: u32,
    mut record: impl FnMut(&mut wgpu::CommandEncoder) -> wgspmv::Result<()>,
) -> wgspmv::Result<f64> {
    let mut once = |n: u32| -> wgspmv::Result<f64> {
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        for _ in 0..n {
            record(&mut enc)?;
        }
        let t = Instant::now();
        gpu.queue().submit([enc.finish()]);
        gpu.wait()?;
        Ok(t.elapsed().as_secs_f64() * 1e3 / n as f64)
    };
    once(reps.min(20))?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        best = best.min(once(reps)?);
    }
    Ok(best)
}

fn main() -> wgspmv::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: operations DIR [METHODS] [KS]");
    let methods: Vec<Method> = args
        .get(2)
        .map_or("csr-vector,auto", |s| s.as_str())
        .split(',')
        .map(|m| Method::from_name(m).unwrap())
        .collect();
    let ks: Vec<usize> = args
        .get(3)
        .map_or("8,32", |s| s.as_str())
        .split(',')
        .filter(|&k| k != "-")
        .map(|k| k.parse().unwrap())
        .collect();
    let disabled_features = match args.get(4).map(String::as_str) {
        None => wgpu::Features::empty(),
        Some("immediates") => wgpu::Features::IMMEDIATES,
        Some(other) => panic!("OFF: `immediates`, not `{other}`"),
    };
    let gpu = pollster::block_on(Gpu::with_options(wgspmv::GpuOptions {
        disabled_features,
        ..Default::default()
    }))?;
    eprintln!(
        "{}, α and β as immediate data: {}",
        gpu.info().name,
        gpu.info().has_immediate_coeffs()
    );
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("a folder of .mtx files")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    files.sort();
    println!("matrix,method,op,k,ms,ms_per_vector,gbps,native");
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let a: CsrMatrix<f32> = wgspmv::matrix::io::read_matrix_market(&path)?;
        let (m, n, nnz) = (a.nrows(), a.ncols(), a.nnz());
        let matrix_bytes = nnz as f64 * 8.0 + (m as f64 + 1.0) * 4.0;
        let gbps = |k: usize, ms: f64| (matrix_bytes + k as f64 * (m + n) as f64 * 4.0) / ms / 1e6;
        let x = GpuVector::filled(&gpu, n, 1.0f32)?;
        let mut y = GpuVector::filled(&gpu, m, 0.0f32)?;
        for &method in &methods {
            let opts = PlanOptions {
                expected_products: Some(1000),
                ..Default::default()
            };
            let plan: SpmvPlan<f32> = gpu.prepare_with(&a, method, &opts)?;
            let label = format!("{name},{method}");
            // A product's GPU time is about what 200 of them take / 200 (at least 50 ms).
            let probe = time_recorded(&gpu, 20, |e| plan.record(e, &x, &mut y))?;
            let reps = ((50.0 / probe.max(1e-4)) as u32).clamp(20, 2000);
            let spmv = time_recorded(&gpu, reps, |e| plan.record(e, &x, &mut y))?;
            println!(
                "{label},spmv,1,{spmv:.5},{spmv:.5},{:.1},true",
                gbps(1, spmv)
            );
            // α changed every call (run_axpby: the plan's coefficient buffer written, no new
            // bind groups) against α fixed, whole calls, wall clock per call.
            for (what, change) in [("axpby-fixed", false), ("axpby-changing", true)] {
                let calls = reps.min(500);
                for i in 0..20 {
                    plan.run_axpby(1.0 + (i % 3) as f32, &x, 0.0, &mut y)?;
                }
                gpu.wait()?;
                let t = Instant::now();
                for i in 0..calls {
                    let alpha = if change {
                        1.0 + (i % 7) as f32 * 0.5
                    } else {
                        2.0
                    };
                    plan.run_axpby(alpha, &x, 0.0, &mut y)?;
                }
                gpu.wait()?;
                let ms = t.elapsed().as_secs_f64() * 1e3 / calls as f64;
                println!("{label},{what},1,{ms:.5},{ms:.5},{:.1},true", gbps(1, ms));
            }
            for &k in &ks {
                for layout in [Layout::RowMajor, Layout::ColumnMajor] {
                    let xk = GpuMatrix::filled(&gpu, n, k, layout, 1.0f32)?;
                    let mut yk = GpuMatrix::filled(&gpu, m, k, layout, 0.0f32)?;
                    let r = (reps / k as u32).max(5);
                    let ms = time_recorded(&gpu, r, |e| {
                        plan.record_spmm_axpby(e, 1.0, &xk, 0.0, &mut yk)
                    })?;
                    let tag = match layout {
                        Layout::RowMajor => "spmm-row",
                        Layout::ColumnMajor => "spmm-col",
                    };
                    println!(
                        "{label},{tag},{k},{ms:.5},{:.5},{:.1},{}",
                        ms / k as f64,
                        gbps(k, ms),
                        plan.has_spmm_kernel()
                    );
                }
            }
        }
    }
    Ok(())
}
