//! `wgspmv pagerank`: the PageRank of a graph on the GPU (power iteration through the plan of
//! Gᵀ), ranks written as a Matrix Market array; the exit status says whether it converged.

use crate::args::ReadArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use wgspmv::matrix::io::{self, ReadLimits};
use wgspmv::solvers::{pagerank, PageRankOptions, SolveReport};
use wgspmv::{Gpu, Method, PlanOptions};

/// `wgspmv pagerank`.
#[derive(clap::Args)]
pub struct Args {
    /// The graph's adjacency matrix (Matrix Market, square): entry (i, j) is a link i → j of
    /// that weight.
    #[arg(long)]
    matrix: PathBuf,
    /// The probability of following a link.
    #[arg(long, default_value_t = 0.85)]
    damping: f64,
    /// Stop once an iteration changes the ranks by at most this much (L1).
    #[arg(long, default_value_t = 1e-6)]
    tol: f64,
    /// Most iterations.
    #[arg(long, default_value_t = 1000)]
    max_iter: usize,
    /// Write the ranks here (a Matrix Market array summing to 1).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Print the highest-ranked nodes (1-based, as in the file).
    #[arg(long, default_value_t = 5)]
    top: usize,
    #[command(flatten)]
    read: ReadArgs,
}

/// Runs `wgspmv pagerank`; fails (status 1) when it stops short of the tolerance.
pub fn main(args: Args) -> ExitCode {
    crate::solve::exit_status(run(&args), "last change")
}

fn run(args: &Args) -> wgspmv::Result<SolveReport> {
    let gpu = Gpu::new()?;
    let info = gpu.info();
    println!(
        "adapter: {} ({:?}, {:?})",
        info.name, info.backend, info.device_type
    );
    let limits = args.read.limits(ReadLimits::for_gpu::<f32>(&gpu));
    let g = io::read_matrix_market_with::<f32>(&args.matrix, &limits)?;
    let opts = PlanOptions {
        transposed: Some(Method::Auto),
        ..Default::default()
    };
    let plan = gpu.prepare_with(&g, Method::Auto, &opts)?;
    println!(
        "graph: {}: {} nodes, {} links; Gᵀ's product by {} (setup {:.1} ms)",
        args.matrix.display(),
        g.nrows(),
        g.nnz(),
        plan.transposed()?.method(),
        plan.report().setup_ms
    );
    let (ranks, rep) = pagerank(
        &plan,
        &PageRankOptions {
            damping: args.damping,
            tol: args.tol,
            max_iter: args.max_iter,
            ..Default::default()
        },
    )?;
    let ms = rep.time.as_secs_f64() * 1e3;
    println!(
        "pagerank: {:?} after {} iterations in {ms:.1} ms ({:.3} ms per iteration); last change {:.3e}, |Σr − 1| = {:.1e}",
        rep.stop,
        rep.iterations,
        ms / rep.iterations.max(1) as f64,
        rep.residuals.last().copied().unwrap_or(f64::NAN),
        rep.true_residual
    );
    let r = ranks.read()?;
    let mut order: Vec<usize> = (0..r.len()).collect();
    order.sort_by(|&a, &b| r[b].total_cmp(&r[a]));
    for &i in order.iter().take(args.top) {
        println!("  node {}: {:.6}", i + 1, r[i]);
    }
    if let Some(out) = &args.output {
        io::write_vector(out, &r)?;
        println!("wrote the ranks ({} values) to {}", r.len(), out.display());
    }
    Ok(rep)
}
