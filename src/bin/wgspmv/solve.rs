//! `wgspmv solve`: A·x = b by an iterative solver on the GPU (CG or BiCGStab), x written as a
//! Matrix Market array; the exit status says whether it converged.

use crate::args::ReadArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use wgspmv::matrix::io::{self, ReadLimits};
use wgspmv::solvers::{bicgstab, cg, inverse_diagonal, BicgstabOptions, CgOptions, SolveReport};
use wgspmv::{CsrMatrix, Gpu, GpuVector, Method, Scalar};

/// `wgspmv solve`.
#[derive(clap::Args)]
pub struct Args {
    /// The matrix A (Matrix Market, square).
    #[arg(long)]
    matrix: PathBuf,
    /// The right-hand side b (a Matrix Market vector); default: ones.
    #[arg(long)]
    rhs: Option<PathBuf>,
    /// cg (symmetric positive definite A) or bicgstab (any square A).
    #[arg(long, default_value = "cg", value_parser = ["cg", "bicgstab"])]
    solver: String,
    /// Stop once ‖r‖ ≤ tol·‖b‖.
    #[arg(long, default_value_t = 1e-6)]
    tol: f64,
    /// Most iterations.
    #[arg(long, default_value_t = 10_000)]
    max_iter: usize,
    /// CG with a Jacobi (diagonal) preconditioner.
    #[arg(long)]
    jacobi: bool,
    /// The product's method.
    #[arg(long, default_value = "auto", value_parser = crate::args::method_names())]
    method: String,
    /// Compute in f64 (needs SHADER_F64).
    #[arg(long)]
    f64: bool,
    /// Write x here (a Matrix Market array).
    #[arg(long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
}

/// Runs `wgspmv solve`; fails (status 1) when the solve stops short of the tolerance.
pub fn main(args: Args) -> ExitCode {
    exit_status(run(&args), "‖r‖/‖b‖")
}

/// The exit status of a solver command: success once converged, else status 1 with the reason
/// (the stop, the iterations and the last value of `measure`) or the error.
pub fn exit_status(outcome: wgspmv::Result<SolveReport>, measure: &str) -> ExitCode {
    match outcome {
        Ok(rep) if rep.converged() => ExitCode::SUCCESS,
        Ok(rep) => {
            eprintln!(
                "error: not converged: {:?} after {} iterations ({measure} = {:.3e})",
                rep.stop,
                rep.iterations,
                rep.residuals.last().copied().unwrap_or(f64::NAN)
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> wgspmv::Result<SolveReport> {
    let gpu = Gpu::new()?;
    let info = gpu.info();
    println!(
        "adapter: {} ({:?}, {:?})",
        info.name, info.backend, info.device_type
    );
    let limits = args.read.limits(if args.f64 {
        ReadLimits::for_gpu::<f64>(&gpu)
    } else {
        ReadLimits::for_gpu::<f32>(&gpu)
    });
    let a = io::read_matrix_market_with::<f64>(&args.matrix, &limits)?;
    let b = match &args.rhs {
        Some(p) => io::read_vector_with::<f64>(p, &limits)?,
        None => vec![1.0; a.nrows()],
    };
    if b.len() != a.nrows() {
        return Err(wgspmv::Error::DimensionMismatch {
            what: "b (the matrix's rows)",
            expected: a.nrows(),
            actual: b.len(),
        });
    }
    if args.f64 {
        solve_typed::<f64>(args, &gpu, &a, &b)
    } else {
        solve_typed::<f32>(args, &gpu, &a.cast(), &b)
    }
}

fn solve_typed<T: Scalar>(
    args: &Args,
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    b: &[f64],
) -> wgspmv::Result<SolveReport> {
    let method = Method::from_name(&args.method)?;
    let plan = gpu.prepare(a, method)?;
    println!(
        "matrix: {}: {} rows, {} nonzeros; product by {} (setup {:.1} ms)",
        args.matrix.display(),
        a.nrows(),
        a.nnz(),
        plan.method(),
        plan.report().setup_ms
    );
    let bt: Vec<T> = b.iter().map(|&v| T::from_f64(v)).collect();
    let gb = GpuVector::from_slice(gpu, &bt)?;
    let mut gx = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
    let rep = match args.solver.as_str() {
        "bicgstab" => {
            let opts = BicgstabOptions {
                tol: args.tol,
                max_iter: args.max_iter,
                ..Default::default()
            };
            bicgstab(&plan, &gb, &mut gx, &opts)?
        }
        _ => {
            let diag = if args.jacobi {
                Some(GpuVector::from_slice(gpu, &inverse_diagonal(a)?)?)
            } else {
                None
            };
            let opts = CgOptions {
                tol: args.tol,
                max_iter: args.max_iter,
                jacobi: diag.as_ref(),
                ..Default::default()
            };
            cg(&plan, &gb, &mut gx, &opts)?
        }
    };
    let ms = rep.time.as_secs_f64() * 1e3;
    println!(
        "{}: {:?} after {} iterations in {:.1} ms ({:.3} ms per iteration, {} submissions); ‖r‖/‖b‖ {:.3e} by the recurrence, {:.3e} computed from x",
        args.solver,
        rep.stop,
        rep.iterations,
        ms,
        ms / rep.iterations.max(1) as f64,
        rep.submissions,
        rep.residuals.last().copied().unwrap_or(f64::NAN),
        rep.true_residual
    );
    if rep.converged() && rep.true_residual > 10.0 * args.tol {
        println!(
            "note: the residual computed from x is {:.1}× the tolerance: the recurrence drifted in {} (--f64 keeps them closer)",
            rep.true_residual / args.tol,
            T::NAME
        );
    }
    if let Some(out) = &args.output {
        io::write_vector(out, &gx.read()?)?;
        println!("wrote x ({} values) to {}", a.nrows(), out.display());
    }
    Ok(rep)
}
