//! The main job: multiply a sparse matrix by a vector on the GPU with every method (or one), and
//! check each result against the f64 CPU reference.
//!
//!     cargo run --release --example spmv
//!     cargo run --release --example spmv -- --matrix A.mtx --method csr-vector --x x.mtx --output y.mtx

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
#[path = "common/bccoo_args.rs"]
mod bccoo_args;
#[path = "common/suraa_args.rs"]
mod suraa_args;
use bccoo_args::BccooArgs;
use suraa_args::SuraaArgs;
use wgspmv::methods::speculative::{Finish, SpeculativeOptions};
use wgspmv::methods::suraa::SetupOn;
use wgspmv::{io, reference, CsrMatrix, Gpu, GpuVector, Method, PlanOptions, Scalar, SuiteClass};

#[derive(Parser)]
#[command(about = "Sparse matrix-vector multiplication on the GPU, checked against an f64 CPU reference")]
struct Args {
    /// Matrix Market file (coordinate; gzipped or not). Default: a generated power-law matrix.
    #[arg(long)]
    matrix: Option<PathBuf>,
    /// Method name (csr-scalar, csr-vector, cmrs, cmrs-padded, speculative, suraa, bccoo,
    /// bccoo-plus, auto); default: every method.
    #[arg(long)]
    method: Option<String>,
    /// Where `speculative` runs its check stage: auto, host or gpu.
    #[arg(long, default_value = "auto")]
    finish: String,
    /// Where `suraa` sets up (sorts rows, plans its groups): auto, host or gpu.
    #[arg(long, default_value = "auto")]
    setup: String,
    #[command(flatten)]
    suraa: SuraaArgs,
    #[command(flatten)]
    bccoo: BccooArgs,
    /// Input vector x as a Matrix Market array. Default: a fixed random vector.
    #[arg(long)]
    x: Option<PathBuf>,
    /// Write y as a Matrix Market array (from the first method run).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Compute in f64 (needs an adapter with SHADER_F64).
    #[arg(long)]
    f64: bool,
    /// Products timed per method.
    #[arg(long, default_value_t = 20)]
    repeat: u32,
}

fn main() -> ExitCode {
    env_logger::init();
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("error: at least one method disagreed with the CPU reference");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> wgspmv::Result<bool> {
    let methods = match &args.method {
        Some(name) => vec![Method::from_name(name)?],
        None => Method::ALL.to_vec(),
    };
    let (name, a) = match &args.matrix {
        Some(p) => (p.display().to_string(), io::read_matrix_market::<f64>(p)?),
        None => ("generated power-law matrix (seed 42)".to_owned(), SuiteClass::PowerLaw.generate(2_000_000, 42)),
    };
    a.check_finite()?;
    let x = match &args.x {
        Some(p) => io::read_vector::<f64>(p)?,
        None => wgspmv::suite::random_vector(a.ncols(), 7),
    };
    if x.len() != a.ncols() {
        return Err(wgspmv::Error::DimensionMismatch { what: "x", expected: a.ncols(), actual: x.len() });
    }
    let gpu = Gpu::new()?;
    println!("{}", gpu.info());
    println!("matrix: {name}\n        {}", a.row_stats());
    if args.f64 { run_typed::<f64>(args, &gpu, &a, &x, &methods) } else { run_typed::<f32>(args, &gpu, &a.cast(), &x, &methods) }
}

fn run_typed<T: Scalar>(args: &Args, gpu: &Gpu, a: &CsrMatrix<T>, x: &[f64], methods: &[Method]) -> wgspmv::Result<bool> {
    let x: Vec<T> = x.iter().map(|&v| T::from_f64(v)).collect();
    let y_ref = reference::spmv_par(a, &x)?;
    let gx = GpuVector::from_slice(gpu, &x)?;
    let mut all_ok = true;
    println!("{:<12} {:>10} {:>9} {:>9} {:>10}  check ({}; {})", "method", "ms", "GFLOP/s", "GB/s", "rel_err", T::NAME, "timer");
    let finish = match args.finish.as_str() {
        "auto" => Finish::Auto,
        "host" => Finish::Host,
        "gpu" => Finish::Gpu,
        other => return Err(wgspmv::Error::UnknownName { what: "finish", name: other.into(), expected: "auto, host, gpu".into() }),
    };
    let setup = match args.setup.as_str() {
        "auto" => SetupOn::Auto,
        "host" => SetupOn::Host,
        "gpu" => SetupOn::Gpu,
        other => return Err(wgspmv::Error::UnknownName { what: "setup", name: other.into(), expected: "auto, host, gpu".into() }),
    };
    let opts = PlanOptions {
        bccoo: args.bccoo.options()?,
        speculative: SpeculativeOptions { finish, ..Default::default() },
        suraa: args.suraa.options(setup)?,
        ..Default::default()
    };
    for (i, &m) in methods.iter().enumerate() {
        let plan = gpu.prepare_with(a, m, &opts)?;
        let mut gy = GpuVector::filled(gpu, a.nrows(), T::NAN)?;
        plan.run(&gx, &mut gy)?;
        let y = gy.read()?;
        let c = reference::check(1.0, a, &x, 0.0, None, &y, &y_ref);
        let t = plan.time(&gx, &mut gy, args.repeat)?;
        let gflops = 2.0 * a.nnz() as f64 / (t.ms * 1e6);
        let gbps = plan.minimal_traffic_bytes() as f64 / (t.ms * 1e6);
        println!(
            "{:<12} {:>10.4} {:>9.2} {:>9.1} {:>10.2e}  {} ({:?}; {})",
            m.name(),
            t.ms,
            gflops,
            gbps,
            c.rel_err,
            if c.ok { "ok" } else { "FAILED" },
            t.timer,
            plan.details()
        );
        if let Some(r) = plan.speculation() {
            if let Some(h) = r.last_host_run {
                println!(
                    "             host stage {:.3} ms: {} dirty records, {} synchronized rows, {} B read, {} B written",
                    h.host_stage.as_secs_f64() * 1e3,
                    h.dirty_records,
                    h.synchronized_rows,
                    h.bytes_read,
                    h.bytes_written
                );
            }
        }
        if let Some(r) = plan.suraa() {
            let ms = r.setup_time.as_secs_f64() * 1e3;
            println!("             setup on the {}: {ms:.3} ms = {:.1} SpMV-equivalents", r.setup_on, ms / t.ms);
        }
        if let Some(t) = plan.bccoo().and_then(|r| r.tuning.as_ref()) {
            println!("             tuned in {:.0} ms over {} candidates{}", t.time.as_secs_f64() * 1e3, t.candidates.len(), if t.remembered { " (remembered)" } else { "" });
        }
        if !c.ok {
            if let Some((row, err, bound)) = c.worst_row {
                println!("             worst row {row}: error {err:e} > bound {bound:e}");
            }
        }
        all_ok &= c.ok;
        if i == 0 {
            if let Some(out) = &args.output {
                io::write_vector(out, &y)?;
                println!("wrote y ({} from {}) to {}", y.len(), m.name(), out.display());
            }
        }
    }
    Ok(all_ok)
}

