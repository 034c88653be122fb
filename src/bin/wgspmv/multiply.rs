//! The main job: multiply a sparse matrix by a vector on the GPU with every method (or one), and
//! check each result against the f64 CPU reference.
//!
//!     wgspmv multiply
//!     wgspmv multiply --matrix A.mtx --method auto --x x.mtx --output y.mtx

use crate::args::{bccoo::BccooArgs, choose_one, suraa::SuraaArgs, ReadArgs, FINISHES, SETUPS};
use std::path::PathBuf;
use std::process::ExitCode;
use wgspmv::matrix::io::{self, ReadLimits};
use wgspmv::methods::speculative::SpeculativeOptions;
use wgspmv::{
    testing::reference, testing::SuiteClass, CsrMatrix, Gpu, GpuVector, Method, PlanOptions, Scalar,
};

/// `wgspmv multiply`: y = A·x on the GPU, checked against an f64 CPU reference.
#[derive(clap::Args)]
pub struct Args {
    /// Matrix Market file (coordinate or array; gzipped or not). Default: a generated power-law
    /// matrix.
    #[arg(long)]
    matrix: Option<PathBuf>,
    /// Method name (csr-scalar, csr-vector, cmrs, cmrs-padded, speculative, suraa, bccoo,
    /// bccoo-plus, auto); default: every method.
    #[arg(long, value_parser = crate::args::method_names())]
    method: Option<String>,
    /// Where `speculative` runs its check stage: auto, host or gpu.
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "gpu"])]
    finish: String,
    /// Where `suraa` sets up (sorts rows, plans its groups): auto, host or gpu.
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "gpu"])]
    setup: String,
    #[command(flatten)]
    suraa: SuraaArgs,
    #[command(flatten)]
    bccoo: BccooArgs,
    /// Input vector x as a Matrix Market array or coordinate vector. Default: a fixed random
    /// vector.
    #[arg(long)]
    x: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
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

/// Runs `wgspmv multiply`; fails when a result disagrees with the CPU reference.
pub fn main(args: Args) -> ExitCode {
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
        None => Method::ALL.iter().copied().chain([Method::Auto]).collect(),
    };
    // The adapter first: the files are read with its limits, so that a size line no GPU could
    // take is refused before anything of that size is allocated.
    let gpu = Gpu::new()?;
    println!("{}", gpu.info());
    let limits = args.read.limits(if args.f64 {
        ReadLimits::for_gpu::<f64>(&gpu)
    } else {
        ReadLimits::for_gpu::<f32>(&gpu)
    });
    let (name, a) = match &args.matrix {
        Some(p) => (
            p.display().to_string(),
            io::read_matrix_market_with::<f64>(p, &limits)?,
        ),
        None => (
            "generated power-law matrix (seed 42)".to_owned(),
            SuiteClass::PowerLaw.generate(2_000_000, 42),
        ),
    };
    // NaN and infinities in A are multiplied like any value and compared exactly (`compare`).
    let x = match &args.x {
        Some(p) => {
            // x must have the matrix's ncols elements, which are allocated below anyway: as many
            // are allowed, however few entries a coordinate x lists, and no more.
            let n = a.ncols();
            let x_limits = limits
                .cap_dimension(n, format!("x must have the matrix's {n} columns"))
                .with_free_dimension(n);
            io::read_vector_with::<f64>(p, &x_limits)?
        }
        None => {
            // random_vector allocates unchecked: first make sure the host can hold x at all.
            drop(host_vec::<f64>(a.ncols(), "x")?);
            wgspmv::testing::suite::random_vector(a.ncols(), 7)
        }
    };
    if x.len() != a.ncols() {
        return Err(wgspmv::Error::DimensionMismatch {
            what: "x",
            expected: a.ncols(),
            actual: x.len(),
        });
    }
    println!("matrix: {name}\n        {}", a.row_stats());
    if args.f64 {
        run_typed::<f64>(args, &gpu, &a, &x, &methods)
    } else {
        run_typed::<f32>(args, &gpu, &a.cast(), &x, &methods)
    }
}

fn run_typed<T: Scalar>(
    args: &Args,
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    x: &[f64],
    methods: &[Method],
) -> wgspmv::Result<bool> {
    let mut xt = host_vec(x.len(), "x")?;
    xt.extend(x.iter().map(|&v| T::from_f64(v)));
    let x = xt;
    let y_ref = reference::spmv_par(a, &x)?;
    let gx = GpuVector::from_slice(gpu, &x)?;
    let mut all_ok = true;
    println!(
        "{:<12} {:>10} {:>9} {:>9} {:>10}  check ({}; timer)",
        "method",
        "ms",
        "GFLOP/s",
        "GB/s",
        "rel_err",
        T::NAME,
    );
    let finish = choose_one("finish", &args.finish, FINISHES)?;
    let setup = choose_one("setup", &args.setup, SETUPS)?;
    let opts = PlanOptions {
        bccoo: args.bccoo.options()?,
        speculative: SpeculativeOptions {
            finish,
            ..Default::default()
        },
        suraa: args.suraa.options(setup)?,
        ..Default::default()
    };
    for (i, &m) in methods.iter().enumerate() {
        let plan = gpu.prepare_with(a, m, &opts)?;
        let mut gy = GpuVector::filled(gpu, a.nrows(), T::NAN)?;
        plan.run(&gx, &mut gy)?;
        let y = gy.read()?;
        let c = compare(a, &x, &y, &y_ref)?;
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
        println!(
            "             setup {:.2} ms = {:.1} products",
            plan.report().setup_ms,
            plan.report().setup_products(t.ms)
        );
        if plan.report().choice.is_some() {
            // The report lists the candidates Auto weighed.
            let text = plan.report().to_string();
            println!("             {}", text.replace('\n', "\n             "));
        }
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
            println!(
                "             setup on the {}: {ms:.3} ms = {:.1} SpMV-equivalents",
                r.setup_on,
                ms / t.ms
            );
        }
        if let Some(t) = plan.bccoo().and_then(|r| r.tuning.as_ref()) {
            println!(
                "             tuned in {:.0} ms over {} candidates{}",
                t.time.as_secs_f64() * 1e3,
                t.candidates.len(),
                if t.remembered { " (remembered)" } else { "" }
            );
        }
        if let (false, Some(worst)) = (c.ok, &c.worst) {
            println!("             {worst}");
        }
        all_ok &= c.ok;
        if i == 0 {
            if let Some(out) = &args.output {
                io::write_vector(out, &y)?;
                println!(
                    "wrote y ({} from {}) to {}",
                    y.len(),
                    m.name(),
                    out.display()
                );
            }
        }
    }
    Ok(all_ok)
}

/// An empty vector with room for `n` elements. x's length is the matrix's column count, which a
/// few bytes of input can set to billions: running out of memory is an error, not an abort.
fn host_vec<E>(n: usize, what: &'static str) -> wgspmv::Result<Vec<E>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| wgspmv::Error::OutOfHostMemory {
            what,
            bytes: (n as u64).saturating_mul(std::mem::size_of::<E>() as u64),
        })?;
    Ok(v)
}

/// How `y` compares with the f64 reference.
struct Agreement {
    ok: bool,
    rel_err: f64,
    /// The worst row, described, when there is one.
    worst: Option<String>,
}

/// Compares `y` with the f64 reference row by row. Where the reference rounded to `T` is NaN, `y`
/// must be NaN; where it is infinite, `y` must be the same infinity; elsewhere `y` must be finite
/// and within `reference::check`'s per-row bound (which alone calls every NaN a disagreement, so
/// x or a cast matrix holding NaN or infinity failed every method even when the GPU matched).
fn compare<T: Scalar>(
    a: &CsrMatrix<T>,
    x: &[T],
    y: &[T],
    y_ref: &[f64],
) -> wgspmv::Result<Agreement> {
    let expected = |r: usize| T::from_f64(y_ref[r]).to_f64();
    let agrees_exactly = |r: usize| {
        let (e, g) = (expected(r), y[r].to_f64());
        if e.is_nan() {
            g.is_nan()
        } else {
            g == e
        }
    };
    let special: Vec<usize> = (0..a.nrows())
        .filter(|&r| !expected(r).is_finite())
        .collect();
    let bad = special.iter().copied().find(|&r| !agrees_exactly(r));
    let bad = bad.or_else(|| {
        (0..a.nrows()).find(|&r| expected(r).is_finite() && !y[r].to_f64().is_finite())
    });
    if let Some(r) = bad {
        let worst = format!("row {r}: {} where the reference is {}", y[r], y_ref[r]);
        return Ok(Agreement {
            ok: false,
            rel_err: f64::INFINITY,
            worst: Some(worst),
        });
    }
    let describe = |rows: &dyn Fn(usize) -> usize, c: reference::Check| Agreement {
        ok: c.ok,
        rel_err: c.rel_err,
        worst: c.worst_row.map(|(r, err, bound)| {
            format!("worst row {}: error {err:e} > bound {bound:e}", rows(r))
        }),
    };
    if special.is_empty() {
        return Ok(describe(
            &|r| r,
            reference::check(1.0, a, x, 0.0, None, y, y_ref),
        ));
    }
    // The rows that agreed exactly are left out: check the others as a matrix of their own.
    let finite: Vec<usize> = (0..a.nrows())
        .filter(|&r| expected(r).is_finite())
        .collect();
    let (mut row_ptr, mut col_idx, mut values) = (vec![0u32], Vec::new(), Vec::new());
    for &r in &finite {
        let (cols, vals) = a.row(r);
        col_idx.extend_from_slice(cols);
        values.extend_from_slice(vals);
        row_ptr.push(col_idx.len() as u32);
    }
    let sub = CsrMatrix::try_new(finite.len(), a.ncols(), row_ptr, col_idx, values)?;
    let sub_y: Vec<T> = finite.iter().map(|&r| y[r]).collect();
    let sub_ref: Vec<f64> = finite.iter().map(|&r| y_ref[r]).collect();
    Ok(describe(
        &|r| finite[r],
        reference::check(1.0, &sub, x, 0.0, None, &sub_y, &sub_ref),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 5x3 matrix whose rows meet x's NaN (row 0), +Inf (row 1), -Inf (row 2) or neither (3, 4).
    fn case() -> (CsrMatrix<f32>, Vec<f32>, Vec<f64>) {
        let t = vec![
            (0, 0, 1.0),
            (0, 2, 1.0),
            (1, 1, 2.0),
            (2, 1, -1.0),
            (2, 2, 3.0),
            (3, 2, 0.5),
            (4, 0, 0.0),
        ];
        let a = CsrMatrix::from_triplets(5, 3, t).unwrap();
        let x = vec![f32::NAN, f32::INFINITY, 4.0];
        // Row 4 stores a zero times NaN.
        let y_ref = wgspmv::testing::reference::spmv_par(&a, &x).unwrap();
        (a, x, y_ref)
    }

    fn rounded(y_ref: &[f64]) -> Vec<f32> {
        y_ref.iter().map(|&v| v as f32).collect()
    }

    /// Regression: a y with NaN and infinities exactly where the reference has them agrees.
    #[test]
    fn nan_and_inf_where_the_reference_has_them_agree() {
        let (a, x, y_ref) = case();
        assert!(
            y_ref[0].is_nan()
                && y_ref[1] == f64::INFINITY
                && y_ref[2] == f64::NEG_INFINITY
                && y_ref[4].is_nan()
        );
        let c = compare(&a, &x, &rounded(&y_ref), &y_ref).unwrap();
        assert!(c.ok && c.rel_err == 0.0, "{:?}", c.worst);
        let mut y = rounded(&y_ref);
        y[3] = f32::from_bits(y[3].to_bits() + 1);
        assert!(compare(&a, &x, &y, &y_ref).unwrap().ok);
    }

    /// NaN positions and infinities must match exactly; finite rows stay within the bound.
    #[test]
    fn mismatches_disagree() {
        let (a, x, y_ref) = case();
        let disagrees = |r: usize, v: f32| {
            let mut y = rounded(&y_ref);
            y[r] = v;
            let c = compare(&a, &x, &y, &y_ref).unwrap();
            assert!(!c.ok, "row {r} = {v} passed");
            c.worst.unwrap()
        };
        assert!(disagrees(3, f32::NAN).starts_with("row 3:"));
        assert!(disagrees(3, f32::INFINITY).starts_with("row 3:"));
        assert!(disagrees(0, 1.0).starts_with("row 0:"));
        assert!(disagrees(1, f32::NEG_INFINITY).starts_with("row 1:"));
        assert!(disagrees(2, f32::NAN).starts_with("row 2:"));
        assert!(disagrees(1, f32::MAX).starts_with("row 1:"));
        // A finite row off by far more than rounding is named by its row in the whole matrix.
        assert!(disagrees(3, 2.5).starts_with("worst row 3:"));
    }

    /// Without special values the verdict is reference::check's.
    #[test]
    fn finite_results_match_reference_check() {
        let a = CsrMatrix::<f32>::from_triplets(2, 2, vec![(0, 0, 1.5), (1, 1, -2.0), (1, 0, 1.0)])
            .unwrap();
        let x = vec![2.0f32, 3.0];
        let y_ref = wgspmv::testing::reference::spmv_par(&a, &x).unwrap();
        let mut y = rounded(&y_ref);
        assert!(compare(&a, &x, &y, &y_ref).unwrap().ok);
        y[1] += 1e-3;
        let c = compare(&a, &x, &y, &y_ref).unwrap();
        assert!(!c.ok && c.worst.unwrap().starts_with("worst row 1:"));
    }

    /// A length the host cannot hold is an error.
    #[test]
    fn host_vec_refuses_impossible_sizes() {
        assert!(matches!(
            host_vec::<f64>(usize::MAX / 4, "x"),
            Err(wgspmv::Error::OutOfHostMemory { what: "x", .. })
        ));
        assert!(host_vec::<f32>(10, "x").unwrap().capacity() >= 10);
    }
}
