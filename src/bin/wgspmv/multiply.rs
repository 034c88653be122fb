//! The main job: multiply a sparse matrix by a vector on the GPU with every method (or one), check
//! each result against the f64 CPU reference, and print one line per method: its time, its
//! bandwidth, that bandwidth as a share of a copy's measured in the same run, and the verdict.
//! `--verbose` adds what each method chose and what its setup cost.
//!
//!     wgspmv multiply
//!     wgspmv multiply --matrix A.mtx --method auto --x x.mtx --output y.mtx

use crate::args::{bccoo::BccooArgs, choose_one, suraa::SuraaArgs, ReadArgs, FINISHES, SETUPS};
use std::path::PathBuf;
use std::process::ExitCode;
use wgspmv::matrix::io::{self, ReadLimits};
use wgspmv::methods::bccoo::{BccooReport, Carry, ColumnCoding, Strategy};
use wgspmv::methods::speculative::SpeculativeOptions;
use wgspmv::{
    reference, testing::SuiteClass, CsrMatrix, Gpu, GpuMatrix, GpuVector, Layout, Method,
    PlanOptions, Report, Scalar, SpmvPlan, Timer,
};

/// `wgspmv multiply`: y = A·x on the GPU, checked against an f64 CPU reference.
#[derive(clap::Args)]
#[command(after_help = OUTPUT_HELP)]
pub struct Args {
    /// Matrix Market file (coordinate or array; gzipped or not). Default: a generated power-law
    /// matrix (250 000 rows, about 1.8 million nonzeros).
    #[arg(long)]
    matrix: Option<PathBuf>,
    /// The method to run; default: every method, then auto.
    #[arg(long, value_parser = crate::args::method_names())]
    method: Option<String>,
    /// Input vector x as a Matrix Market array or coordinate vector. Default: a fixed random
    /// vector. A dense matrix of k columns (an array, or coordinate entries) multiplies k vectors
    /// at once: Y = A·X (SpMM).
    #[arg(long)]
    x: Option<PathBuf>,
    /// Write y (Y for k vectors: a rows × k array), the result of the first method run, to this
    /// file as a Matrix Market array. Without it the result is checked but not written.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Compute y = Aᵀ·x instead (x has the matrix's rows, y its columns): products with the
    /// plan of Aᵀ a plan of A makes on the GPU (`PlanOptions::transposed`), for the method run,
    /// checked against the CPU product of Aᵀ.
    #[arg(long)]
    transpose: bool,
    /// Compute in f64 instead of f32 (needs an adapter with SHADER_F64).
    #[arg(long)]
    f64: bool,
    /// Products timed per sample of each method (and copies per sample of the copy kernel).
    #[arg(long, default_value_t = 20)]
    repeat: u32,
    /// Also print the adapter's limits, the matrix's row lengths, each method's parameters, its
    /// setup time and where it went, its relative error and timer, and the candidates auto
    /// weighed with their predicted times.
    #[arg(short, long)]
    verbose: bool,
    #[command(flatten, next_help_heading = "Reading Matrix Market files")]
    read: ReadArgs,
    /// Where `speculative` runs its check stage: auto, host or gpu.
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "gpu"], help_heading = "speculative options")]
    finish: String,
    /// Where `suraa` sets up (sorts rows, plans its groups): auto, host or gpu.
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "gpu"], help_heading = "suraa options")]
    setup: String,
    #[command(flatten, next_help_heading = "suraa options")]
    suraa: SuraaArgs,
    #[command(flatten, next_help_heading = "bccoo and bccoo-plus options")]
    bccoo: BccooArgs,
}

/// What `multiply` prints, after the flags in `--help`.
const OUTPUT_HELP: &str = "\
Output: one line per method with the time of one product in ms, its GB/s (the bytes a product \
must move at least, per second), that as a share of a device-to-device copy's bandwidth measured \
in the same run, and `ok` or `WRONG` with the worst row (checked against an f64 CPU reference). \
--verbose adds each method's parameters and setup. The exit status is 1 when a result is wrong.";

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

/// Indentation of the lines `--verbose` adds under a method's line.
const MORE: &str = "    ";

fn run(args: &Args) -> wgspmv::Result<bool> {
    let methods = match &args.method {
        Some(name) => vec![Method::from_name(name)?],
        None => Method::ALL.iter().copied().chain([Method::Auto]).collect(),
    };
    // The adapter first: the files are read with its limits, so that a size line no GPU could
    // take is refused before anything of that size is allocated.
    let gpu = Gpu::new()?;
    let info = gpu.info();
    if args.verbose {
        println!("{info}");
    } else {
        println!(
            "adapter: {} ({:?}, {:?})",
            info.name, info.backend, info.device_type
        );
    }
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
    // With --transpose the product is Aᵀx: `a` becomes Aᵀ (for the reference and the lengths),
    // and plans are prepared from A, the matrix given.
    let (a, given) = if args.transpose {
        (a.transpose()?, Some(a))
    } else {
        (a, None)
    };
    let given = given.as_ref();
    // NaN and infinities in A are multiplied like any value and compared exactly (`compare`).
    let x = match &args.x {
        Some(p) => {
            // x must have the matrix's ncols elements, which are allocated below anyway: as many
            // are allowed, however few entries a coordinate x lists, and no more.
            let n = a.ncols();
            let x_limits = limits
                .cap_dimension(n, format!("x must have the matrix's {n} columns"))
                .with_free_dimension(n);
            match io::read_vector_with::<f64>(p, &x_limits) {
                Ok(x) => x,
                // Not a vector: a dense matrix of k columns, k products at once.
                Err(e) => match io::read_matrix_market_with::<f64>(p, &x_limits) {
                    Ok(xs) if xs.ncols() > 1 => {
                        return run_many(args, &gpu, &name, (&a, given), &xs, &methods);
                    }
                    _ => return Err(e),
                },
            }
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
    println!(
        "matrix: {name}: {} rows x {} columns, {} nonzeros, computed in {}{}",
        grouped(a.nrows() as u64),
        grouped(a.ncols() as u64),
        grouped(a.nnz() as u64),
        if args.f64 { "f64" } else { "f32" },
        if args.transpose {
            " (the transpose of the matrix given)"
        } else {
            ""
        }
    );
    if args.verbose {
        let s = a.row_stats();
        println!(
            "{MORE}nonzeros per row: {} on average (standard deviation {:.2}), {} to {}; {} empty rows",
            sig(s.mean, 3),
            s.std_dev(),
            grouped(s.min_len as u64),
            grouped(s.max_len as u64),
            grouped(s.empty_rows as u64)
        );
    }
    if args.f64 {
        run_typed::<f64>(args, &gpu, (&a, given), &x, &methods)
    } else {
        let given = given.map(|g| g.cast());
        run_typed::<f32>(args, &gpu, (&a.cast(), given.as_ref()), &x, &methods)
    }
}

/// A plan whose products (or, with `given`, whose transposed products) multiply by `a`: for
/// `method`, prepared from `a`, or from `given` (Aᵀ = `a`) for products with its transpose.
fn holder<T: Scalar>(
    gpu: &Gpu,
    (a, given): (&CsrMatrix<T>, Option<&CsrMatrix<T>>),
    method: Method,
    opts: &PlanOptions,
) -> wgspmv::Result<SpmvPlan<T>> {
    match given {
        // The plan of A only holds the plan of Aᵀ: the cheapest to set up.
        Some(g) => gpu.prepare_with(
            g,
            Method::CsrScalar,
            &PlanOptions {
                transposed: Some(method),
                ..opts.clone()
            },
        ),
        None => gpu.prepare_with(a, method, opts),
    }
}

/// The plan that multiplies by the operator (see [`holder`]).
fn operator<T: Scalar>(holder: &SpmvPlan<T>, transposed: bool) -> wgspmv::Result<&SpmvPlan<T>> {
    if transposed {
        holder.transposed()
    } else {
        Ok(holder)
    }
}

/// The bandwidth of a device-to-device copy, the ceiling the methods' GB/s are compared with:
/// over as many bytes as one product of `a` moves at least, but no fewer than 64 MiB (so that the
/// copy runs from memory, not from a cache) nor more than 1 GiB. `None` when it could not run.
fn copy_ceiling<T: Scalar>(args: &Args, gpu: &Gpu, a: &CsrMatrix<T>) -> Option<f64> {
    let traffic = wgspmv::internals::minimal_traffic_bytes::<T>(a.nrows(), a.ncols(), a.nnz());
    let bytes = traffic
        .clamp(64 << 20, 1 << 30)
        .min(gpu.info().max_binding_bytes());
    match gpu.copy_bandwidth(bytes, args.repeat) {
        Ok(gbps) => {
            println!(
                "copy: {} GB/s, a device-to-device copy timed in this run (the memory ceiling)",
                sig(gbps, 3)
            );
            if args.verbose {
                println!(
                    "{MORE}a copy kernel reading {} MiB and writing them elsewhere, {} copies per sample",
                    bytes >> 20,
                    args.repeat.max(1)
                );
            }
            Some(gbps)
        }
        Err(e) => {
            println!("copy: not measured ({e}); the methods' GB/s are shown alone");
            None
        }
    }
}

fn run_typed<T: Scalar>(
    args: &Args,
    gpu: &Gpu,
    (a, given): (&CsrMatrix<T>, Option<&CsrMatrix<T>>),
    x: &[f64],
    methods: &[Method],
) -> wgspmv::Result<bool> {
    let mut xt = host_vec(x.len(), "x")?;
    xt.extend(x.iter().map(|&v| T::from_f64(v)));
    let x = xt;
    let y_ref = reference::spmv_par(a, &x)?;
    let gx = GpuVector::from_slice(gpu, &x)?;
    let opts = plan_options(args)?;
    let copy = copy_ceiling(args, gpu, a);
    println!(
        "GB/s: the bytes one product must move at least (the matrix, x and y, each once) per second"
    );
    println!();
    println!(
        "{:<12} {:>14} {:>10} {:>10}  result",
        "method", "ms per product", "GB/s", "% of copy"
    );
    let mut all_ok = true;
    let mut measured = Vec::new();
    let mut wrote = None;
    for (i, &m) in methods.iter().enumerate() {
        let held = holder(gpu, (a, given), m, &opts)?;
        let plan = operator(&held, given.is_some())?;
        let mut gy = GpuVector::filled(gpu, a.nrows(), T::NAN)?;
        plan.run(&gx, &mut gy)?;
        let y = gy.read()?;
        let c = compare(a, &x, &y, &y_ref)?;
        let t = plan.time(&gx, &mut gy, args.repeat)?;
        let gbps = plan.minimal_traffic_bytes() as f64 / (t.ms * 1e6);
        let verdict = verdict(&c);
        println!(
            "{:<12} {:>14} {:>10} {:>10}  {verdict}",
            m.name(),
            sig(t.ms, 4),
            sig(gbps, 3),
            copy.map_or("-".to_owned(), |c| format!("{}%", sig(100.0 * gbps / c, 2))),
        );
        if args.verbose {
            print_details(plan, a, &c, t, &measured);
        }
        if m == Method::Auto {
            if let Some(line) = auto_line(plan.report(), args.verbose) {
                println!("{line}");
            }
        } else {
            measured.push(Measured {
                method: m.name(),
                setup_ms: work_ms(plan.report()),
                product_ms: t.ms,
            });
        }
        all_ok &= c.ok;
        if i == 0 {
            if let Some(out) = &args.output {
                io::write_vector(out, &y)?;
                wrote = Some(format!(
                    "wrote y ({} values, from {}) to {}",
                    grouped(y.len() as u64),
                    m.name(),
                    out.display()
                ));
            }
        }
    }
    if let Some(line) = wrote {
        println!("{line}");
    }
    Ok(all_ok)
}

/// The plan options the method flags give.
fn plan_options(args: &Args) -> wgspmv::Result<PlanOptions> {
    let finish = choose_one("finish", &args.finish, FINISHES)?;
    let setup = choose_one("setup", &args.setup, SETUPS)?;
    Ok(PlanOptions {
        bccoo: args.bccoo.options()?,
        speculative: SpeculativeOptions {
            finish,
            ..Default::default()
        },
        suraa: args.suraa.options(setup)?,
        ..Default::default()
    })
}

/// `Y = A·X` for the k columns of `xs` (SpMM), each method's Y checked column by column against
/// the f64 reference, timed by whole calls.
fn run_many(
    args: &Args,
    gpu: &Gpu,
    name: &str,
    (a, given): (&CsrMatrix<f64>, Option<&CsrMatrix<f64>>),
    xs: &CsrMatrix<f64>,
    methods: &[Method],
) -> wgspmv::Result<bool> {
    if xs.nrows() != a.ncols() {
        return Err(wgspmv::Error::DimensionMismatch {
            what: "rows of X (the matrix's columns)",
            expected: a.ncols(),
            actual: xs.nrows(),
        });
    }
    println!(
        "matrix: {name}: {} rows x {} columns, {} nonzeros; X: {} vectors; computed in {}",
        grouped(a.nrows() as u64),
        grouped(a.ncols() as u64),
        grouped(a.nnz() as u64),
        xs.ncols(),
        if args.f64 { "f64" } else { "f32" }
    );
    if args.f64 {
        many_typed::<f64>(args, gpu, (a, given), xs, methods)
    } else {
        let given = given.map(|g| g.cast());
        many_typed::<f32>(args, gpu, (&a.cast(), given.as_ref()), xs, methods)
    }
}

fn many_typed<T: Scalar>(
    args: &Args,
    gpu: &Gpu,
    (a, given): (&CsrMatrix<T>, Option<&CsrMatrix<T>>),
    xs: &CsrMatrix<f64>,
    methods: &[Method],
) -> wgspmv::Result<bool> {
    let (n, m, k) = (a.ncols(), a.nrows(), xs.ncols());
    let mut x = host_vec::<T>(n * k, "X")?;
    x.resize(n * k, T::from_f64(0.0));
    for r in 0..n {
        let (cols, vals) = xs.row(r);
        for (&c, &v) in cols.iter().zip(vals) {
            x[c as usize * n + r] = T::from_f64(v);
        }
    }
    let columns: Vec<&[T]> = x.chunks_exact(n.max(1)).take(k).collect();
    let refs = columns
        .iter()
        .map(|c| reference::spmv_par(a, c))
        .collect::<wgspmv::Result<Vec<_>>>()?;
    let gx = GpuMatrix::from_slice(gpu, n, k, Layout::ColumnMajor, &x)?;
    let opts = PlanOptions {
        spmm_columns: Some(k),
        ..plan_options(args)?
    };
    let copy = copy_ceiling(args, gpu, a);
    let s = std::mem::size_of::<T>() as f64;
    let bytes = a.nnz() as f64 * (4.0 + s) + (m as f64 + 1.0) * 4.0 + k as f64 * (n + m) as f64 * s;
    println!(
        "GB/s: the bytes one product of all {k} vectors must move at least (the matrix once, X and Y) per second"
    );
    println!();
    println!(
        "{:<18} {:>14} {:>10} {:>10}  result",
        "method", "ms per product", "GB/s", "% of copy"
    );
    let mut all_ok = true;
    let mut wrote = None;
    for (i, &method) in methods.iter().enumerate() {
        let held = holder(gpu, (a, given), method, &opts)?;
        let plan = operator(&held, given.is_some())?;
        let mut gy = GpuMatrix::filled(gpu, m, k, Layout::ColumnMajor, T::NAN)?;
        plan.run_spmm(&gx, &mut gy)?;
        let y = gy.read()?;
        let mut verdicts = Vec::new();
        let mut ok = true;
        for (j, (col, y_ref)) in columns.iter().zip(&refs).enumerate() {
            let c = compare(a, col, &y[j * m..(j + 1) * m], y_ref)?;
            if !c.ok && verdicts.is_empty() {
                verdicts.push(format!("column {j}: {}", verdict(&c)));
            }
            ok &= c.ok;
        }
        let reps = args.repeat.max(1);
        let t = std::time::Instant::now();
        for _ in 0..reps {
            plan.run_spmm(&gx, &mut gy)?;
        }
        gpu.wait()?;
        let ms = t.elapsed().as_secs_f64() * 1e3 / reps as f64;
        let gbps = bytes / (ms * 1e6);
        let how = if plan.has_spmm_kernel() {
            "SpMM kernel"
        } else {
            "one product per vector"
        };
        let name = match method {
            Method::Auto => format!("auto: {}", plan.method()),
            _ => method.name().to_owned(),
        };
        println!(
            "{:<18} {:>14} {:>10} {:>10}  {} ({how})",
            name,
            sig(ms, 4),
            sig(gbps, 3),
            copy.map_or("-".to_owned(), |c| format!("{}%", sig(100.0 * gbps / c, 2))),
            if ok {
                "ok".to_owned()
            } else {
                verdicts.join("; ")
            },
        );
        all_ok &= ok;
        if i == 0 {
            if let Some(out) = &args.output {
                io::write_dense(out, m, k, &y)?;
                wrote = Some(format!(
                    "wrote Y ({m} x {k}, from {}) to {}",
                    method.name(),
                    out.display()
                ));
            }
        }
    }
    if let Some(line) = wrote {
        println!("{line}");
    }
    Ok(all_ok)
}

/// A setup's own steps (analysis, format build, upload), without compiling shaders and waiting:
/// what auto's model predicts.
fn work_ms(r: &Report) -> f64 {
    r.split.analysis_ms + r.split.build_ms + r.split.upload_ms
}

/// A method's times in this run, for auto's table of predictions.
struct Measured {
    method: &'static str,
    setup_ms: f64,
    product_ms: f64,
}

/// The last column of a method's line: `ok`, or `WRONG:` and the worst row.
fn verdict(c: &Agreement) -> String {
    match (c.ok, &c.worst) {
        (true, _) => "ok".to_owned(),
        (false, Some(worst)) => format!("WRONG: {worst}"),
        (false, None) => "WRONG".to_owned(),
    }
}

/// What `--verbose` adds under a method's line.
fn print_details<T: Scalar>(
    plan: &SpmvPlan<T>,
    a: &CsrMatrix<T>,
    c: &Agreement,
    t: wgspmv::Timing,
    measured: &[Measured],
) {
    let timer = match t.timer {
        Timer::GpuTimestamps => "GPU timestamps",
        Timer::WallClock => "the host's clock around whole products",
    };
    println!(
        "{MORE}timed by {timer}, {} products per sample; {} GFLOP/s (2 x nonzeros per product); relative error {:.2e}",
        t.repeats,
        sig(2.0 * a.nnz() as f64 / (t.ms * 1e6), 3),
        c.rel_err
    );
    let r = plan.report();
    // The row names the method, so its name is left out of the parameters, except under auto,
    // where it is the method auto chose.
    let parameters = readable_parameters(plan.details());
    let name = format!("{}: ", r.method);
    let mut body = parameters.strip_prefix(&name).unwrap_or(&parameters);
    if let Some(b) = plan.bccoo() {
        // The layout in words instead of the report's short form.
        println!("{MORE}layout: {}", bccoo_layout(b));
        let summary = format!("{}, ", b.summary());
        body = body.strip_prefix(&summary).unwrap_or(body);
    }
    let parameters = match r.choice {
        Some(_) => format!("{name}{body}"),
        None => body.to_owned(),
    };
    println!("{MORE}parameters: {parameters}");
    print!(
        "{MORE}setup {} ms (the time of {} products)",
        sig(r.setup_ms, 3),
        sig(r.setup_products(t.ms), 2)
    );
    let sp = &r.split;
    if sp.analysis_ms + sp.build_ms + sp.upload_ms > 0.0 {
        print!(
            ": analysis {} ms, format build {} ms, upload {} ms",
            sig(sp.analysis_ms, 3),
            sig(sp.build_ms, 3),
            sig(sp.upload_ms, 3)
        );
        if r.tuning_ms > 0.0 {
            print!(", tuning {} ms", sig(r.tuning_ms, 3));
        }
        if r.validation_ms > 0.0 {
            print!(", checking the GPU matrix {} ms", sig(r.validation_ms, 3));
        }
        print!(", the rest compiling shaders and waiting for the GPU");
    }
    println!();
    let mut memory = format!(
        "{MORE}{} of GPU memory; {} per product",
        size(r.device_bytes),
        count(r.dispatches as u64, "dispatch", "dispatches")
    );
    if r.built_on_gpu {
        memory.push_str("; format built on the GPU");
    }
    if r.read_back_bytes > 0 {
        memory.push_str(&format!(
            "; {} bytes read back to build on the host",
            grouped(r.read_back_bytes)
        ));
    }
    println!("{memory}");
    if let Some(h) = plan.speculation().and_then(|s| s.last_host_run) {
        println!(
            "{MORE}host stage of the last product {} ms: {} dirty records, {} rows synchronized, {} bytes read back, {} bytes written",
            sig(h.host_stage.as_secs_f64() * 1e3, 3),
            grouped(h.dirty_records),
            grouped(h.synchronized_rows),
            grouped(h.bytes_read),
            grouped(h.bytes_written)
        );
    }
    if let Some(s) = plan.suraa() {
        let ms = s.setup_time.as_secs_f64() * 1e3;
        println!(
            "{MORE}suraa's setup step on the {}: {} ms (the time of {} products)",
            s.setup_on,
            sig(ms, 3),
            sig(ms / t.ms, 2)
        );
    }
    if let Some(tune) = plan.bccoo().and_then(|b| b.tuning.as_ref()) {
        println!(
            "{MORE}tuned in {} ms over {} candidates{}",
            sig(tune.time.as_secs_f64() * 1e3, 3),
            tune.candidates.len(),
            if tune.remembered {
                " (remembered from an earlier tuning)"
            } else {
                ""
            }
        );
    }
    if let Some(choice) = &r.choice {
        println!(
            "{MORE}the methods auto weighed, best predicted first (the {} profile's predictions for setup plus {} products; measured: this run's, setup without compiling shaders; - where not run):",
            choice.profile, choice.expected_products
        );
        println!(
            "{MORE}  {:<12} {:>16} {:>15} {:>18} {:>17}",
            "method", "predicted setup", "measured setup", "predicted product", "measured product"
        );
        let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{} ms", sig(v, 4)));
        for k in &choice.candidates {
            // This run's times of the method, or auto's own plan for the method it chose.
            let here = measured
                .iter()
                .find(|m| m.method == k.method)
                .map(|m| (m.setup_ms, m.product_ms))
                .or((k.method == r.method).then_some((work_ms(r), t.ms)));
            println!(
                "{MORE}  {:<12} {:>16} {:>15} {:>18} {:>17}",
                k.method,
                ms(Some(k.predicted_setup_ms)),
                ms(here.map(|h| h.0)),
                ms(Some(k.predicted_product_ms)),
                ms(here.map(|h| h.1).or(k.measured_product_ms)),
            );
        }
    }
}

/// The line saying what `auto` chose, and how.
fn auto_line(r: &Report, verbose: bool) -> Option<String> {
    let c = r.choice.as_ref()?;
    let how = if c.remembered {
        "remembered from an earlier timed choice for this matrix and adapter".to_owned()
    } else if c.timed && c.below_data {
        format!(
            "the fastest of its best candidates timed on this adapter (the matrix is smaller than any the {} profile's cost model was fitted on), for setup plus {} products",
            c.profile, c.expected_products
        )
    } else if c.timed {
        format!(
            "the fastest of its best candidates timed on this adapter, for setup plus {} products",
            c.expected_products
        )
    } else {
        format!(
            "the least predicted time for setup plus {} products by the {} profile's cost model{}",
            c.expected_products,
            c.profile,
            if verbose {
                ""
            } else {
                " (--verbose lists its predictions)"
            }
        )
    };
    Some(format!("auto chose {}: {how}", r.method))
}

/// A bccoo plan's layout in words.
fn bccoo_layout(b: &BccooReport) -> String {
    let l = &b.layout;
    let columns = match l.columns {
        ColumnCoding::U32 => "32-bit block columns",
        ColumnCoding::U16 => "16-bit block columns",
        ColumnCoding::Delta16 => "block columns as 16-bit differences",
        ColumnCoding::Auto => "block columns coded automatically",
    };
    let strategy = match b.strategy {
        Strategy::PerThread => "each thread writes its rows to y".to_owned(),
        _ => format!(
            "rows gathered in a workgroup cache ({} per thread) before y",
            b.cache_factor
        ),
    };
    let carry = match b.carry {
        Carry::TwoPass => "sums carried across workgroups by a second pass",
        _ => "sums carried across workgroups in one pass",
    };
    format!(
        "blocks of {}x{} (rows x columns), {} blocks per thread, workgroups of {}, {} vertical slice(s), {columns}, {strategy}, {carry}; {} bytes on the GPU ({} as CSR)",
        l.block_height,
        l.block_width,
        l.tile,
        l.workgroup,
        l.slices,
        grouped(b.footprint.total()),
        grouped(b.footprint.csr)
    )
}

/// `parameters` with the library's byte deltas written out: "(-937500 bytes vs CSR)" becomes
/// "(937 500 bytes less than CSR)".
fn readable_parameters(parameters: &str) -> String {
    const TAIL: &str = " bytes vs CSR)";
    let mut out = String::new();
    let mut rest = parameters;
    while let Some(end) = rest.find(TAIL) {
        let (head, tail) = rest.split_at(end);
        let open = head.rfind('(');
        let n = open.and_then(|o| head[o + 1..].parse::<i64>().ok());
        match (open, n) {
            (Some(o), Some(n)) => {
                out.push_str(&head[..o]);
                out.push_str(&match n {
                    0 => "(as many bytes as CSR)".to_owned(),
                    n if n < 0 => format!("({} bytes less than CSR)", grouped(n.unsigned_abs())),
                    n => format!("({} bytes more than CSR)", grouped(n as u64)),
                });
            }
            _ => {
                out.push_str(head);
                out.push_str(TAIL);
            }
        }
        rest = &tail[TAIL.len()..];
    }
    out.push_str(rest);
    out
}

/// `n` and the noun, singular or plural: "1 dispatch", "2 dispatches".
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", grouped(n), if n == 1 { one } else { many })
}

/// Bytes in the largest binary unit that leaves at least 1: "812 bytes", "2.51 KiB", "15.5 MiB".
fn size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return count(bytes, "byte", "bytes");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{} {}", sig(v, 3), UNITS[unit])
}

/// `n` with its digits in groups of three: 937 500.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(d);
    }
    out
}

/// `v` to `digits` significant digits (at least: whole numbers keep all theirs).
fn sig(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
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
        let y_ref = wgspmv::reference::spmv_par(&a, &x).unwrap();
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
        let y_ref = wgspmv::reference::spmv_par(&a, &x).unwrap();
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

    /// The library's signed byte deltas are written out in words, other text left as it is.
    #[test]
    fn byte_deltas_read_as_words() {
        assert_eq!(
            readable_parameters("cmrs: 0 padding zeros (-937500 bytes vs CSR), 1 chunk(s)"),
            "cmrs: 0 padding zeros (937 500 bytes less than CSR), 1 chunk(s)"
        );
        assert_eq!(
            readable_parameters("a (+1234 bytes vs CSR), b (0 bytes vs CSR)"),
            "a (1 234 bytes more than CSR), b (as many bytes as CSR)"
        );
        let odd = "x (many bytes vs CSR) y";
        assert_eq!(readable_parameters(odd), odd);
        assert_eq!(readable_parameters("no deltas"), "no deltas");
    }

    /// Numbers as the output writes them.
    #[test]
    fn numbers_read_plainly() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1 000");
        assert_eq!(grouped(1805872), "1 805 872");
        assert_eq!(sig(161.6615, 4), "161.7");
        assert_eq!(sig(0.0461349, 4), "0.04613");
        assert_eq!(sig(12345.6, 3), "12346");
        assert_eq!(sig(0.0, 3), "0");
        assert_eq!(size(812), "812 bytes");
        assert_eq!(size(1), "1 byte");
        assert_eq!(size(2570), "2.51 KiB");
        assert_eq!(size(16_252_928), "15.5 MiB");
        assert_eq!(count(1, "dispatch", "dispatches"), "1 dispatch");
        assert_eq!(count(3, "dispatch", "dispatches"), "3 dispatches");
    }

    /// The verdict column: `ok`, or `WRONG:` with the worst row.
    #[test]
    fn verdicts_name_the_worst_row() {
        let (a, x, y_ref) = case();
        assert_eq!(
            verdict(&compare(&a, &x, &rounded(&y_ref), &y_ref).unwrap()),
            "ok"
        );
        let mut y = rounded(&y_ref);
        y[3] = 2.5;
        let v = verdict(&compare(&a, &x, &y, &y_ref).unwrap());
        assert!(v.starts_with("WRONG: worst row 3: error "), "{v}");
    }
}
