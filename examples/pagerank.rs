//! PageRank of a graph on the GPU beside the same power iteration on the CPU: iterations, time
//! per iteration, the top nodes, and how far the two rankings are apart.
//!
//!     cargo run --release --example pagerank -- G.mtx [DAMPING] [--iters N] [--floor] [--gpu-only]
//!
//! G's entry (i, j) is a link i → j (any Matrix Market graph, e.g. from ../shared/matrices/);
//! without a file, a generated graph with power-law out-degrees and about 2 million links
//! (`PAGERANK_LINKS=n` for another size; `-` in place of the file keeps the generated graph).
//! `--iters N` runs exactly N iterations (no tolerance) for a time per iteration; `--floor`
//! prints what an iteration cannot beat: the product by Gᵀ plus 6 passes over an n-vector at
//! the copy bandwidth (the new ranks from y, v and r, written, and the next `r / D` from the
//! out-degrees, written); `--gpu-only` leaves out the CPU.

use std::time::Instant;
use wgspmv::reference;
use wgspmv::solvers::{pagerank, PageRankOptions};
use wgspmv::{CsrMatrix, Gpu, Method, PlanOptions};

fn main() -> wgspmv::Result<()> {
    env_logger::init();
    let all: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| all.iter().any(|a| a == name);
    let iters: Option<usize> = all
        .iter()
        .position(|a| a == "--iters")
        .map(|i| all[i + 1].parse().expect("a count of iterations"));
    // The positional arguments: the graph and the damping.
    let args: Vec<String> = all
        .iter()
        .enumerate()
        .filter(|&(i, a)| !a.starts_with("--") && (i == 0 || all[i - 1] != "--iters"))
        .map(|(_, a)| a.clone())
        .collect();
    let size: usize =
        std::env::var("PAGERANK_LINKS").map_or(2_000_000, |v| v.parse().expect("a count"));
    let g: CsrMatrix<f64> = match args.first().filter(|a| a.as_str() != "-") {
        Some(path) => wgspmv::matrix::io::read_matrix_market(path)?,
        // The suite's pattern as links of weight 1 (its values may be negative; PageRank
        // needs non-negative weights).
        None => {
            let a = wgspmv::testing::SuiteClass::PowerLaw.generate(size, 5);
            a.with_values(vec![1.0; a.nnz()])?
        }
    };
    let damping: f64 = args
        .get(1)
        .map_or(0.85, |d| d.parse().expect("a damping factor"));
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.info().name);
    println!("graph: {} nodes, {} links", g.nrows(), g.nnz());
    let g32 = g.cast::<f32>();
    let t = Instant::now();
    let plan = gpu.prepare_with(
        &g32,
        Method::Auto,
        &PlanOptions {
            transposed: Some(Method::Auto),
            ..Default::default()
        },
    )?;
    let setup = t.elapsed().as_secs_f64() * 1e3;
    let opts = PageRankOptions {
        damping,
        tol: if iters.is_some() { 0.0 } else { 1e-6 },
        max_iter: iters.unwrap_or(1_000),
        ..Default::default()
    };
    // A first run compiles the kernels; the second is timed.
    pagerank(
        &plan,
        &PageRankOptions {
            max_iter: 2,
            ..opts.clone()
        },
    )?;
    let (ranks, rep) = pagerank(&plan, &opts)?;
    let ms = rep.time.as_secs_f64() * 1e3;
    println!(
        "GPU (f32, Gᵀ by {}, setup {setup:.1} ms): {:?} after {} iterations, {ms:.1} ms, {:.4} ms per iteration",
        plan.transposed()?.method(),
        rep.stop,
        rep.iterations,
        ms / rep.iterations.max(1) as f64
    );
    if let Some(n) = iters.filter(|&n| n >= 8) {
        // The start and the end cost the same for any count: the difference of two runs is
        // the iteration's own time.
        let quarter = n / 4;
        let (_, few) = pagerank(
            &plan,
            &PageRankOptions {
                max_iter: quarter,
                ..opts.clone()
            },
        )?;
        let few_ms = few.time.as_secs_f64() * 1e3;
        println!(
            "per iteration beyond the start: {:.4} ms ({} iterations {ms:.1} ms, {} iterations {few_ms:.1} ms)",
            (ms - few_ms) / (rep.iterations - few.iterations).max(1) as f64,
            rep.iterations,
            few.iterations
        );
    }
    if flag("--floor") {
        let gt = plan.transposed()?;
        let n = g.nrows();
        let x = wgspmv::GpuVector::filled(&gpu, n, 1.0f32 / n as f32)?;
        let mut y = wgspmv::GpuVector::filled(&gpu, n, 0.0f32)?;
        let product = gt.time(&x, &mut y, 200)?.ms;
        let gbps = gpu.copy_bandwidth(256 << 20, 20)?;
        let passes = 6.0 * (n * 4) as f64 / (gbps * 1e6);
        println!(
            "floor: product by Gᵀ {product:.4} ms + 6 vector passes {passes:.4} ms (copy {gbps:.0} GB/s) = {:.4} ms per iteration",
            product + passes
        );
    }
    if flag("--gpu-only") {
        return Ok(());
    }
    let t = Instant::now();
    let cpu = reference::pagerank(&g, damping, None, opts.tol, opts.max_iter)?;
    let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
    let cpu_iters = cpu.residuals.len() - 1;
    println!(
        "CPU (f64, one thread, the same algorithm): {:?} after {cpu_iters} iterations, {cpu_ms:.1} ms, {:.4} ms per iteration",
        cpu.stop,
        cpu_ms / cpu_iters.max(1) as f64
    );
    let r = ranks.read()?;
    let apart = r
        .iter()
        .zip(&cpu.x)
        .map(|(a, b)| (*a as f64 - b).abs())
        .sum::<f64>();
    println!("L1 distance between the two rankings: {apart:.2e}");
    let mut order: Vec<usize> = (0..r.len()).collect();
    order.sort_by(|&a, &b| r[b].total_cmp(&r[a]));
    for &i in order.iter().take(5) {
        println!("  node {}: {:.6} (CPU {:.6})", i + 1, r[i], cpu.x[i]);
    }
    Ok(())
}
