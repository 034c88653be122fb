//! Solves a Poisson problem by conjugate gradient on the GPU and the same algorithm on the CPU
//! (rayon, f64), and prints iterations and time per iteration of each. The matrix is the 5-point
//! (2-D) or 7-point (3-D) Laplacian of a grid it generates, or any SPD Matrix Market file; the
//! right-hand side is ones.
//!
//!     cargo run --release --example poisson                   # 2-D, 256 × 256 grid
//!     cargo run --release --example poisson -- --3d 96 --jacobi
//!     cargo run --release --example poisson -- --matrix A.mtx --f64
//!     cargo run --release --example poisson -- --3d 160 --iters 500   # time 500 iterations
//!     cargo run --release --example poisson -- --method csr-vector    # the product by one method
//!
//! `--gpu-only` leaves out the CPU's solve (minutes on a large matrix); `--floor` prints what an
//! iteration cannot beat: the plan's product plus 12 passes over a vector at the copy bandwidth,
//! and with the latency of CG's three dependent vector dispatches added; `--profile` times each
//! dispatch of an iteration in place.
//!
//! `--iters N` runs exactly N iterations (no tolerance), for timing; `--tol T` sets the
//! tolerance otherwise (default 1e-6, relative to ‖b‖).

use std::time::Instant;
use wgspmv::reference;
use wgspmv::solvers::{cg, inverse_diagonal, CgOptions};
use wgspmv::{CsrMatrix, Gpu, GpuVector, Method, Scalar};

/// The Laplacian of a k^dims grid (dims 2 or 3) with Dirichlet boundaries: 2·dims on the
/// diagonal, −1 to each neighbour; CSR built directly (rows in order, columns sorted).
fn laplacian(k: usize, dims: u32) -> wgspmv::Result<CsrMatrix<f64>> {
    let n = k.pow(dims);
    let stride = |d: u32| k.pow(d);
    let mut row_ptr = Vec::with_capacity(n + 1);
    let mut col_idx = Vec::with_capacity(n * (2 * dims as usize + 1));
    let mut values = Vec::with_capacity(col_idx.capacity());
    row_ptr.push(0u32);
    for r in 0..n {
        let mut entries: Vec<(usize, f64)> = vec![(r, 2.0 * dims as f64)];
        for d in 0..dims {
            let coord = (r / stride(d)) % k;
            if coord > 0 {
                entries.push((r - stride(d), -1.0));
            }
            if coord + 1 < k {
                entries.push((r + stride(d), -1.0));
            }
        }
        entries.sort_by_key(|e| e.0);
        for (c, v) in entries {
            col_idx.push(c as u32);
            values.push(v);
        }
        row_ptr.push(col_idx.len() as u32);
    }
    CsrMatrix::try_new(n, n, row_ptr, col_idx, values)
}

fn main() -> wgspmv::Result<()> {
    env_logger::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let (a, name) = if let Some(path) = value("--matrix") {
        (
            wgspmv::matrix::io::read_matrix_market::<f64>(&path)?,
            path.clone(),
        )
    } else if let Some(k) = value("--3d") {
        let k: usize = k.parse().expect("--3d takes a grid size");
        (laplacian(k, 3)?, format!("3-D Laplacian, {k}^3 grid"))
    } else {
        let k: usize = value("--2d").map_or(256, |k| k.parse().expect("--2d takes a grid size"));
        (laplacian(k, 2)?, format!("2-D Laplacian, {k}^2 grid"))
    };
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.info().name);
    println!("matrix: {name}: {} rows, {} nonzeros", a.nrows(), a.nnz());
    if has("--f64") {
        solve::<f64>(&gpu, &a, &args)
    } else {
        solve::<f32>(&gpu, &a.cast(), &args)
    }
}

fn solve<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>, args: &[String]) -> wgspmv::Result<()> {
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let iters: Option<usize> = value("--iters").map(|v| v.parse().expect("--iters takes a count"));
    let tol: f64 = match iters {
        Some(_) => 0.0,
        None => value("--tol").map_or(1e-6, |v| v.parse().expect("--tol takes a number")),
    };
    let max_iter = iters.unwrap_or(20_000);
    let jacobi = args.iter().any(|a| a == "--jacobi");
    let n = a.nrows();
    let b = vec![T::from_f64(1.0); n];
    let zeros = vec![T::from_f64(0.0); n];

    let t = Instant::now();
    let method = value("--method").map_or(Ok(Method::Auto), |m| Method::from_name(&m))?;
    let plan = gpu.prepare(a, method)?;
    let setup = t.elapsed().as_secs_f64() * 1e3;
    let inv_diag = inverse_diagonal(a)?;
    let diag = GpuVector::from_slice(gpu, &inv_diag)?;
    let gb = GpuVector::from_slice(gpu, &b)?;
    let opts = CgOptions {
        tol,
        max_iter,
        jacobi: jacobi.then_some(&diag),
        ..Default::default()
    };
    // A first solve of a few iterations compiles the kernels; the second is timed.
    let mut gx = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
    cg(
        &plan,
        &gb,
        &mut gx,
        &CgOptions {
            max_iter: 2,
            ..opts.clone()
        },
    )?;
    let mut gx = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
    // Work queued before (the plan's build, uploads) is not the solve's.
    gpu.wait()?;
    let rep = cg(&plan, &gb, &mut gx, &opts)?;
    let gpu_ms = rep.time.as_secs_f64() * 1e3;
    println!(
        "GPU ({}, {}, product by {}, setup {setup:.1} ms): {:?} after {} iterations, {:.1} ms, {:.4} ms per iteration, ‖b − Ax‖/‖b‖ = {:.2e}",
        T::NAME,
        if jacobi { "Jacobi" } else { "no preconditioner" },
        plan.method(),
        rep.stop,
        rep.iterations,
        gpu_ms,
        gpu_ms / rep.iterations.max(1) as f64,
        rep.true_residual
    );

    if let Some(n) = iters.filter(|&n| n >= 8) {
        // The start (vectors, r = b − A·x, the first submission) and the end (the true residual)
        // cost the same for any count: the difference of two solves is the iteration's own time.
        let quarter = n / 4;
        let mut gx = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
        gpu.wait()?;
        let few = cg(
            &plan,
            &gb,
            &mut gx,
            &CgOptions {
                max_iter: quarter,
                ..opts.clone()
            },
        )?;
        let few_ms = few.time.as_secs_f64() * 1e3;
        println!(
            "per iteration beyond the start: {:.4} ms ({n} iterations {gpu_ms:.1} ms, {quarter} iterations {few_ms:.1} ms)",
            (gpu_ms - few_ms) / (n - quarter) as f64
        );
    }
    if args.iter().any(|a| a == "--profile") {
        // Each dispatch of an iteration timed in place, 100 iterations back to back.
        let mut gx = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
        let short = CgOptions {
            tol: 0.0,
            max_iter: 2,
            ..opts.clone()
        };
        if let Some(times) = wgspmv::solvers::cg_dispatch_times(&plan, &gb, &mut gx, &short, 100)? {
            let total: f64 = times.iter().map(|t| t.1).sum();
            let each: Vec<String> = times
                .iter()
                .map(|(what, ms)| format!("{what} {ms:.4}"))
                .collect();
            println!(
                "dispatches (median ms, each in its own timed pass): {} = {total:.4}",
                each.join(", ")
            );
        }
    }
    if args.iter().any(|a| a == "--floor") {
        // What one iteration cannot beat: this plan's product plus about 12 passes over an
        // n-vector (CG's dot products and updates) at the device's copy bandwidth.
        let gp = GpuVector::filled(gpu, n, T::from_f64(1.0))?;
        let mut gq = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
        let product = plan.time(&gp, &mut gq, 200)?.ms;
        let gbps = gpu.copy_bandwidth(256 << 20, 20)?;
        let passes = 12.0 * (n * std::mem::size_of::<T>()) as f64 / (gbps * 1e6);
        println!(
            "floor: product {product:.4} ms + 12 vector passes {passes:.4} ms (copy {gbps:.0} GB/s) = {:.4} ms per iteration",
            product + passes
        );
        // What a dependent dispatch costs however little it does: products by a 1×1 matrix
        // back to back in one pass, each waiting for the one before (they write the same y).
        let one = gpu.prepare(
            &CsrMatrix::try_new(1, 1, vec![0, 1], vec![0], vec![T::from_f64(1.0)])?,
            Method::CsrScalar,
        )?;
        let (x1, mut y1) = (
            GpuVector::filled(gpu, 1, T::from_f64(1.0))?,
            GpuVector::filled(gpu, 1, T::from_f64(0.0))?,
        );
        let mut latency = f64::INFINITY;
        for _ in 0..3 {
            gpu.wait()?;
            let t = Instant::now();
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                for _ in 0..2000 {
                    one.record_in_pass(&mut pass, &x1, &mut y1)?;
                }
            }
            gpu.queue().submit([enc.finish()]);
            gpu.wait()?;
            latency = latency.min(t.elapsed().as_secs_f64() * 1e3 / 2000.0);
        }
        println!(
            "a dependent dispatch: {:.2} µs (2000 products by a 1×1 matrix in one pass); the floor with CG's 3 vector dispatches at that: {:.4} ms",
            latency * 1e3,
            product + passes + 3.0 * latency
        );
    }
    if args.iter().any(|a| a == "--gpu-only") {
        return Ok(());
    }
    let t = Instant::now();
    let cpu = reference::cg(
        a,
        &b,
        &zeros,
        jacobi.then_some(&inv_diag[..]),
        tol,
        max_iter,
    )?;
    let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
    let cpu_iters = cpu.residuals.len() - 1;
    println!(
        "CPU (f64, rayon on {} threads, the same algorithm): {:?} after {cpu_iters} iterations, {cpu_ms:.1} ms, {:.4} ms per iteration",
        rayon::current_num_threads(),
        cpu.stop,
        cpu_ms / cpu_iters.max(1) as f64,
    );
    Ok(())
}
