//! Suite runner: every method on the synthetic suite and/or a folder of Matrix Market files, with
//! a device copy's bandwidth measured in the same run as the ceiling. Prints a table and writes
//! CSV rows `matrix,method,rows,cols,nnz,ms,gflops,gbps,frac_of_copy,rel_err`, the columns of
//! ../shared/device/cusparse_compare.py, so the two can be compared row by row.
//!
//!     wgspmv bench --suite --scale 1 --csv ours.csv     # also writes ours.svg

use crate::args::{
    bccoo::BccooArgs, choose, choose_one, suraa::SuraaArgs, ReadArgs, BUILD_ON, FINISHES, LANES,
    SETUPS,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use wgspmv::matrix::io::{self, ReadLimits};
use wgspmv::methods::speculative::SpeculativeOptions;
use wgspmv::{
    reference, testing::SuiteClass, CsrMatrix, Gpu, GpuMatrix, GpuVector, Layout, Method,
    PlanOptions, Scalar,
};

/// Produces one benchmark matrix when asked (so a large suite never sits in memory whole); files
/// are read within the limits given (those of the adapter).
type MatrixSource = Box<dyn Fn(&ReadLimits) -> wgspmv::Result<CsrMatrix<f64>>>;

/// One benchmarked configuration: a method and its options, under a label.
struct Variant {
    label: String,
    method: Method,
    opts: PlanOptions,
}

/// `wgspmv bench`: every method against the device copy bandwidth.
#[derive(clap::Args)]
pub struct Args {
    /// Run the synthetic suite.
    #[arg(long)]
    suite: bool,
    /// Suite size: about SCALE million stored entries per matrix.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Only these suite classes (comma-separated names).
    #[arg(long, value_delimiter = ',', value_parser = crate::args::suite_class_names())]
    classes: Vec<String>,
    /// Also run every .mtx / .mtx.gz file in this folder.
    #[arg(long)]
    dir: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    /// Methods to run (comma-separated); default: all.
    #[arg(long, value_delimiter = ',', value_parser = crate::args::method_names())]
    methods: Vec<String>,
    /// Write the CSV here (default: stdout only).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the suite's matrices here as Matrix Market files (for cuSPARSE on the same inputs).
    #[arg(long)]
    export_mtx: Option<PathBuf>,
    /// Compute in f64.
    #[arg(long)]
    f64: bool,
    /// Products `auto` rows choose for (`PlanOptions::expected_products`), comma-separated: one
    /// `auto@N` row each (one value: a plain `auto` row).
    #[arg(long, value_delimiter = ',', default_values_t = [1000u64])]
    auto_products: Vec<u64>,
    /// Also an `auto-timed@N` row per `--auto-products` value: Auto builds and times its best
    /// candidates (bccoo tuned), spending about this many products on the timing.
    #[arg(long)]
    auto_timed: Option<f64>,
    /// Also an `auto-model@N` row per `--auto-products` value: the cost model's choice alone
    /// (`AutoOptions::model_only`: not timed even below the profile's data).
    #[arg(long)]
    auto_model: bool,
    /// The operation timed: `spmv` (y = Ax), `spmv-t` (y = Aᵀx, by the plan of Aᵀ for each
    /// method, `PlanOptions::transposed`; its setup columns are that plan's) or `spmm:K`
    /// (Y = AX for K vectors in a row-major `GpuMatrix`, timed by whole calls; GB/s count the
    /// matrix once and X and Y K times).
    #[arg(long, default_value = "spmv")]
    op: String,
    /// Products per timing.
    #[arg(long, default_value_t = 50)]
    repeat: u32,
    /// Times each matrix's methods this many times over (y = Ax), in turn, the order rotated
    /// each round, and keeps each method's fastest: methods measured side by side rather than
    /// one after another, since a CPU adapter can run whichever comes first slower. Every
    /// method's plan of a matrix stays alive until its last round.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Where `speculative` runs its check stage: auto, host, gpu, or both (two rows,
    /// `speculative-host` and `speculative-gpu`).
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "gpu", "both"])]
    finish: String,
    /// `speculative`'s nonzeros per lane and tile (W); default: the library's choice.
    #[arg(long)]
    spec_work: Option<u32>,
    /// `speculative`'s tiles per team (S); default: the library's choice.
    #[arg(long)]
    spec_tiles: Option<u32>,
    /// `speculative`: stage products in workgroup memory (true) or load them per lane (false).
    #[arg(long)]
    spec_staged: Option<bool>,
    /// `speculative`: resolve dirty tiles in the GPU stage (true) or speculate and leave them
    /// to the check stage (false); default: resolved when finishing on the GPU with at least a
    /// quarter of the tiles dirty.
    #[arg(long)]
    spec_resolve: Option<bool>,
    /// `speculative`: read tile boundaries from rows the plan computes once (true) or binary
    /// search the row pointers in every team as the paper does (false); default true.
    #[arg(long)]
    spec_tile_rows: Option<bool>,
    /// Where `suraa` sets up: auto, host, gpu, or both (rows `suraa-host` and `suraa-gpu`).
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "gpu", "both"])]
    setup: String,
    #[command(flatten)]
    suraa: SuraaArgs,
    #[command(flatten)]
    bccoo: BccooArgs,
    /// Invocations per workgroup for every method; default: each method's choice.
    #[arg(long)]
    workgroup_size: Option<u32>,
    /// How lanes cooperate: auto (subgroup operations where the adapter has them), subgroup, or
    /// workgroup (workgroup memory and barriers).
    #[arg(long, default_value = "auto", value_parser = ["auto", "subgroup", "workgroup"])]
    lanes: String,
    /// Bytes copied for the bandwidth ceiling, in MiB (capped by the binding limit).
    #[arg(long, default_value_t = 1024)]
    copy_mib: u64,
    /// Prepare every plan from the CSR arrays already in GPU buffers (`Gpu::prepare_gpu_csr`),
    /// as an app that builds its matrix on the GPU does; the setup columns then time that, after
    /// a first untimed setup that compiles the pipelines (once per device).
    #[arg(long)]
    from_gpu_csr: bool,
    /// With `--from-gpu-csr`: let the CSR kernels read the app's buffers in place
    /// (`CallerBuffers::Share`) instead of copying them.
    #[arg(long)]
    share_caller_buffers: bool,
    /// Where formats are built from the host CSR (`PlanOptions::build_on`): auto (on the GPU
    /// except on software adapters), host, or gpu.
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "gpu"])]
    build_on: String,
    /// Time a second setup from the host CSR, after a first untimed one that compiles the
    /// pipelines (as `--from-gpu-csr` does); without it the setup columns include compiling.
    #[arg(long)]
    warm_setup: bool,
    /// With `--from-gpu-csr` or `--warm-setup`: the untimed first plan is dropped before the
    /// timed one is built (`reused`: the timed plan takes the buffers it left in the device's
    /// pool, as a plan rebuilt for a new pattern does) or kept alive until after it (`fresh`:
    /// every buffer of the timed plan is memory the process did not hold, as the first plan of
    /// a process). Either way the pool is emptied before the first plan, so that what earlier
    /// matrices left neither serves nor is evicted during the timed setup.
    #[arg(long, default_value = "fresh", value_parser = ["fresh", "reused"])]
    setup_memory: String,
}

/// Empties the device's buffer pool and waits for the memory to go back to the driver.
fn empty_pool(gpu: &Gpu) -> wgspmv::Result<()> {
    gpu.release_buffer_pool();
    gpu.wait()
}

/// Waits for `first`'s setup; returns it to be kept alive while the timed setup runs, or drops
/// it and waits for the device to release its memory.
fn release_first<P>(gpu: &Gpu, first: P, keep: bool) -> wgspmv::Result<Option<P>> {
    gpu.wait()?;
    if keep {
        return Ok(Some(first));
    }
    drop(first);
    gpu.wait()?;
    Ok(None)
}

struct Row {
    matrix: String,
    method: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    ms: f64,
    gflops: f64,
    gbps: f64,
    frac: f64,
    rel_err: f64,
    /// Time from `prepare` to a ready plan, and that in products of this plan.
    setup_ms: f64,
    /// `update_values` from a GPU buffer, submitted and finished (empty where the method
    /// refuses it).
    update_ms: Option<f64>,
    /// The first such update (a format that gathers makes its map then).
    first_update_ms: Option<f64>,
    /// Such updates submitted back to back and waited for once, per update: what one costs in
    /// a loop that updates and multiplies without waiting in between.
    update_stream_ms: Option<f64>,
    /// The concrete method (differs from `method` for `auto` rows).
    chosen: String,
    /// Of `setup_ms`, the GPU validation of a matrix given in GPU buffers.
    validation_ms: f64,
    /// Bytes of such a matrix read back to build on the host.
    read_back_bytes: u64,
    /// Of `setup_ms`: analysis, format build, upload (`Report::split`).
    split: wgspmv::SetupSplit,
    note: String,
}

impl Row {
    /// The CSV line of this row (the header's columns, in order).
    fn csv(&self) -> String {
        format!(
            "{},{},{},{},{},{:.4},{:.2},{:.1},{:.3},{:.2e},{:.2},{:.1},{},{},{},{:.4},{:.3},{:.3},{:.3},{:.3},{},{},{}",
            self.matrix,
            self.method,
            self.rows,
            self.cols,
            self.nnz,
            self.ms,
            self.gflops,
            self.gbps,
            self.frac,
            self.rel_err,
            self.setup_ms,
            self.setup_ms / self.ms,
            self.chosen,
            self.update_ms.map_or(String::new(), |u| format!("{u:.4}")),
            self.update_ms
                .map_or(String::new(), |u| format!("{:.2}", u / self.ms)),
            self.validation_ms,
            self.read_back_bytes as f64 / 1e6,
            self.split.analysis_ms,
            self.split.build_ms,
            self.split.upload_ms,
            self.first_update_ms
                .map_or(String::new(), |u| format!("{u:.4}")),
            self.update_stream_ms
                .map_or(String::new(), |u| format!("{u:.4}")),
            self.update_stream_ms
                .map_or(String::new(), |u| format!("{:.2}", u / self.ms)),
        )
    }
}

/// The CSR arrays in storage buffers of their own (as an app's), uploaded and waited for.
fn caller_buffers<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>) -> wgspmv::Result<[wgpu::Buffer; 3]> {
    use wgpu::util::DeviceExt;
    let make = |label: &str, contents: &[u8]| {
        gpu.device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            })
    };
    let b = [
        make("app row_ptr", bytemuck::cast_slice(a.row_ptr())),
        make("app col_idx", bytemuck::cast_slice(a.col_idx())),
        make("app values", bytemuck::cast_slice(a.values())),
    ];
    // The uploads ride on the next submission: make it now.
    gpu.queue().submit([]);
    gpu.wait()?;
    Ok(b)
}

/// Updates submitted back to back for the streamed figure (one wait at the end).
const STREAMED_UPDATES: u32 = 20;

/// The first of 6 in-place value updates from a GPU buffer (submitted and waited for), the
/// median of the other 5, and the time per update of [`STREAMED_UPDATES`] submitted back to back
/// and waited for once, ms; `None` where the plan's method refuses them.
fn update_time<T: Scalar>(
    gpu: &Gpu,
    plan: &wgspmv::SpmvPlan<T>,
    a: &CsrMatrix<T>,
) -> wgspmv::Result<Option<(f64, f64, f64)>> {
    let values = GpuVector::from_slice(gpu, a.values())?;
    let mut ms = Vec::new();
    for _ in 0..6 {
        let t = std::time::Instant::now();
        match plan.update_values_from_buffer(values.buffer(), 0) {
            Err(wgspmv::Error::Unsupported { .. }) => return Ok(None),
            r => r?,
        }
        gpu.wait()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let first = ms.remove(0);
    ms.sort_by(f64::total_cmp);
    let t = std::time::Instant::now();
    for _ in 0..STREAMED_UPDATES {
        plan.update_values_from_buffer(values.buffer(), 0)?;
    }
    gpu.wait()?;
    let streamed = t.elapsed().as_secs_f64() * 1e3 / STREAMED_UPDATES as f64;
    Ok(Some((first, ms[2], streamed)))
}

/// When the run began (progress lines on stderr carry the elapsed time).
static START: std::sync::LazyLock<std::time::Instant> =
    std::sync::LazyLock::new(std::time::Instant::now);

/// Runs `wgspmv bench`.
pub fn main(args: Args) -> wgspmv::Result<()> {
    std::sync::LazyLock::force(&START);
    run(&args)
}

/// The configurations to run: each method, and where an option changes the path it takes
/// (finishing, setup, lanes), each value of it.
fn variants(args: &Args) -> wgspmv::Result<Vec<Variant>> {
    let methods: Vec<Method> = if args.methods.is_empty() {
        Method::ALL.iter().copied().chain([Method::Auto]).collect()
    } else {
        args.methods
            .iter()
            .map(|m| Method::from_name(m))
            .collect::<wgspmv::Result<_>>()?
    };
    let finishes = choose("finish", &args.finish, FINISHES)?;
    let setups = choose("setup", &args.setup, SETUPS)?;
    let lanes = choose_one("lanes", &args.lanes, LANES)?;
    let build_on = choose_one("build-on", &args.build_on, BUILD_ON)?;
    let mut variants = Vec::new();
    for &m in &methods {
        let base = PlanOptions {
            workgroup_size: args.workgroup_size,
            lanes,
            build_on,
            caller_buffers: if args.share_caller_buffers {
                wgspmv::CallerBuffers::Share
            } else {
                wgspmv::CallerBuffers::Copy
            },
            ..Default::default()
        };
        match m {
            Method::Speculative => {
                for &(suffix, finish) in &finishes {
                    let speculative = SpeculativeOptions {
                        finish,
                        work_per_lane: args.spec_work,
                        tiles_per_team: args.spec_tiles,
                        staged_products: args.spec_staged,
                        resolve_dirty_tiles: args.spec_resolve,
                        precomputed_tile_rows: args.spec_tile_rows,
                        ..Default::default()
                    };
                    variants.push(Variant {
                        label: format!("{m}{suffix}"),
                        method: m,
                        opts: PlanOptions {
                            speculative,
                            ..base.clone()
                        },
                    });
                }
            }
            Method::Suraa => {
                for &(suffix, setup) in &setups {
                    let suraa = args.suraa.options(setup)?;
                    variants.push(Variant {
                        label: format!("{m}{suffix}"),
                        method: m,
                        opts: PlanOptions {
                            suraa,
                            ..base.clone()
                        },
                    });
                }
            }
            Method::Bccoo | Method::BccooPlus => {
                for (suffix, bccoo) in args.bccoo.variants()? {
                    variants.push(Variant {
                        label: format!("{m}{suffix}"),
                        method: m,
                        opts: PlanOptions {
                            bccoo,
                            ..base.clone()
                        },
                    });
                }
            }
            Method::Auto => {
                for &e in &args.auto_products {
                    variants.push(Variant {
                        label: if args.auto_products.len() == 1 {
                            "auto".to_owned()
                        } else {
                            format!("auto@{e}")
                        },
                        method: m,
                        opts: PlanOptions {
                            expected_products: Some(e),
                            ..base.clone()
                        },
                    });
                    if args.auto_model {
                        let mut opts = PlanOptions {
                            expected_products: Some(e),
                            ..base.clone()
                        };
                        opts.auto.model_only = true;
                        variants.push(Variant {
                            label: format!("auto-model@{e}"),
                            method: m,
                            opts,
                        });
                    }
                    if let Some(budget) = args.auto_timed {
                        let mut opts = PlanOptions {
                            expected_products: Some(e),
                            ..base.clone()
                        };
                        opts.auto.timed_budget_products = Some(budget);
                        variants.push(Variant {
                            label: format!("auto-timed@{e}"),
                            method: m,
                            opts,
                        });
                    }
                }
            }
            _ => variants.push(Variant {
                label: m.to_string(),
                method: m,
                opts: base,
            }),
        }
    }
    Ok(variants)
}

/// The matrices to run, produced lazily.
fn sources(args: &Args) -> wgspmv::Result<Vec<(String, MatrixSource)>> {
    let classes: Vec<SuiteClass> = if args.classes.is_empty() {
        SuiteClass::ALL.to_vec()
    } else {
        args.classes
            .iter()
            .map(|c| SuiteClass::from_name(c))
            .collect::<wgspmv::Result<_>>()?
    };

    // Matrices are produced lazily, one at a time, so a large suite never sits in memory whole.
    let mut sources: Vec<(String, MatrixSource)> = Vec::new();
    if args.suite {
        let nnz = (args.scale * 1e6) as usize;
        for &c in &classes {
            sources.push((
                c.name().to_owned(),
                Box::new(move |_: &ReadLimits| Ok(c.generate(nnz, 42))),
            ));
        }
    }
    if let Some(dir) = &args.dir {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|source| wgspmv::Error::Io {
                path: dir.clone(),
                source,
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.to_string_lossy().ends_with(".mtx") || p.to_string_lossy().ends_with(".mtx.gz")
            })
            .collect();
        files.sort();
        for f in files {
            let name = f
                .file_name()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches(".gz")
                .trim_end_matches(".mtx")
                .to_owned();
            sources.push((
                name,
                Box::new(move |limits: &ReadLimits| io::read_matrix_market_with(&f, limits)),
            ));
        }
    }
    Ok(sources)
}

fn run(args: &Args) -> wgspmv::Result<()> {
    if !args.suite && args.dir.is_none() {
        eprintln!("nothing to run: pass --suite and/or --dir DIR");
        std::process::exit(2);
    }
    let variants = variants(args)?;
    let sources = sources(args)?;
    let op = parse_op(&args.op)?;
    if op != Op::Spmv && args.from_gpu_csr {
        eprintln!("--from-gpu-csr times y = Ax only (--op spmv)");
        std::process::exit(2);
    }

    let gpu = Gpu::new()?;
    println!("{}", gpu.info());
    // Files are read as f64 and cast: their rows and columns are bounded by the vectors (x, y)
    // of the type computed in, which the adapter must bind.
    let limits = args.read.limits(if args.f64 {
        ReadLimits::for_gpu::<f64>(&gpu)
    } else {
        ReadLimits::for_gpu::<f32>(&gpu)
    });
    let copy = gpu.copy_bandwidth(args.copy_mib << 20, 20)?;
    let mut header = String::new();
    writeln!(header, "# device: {}", gpu.info().name).unwrap();
    writeln!(header, "# copy_gbps: {copy:.0}").unwrap();
    writeln!(
        header,
        "matrix,method,rows,cols,nnz,ms,gflops,gbps,frac_of_copy,rel_err,setup_ms,setup_products,chosen,update_ms,update_products,validation_ms,read_back_mb,analysis_ms,build_ms,upload_ms,first_update_ms,update_stream_ms,update_stream_products"
    )
    .unwrap();
    print!("{header}");

    let bar = ProgressBar::new((sources.len() * variants.len()) as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} [{elapsed}]").unwrap());
    let mut rows = Vec::new();
    let mut reports = Vec::new();
    let mut spec_reports = Vec::new();
    let mut suraa_reports = Vec::new();
    let mut bccoo_reports = Vec::new();
    for (name, make) in &sources {
        bar.set_message(name.clone());
        let a = match make(&limits) {
            Ok(a) => a,
            Err(e) => {
                bar.suspend(|| eprintln!("skipping {name}: {e}"));
                bar.inc(variants.len() as u64);
                continue;
            }
        };
        if let Some(dir) = &args.export_mtx {
            std::fs::create_dir_all(dir).map_err(|source| wgspmv::Error::Io {
                path: dir.clone(),
                source,
            })?;
            bar.set_message(format!("{name}: writing .mtx"));
            io::write_matrix_market(dir.join(format!("{name}.mtx")), &a)?;
        }
        let (out, report) = if args.f64 {
            let (out, extra) = bench_matrix::<f64>(&gpu, name, &a, &variants, args, copy, &bar);
            spec_reports.extend(extra.speculative);
            suraa_reports.extend(extra.suraa);
            bccoo_reports.extend(extra.bccoo);
            let report = cmrs_report::<f64>(&gpu, name, &a, &out);
            (out, report)
        } else {
            let a32 = a.cast::<f32>();
            let (out, extra) = bench_matrix::<f32>(&gpu, name, &a32, &variants, args, copy, &bar);
            spec_reports.extend(extra.speculative);
            suraa_reports.extend(extra.suraa);
            bccoo_reports.extend(extra.bccoo);
            let report = cmrs_report::<f32>(&gpu, name, &a32, &out);
            (out, report)
        };
        reports.extend(report);
        for r in out {
            // Bar hidden while printing, so the line lands above it rather than through it
            // (and is printed even where the bar is not drawn).
            let line = format!(
                "{}{}",
                r.csv(),
                if r.note.is_empty() {
                    String::new()
                } else {
                    format!("  # {}", r.note)
                }
            );
            bar.suspend(|| println!("{line}"));
            rows.push(r);
        }
    }
    bar.finish_and_clear();
    // The copy again at the end: a clock that drifted during the run shows here.
    let copy_end = gpu.copy_bandwidth(args.copy_mib << 20, 20)?;
    println!("# copy_gbps_end: {copy_end:.0}");
    print_table(&rows, copy);
    if !reports.is_empty() {
        println!("\nCMRS: predicted (eq. 5.2, λ = {} B) vs measured speedup over csr-vector; CSR->CMRS->CSR conversion in SpMV-equivalents; cmrs-padded's explicit zeros", wgspmv::internals::cmrs::SEGMENT_BYTES);
        println!("{CMRS_HEADER}");
        for r in &reports {
            println!("{r}");
        }
    }
    if !spec_reports.is_empty() {
        println!("\nspeculative: tiles, speculation hit rate (clean tiles / tiles), check stage and its cost per product");
        println!("{SPEC_HEADER}");
        for r in &spec_reports {
            println!("{r}");
        }
    }
    if !suraa_reports.is_empty() {
        println!(
            "\nsuraa: setup cost (in SpMV-equivalents of its own product), segments and groups"
        );
        println!("{SURAA_HEADER}");
        for r in &suraa_reports {
            println!("{r}");
        }
    }
    if !bccoo_reports.is_empty() {
        println!("\nbccoo: layout chosen, memory footprint (MB) against CSR and COO (the paper's Table 3), tuning time");
        println!("{BCCOO_HEADER}");
        for r in &bccoo_reports {
            println!("{r}");
        }
    }
    if let Some(path) = &args.csv {
        let mut f = std::fs::File::create(path).map_err(|source| wgspmv::Error::Io {
            path: path.clone(),
            source,
        })?;
        let mut text = header.clone();
        for r in rows.iter().filter(|r| r.note.is_empty()) {
            writeln!(text, "{}", r.csv()).unwrap();
        }
        writeln!(text, "# copy_gbps_end: {copy_end:.0}").unwrap();
        f.write_all(text.as_bytes())
            .map_err(|source| wgspmv::Error::Io {
                path: path.clone(),
                source,
            })?;
        let points: Vec<crate::plot::Point> = rows
            .iter()
            .filter(|r| r.note.is_empty())
            .map(|r| crate::plot::Point {
                matrix: &r.matrix,
                method: &r.method,
                gbps: r.gbps,
            })
            .collect();
        let title = format!(
            "{} ({})",
            gpu.info().name,
            if args.f64 { "f64" } else { "f32" }
        );
        crate::plot::throughput(&path.with_extension("svg"), &title, &points, copy)?;
        // One CSV layout per file: each method's own report beside the main table.
        for (ext, header, lines) in [
            ("cmrs.csv", CMRS_HEADER, &reports),
            ("suraa.csv", SURAA_HEADER, &suraa_reports),
            ("bccoo.csv", BCCOO_HEADER, &bccoo_reports),
            ("speculative.csv", SPEC_HEADER, &spec_reports),
        ] {
            if lines.is_empty() {
                continue;
            }
            let extra = path.with_extension(ext);
            let body = format!("{header}\n{}\n", lines.join("\n"));
            std::fs::write(&extra, body).map_err(|source| wgspmv::Error::Io {
                path: extra.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

const SURAA_HEADER: &str = "matrix,variant,setup_on,setup_ms,setup_spmv_eq,setup_alloc_ms,setup_after_alloc_spmv_eq,segment_rows,segments,g1_rows,g1_workgroups,g2_rows,g3_rows";

/// Per-method reports beside the main table.
#[derive(Default)]
struct Extra {
    speculative: Vec<String>,
    suraa: Vec<String>,
    bccoo: Vec<String>,
}

const BCCOO_HEADER: &str = "matrix,variant,layout,flags_mb,columns_mb,values_mb,aux_mb,total_mb,csr_mb,coo_mb,total_vs_csr,empty_row_blocks,stored_zeros,carried_rows,longest_chain,stalls,tune_ms,tune_candidates";

const SPEC_HEADER: &str = "matrix,variant,tiles,dirty_tiles,hit_rate,synchronized_teams,check,host_stage_ms,host_bytes_read,host_bytes_written";

/// What `bench --op` times.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Spmv,
    SpmvTransposed,
    Spmm(usize),
}

fn parse_op(op: &str) -> wgspmv::Result<Op> {
    let bad = |reason: &str| wgspmv::Error::InvalidParameter {
        name: "op",
        value: op.to_owned(),
        reason: reason.into(),
    };
    match op {
        "spmv" => Ok(Op::Spmv),
        "spmv-t" => Ok(Op::SpmvTransposed),
        _ => match op.strip_prefix("spmm:").map(str::parse::<usize>) {
            Some(Ok(k)) if k >= 1 => Ok(Op::Spmm(k)),
            _ => Err(bad("spmv, spmv-t or spmm:K with K >= 1")),
        },
    }
}

/// One row of `bench --op spmv-t` or `--op spmm:K` for variant `v`: the operation timed and
/// checked against the f64 reference (every column, for SpMM).
fn bench_op<T: Scalar>(
    gpu: &Gpu,
    name: &str,
    a: &CsrMatrix<T>,
    v: &Variant,
    op: Op,
    (repeat, copy): (u32, f64),
) -> wgspmv::Result<Row> {
    let s = std::mem::size_of::<T>() as f64;
    let (plan, ms, ok, rel_err, bytes, setup) = match op {
        Op::SpmvTransposed => {
            let at = a.transpose()?;
            // The plan of A only holds the plan of Aᵀ: the cheapest to set up.
            let opts = PlanOptions {
                transposed: Some(v.method),
                ..v.opts.clone()
            };
            let holder = gpu.prepare_with(a, Method::CsrScalar, &opts)?;
            let x: Vec<T> = wgspmv::testing::suite::random_vector(at.ncols(), 7)
                .into_iter()
                .map(T::from_f64)
                .collect();
            let y_ref = reference::spmv_par(&at, &x)?;
            let gx = GpuVector::from_slice(gpu, &x)?;
            let mut gy = GpuVector::filled(gpu, at.nrows(), T::NAN)?;
            holder.run_transposed(&gx, &mut gy)?;
            let c = reference::check(1.0, &at, &x, 0.0, None, &gy.read()?, &y_ref);
            let plan = holder.transposed()?;
            let t = plan.time(&gx, &mut gy, repeat)?;
            let bytes = plan.minimal_traffic_bytes() as f64;
            let report = plan.report().clone();
            (report, t.ms, c.ok, c.rel_err, bytes, plan.report().setup_ms)
        }
        Op::Spmm(k) => {
            let (n, m) = (a.ncols(), a.nrows());
            let opts = PlanOptions {
                spmm_columns: Some(k),
                ..v.opts.clone()
            };
            let plan = gpu.prepare_with(a, v.method, &opts)?;
            let cols: Vec<Vec<T>> = (0..k)
                .map(|j| {
                    wgspmv::testing::suite::random_vector(n, 7 + j as u64)
                        .into_iter()
                        .map(T::from_f64)
                        .collect()
                })
                .collect();
            let mut x = vec![T::from_f64(0.0); n * k];
            for (j, c) in cols.iter().enumerate() {
                for (r, &v) in c.iter().enumerate() {
                    x[r * k + j] = v;
                }
            }
            let gx = GpuMatrix::from_slice(gpu, n, k, Layout::RowMajor, &x)?;
            let mut gy = GpuMatrix::filled(gpu, m, k, Layout::RowMajor, T::NAN)?;
            plan.run_spmm(&gx, &mut gy)?;
            let y = gy.read()?;
            let (mut ok, mut rel_err) = (true, 0.0f64);
            for (j, c) in cols.iter().enumerate() {
                let yj: Vec<T> = (0..m).map(|r| y[r * k + j]).collect();
                let y_ref = reference::spmv_par(a, c)?;
                let chk = reference::check(1.0, a, c, 0.0, None, &yj, &y_ref);
                ok &= chk.ok;
                rel_err = rel_err.max(chk.rel_err);
            }
            // Whole calls, back to back, waited for once: a warm-up batch, then the best of
            // three.
            let mut best = f64::INFINITY;
            for round in 0..4 {
                let t = std::time::Instant::now();
                for _ in 0..repeat.max(1) {
                    plan.run_spmm(&gx, &mut gy)?;
                }
                gpu.wait()?;
                if round > 0 {
                    best = best.min(t.elapsed().as_secs_f64() * 1e3 / repeat.max(1) as f64);
                }
            }
            let bytes =
                a.nnz() as f64 * (4.0 + s) + (m as f64 + 1.0) * 4.0 + k as f64 * (n + m) as f64 * s;
            let report = plan.report().clone();
            let setup = report.setup_ms;
            (report, best, ok, rel_err, bytes, setup)
        }
        Op::Spmv => unreachable!("bench_matrix times y = Ax"),
    };
    let gbps = bytes / (ms * 1e6);
    Ok(Row {
        matrix: name.to_owned(),
        method: v.label.clone(),
        rows: a.nrows(),
        cols: a.ncols(),
        nnz: a.nnz(),
        ms,
        gflops: 2.0 * a.nnz() as f64 * if let Op::Spmm(k) = op { k as f64 } else { 1.0 }
            / (ms * 1e6),
        gbps,
        frac: gbps / copy,
        rel_err,
        setup_ms: setup,
        update_ms: None,
        first_update_ms: None,
        update_stream_ms: None,
        validation_ms: plan.validation_ms,
        read_back_bytes: plan.read_back_bytes,
        split: plan.split,
        chosen: plan.method.to_owned(),
        note: if ok {
            String::new()
        } else {
            "FAILED the per-row accuracy check".into()
        },
    })
}

fn bench_matrix<T: Scalar>(
    gpu: &Gpu,
    name: &str,
    a: &CsrMatrix<T>,
    variants: &[Variant],
    args: &Args,
    copy: f64,
    bar: &ProgressBar,
) -> (Vec<Row>, Extra) {
    let repeat = args.repeat;
    // The matrix in buffers of its own, uploaded before any setup is timed.
    let on_gpu = if args.from_gpu_csr {
        match caller_buffers(gpu, a) {
            Ok(b) => Some(b),
            Err(e) => {
                bar.suspend(|| eprintln!("{name}: {e}"));
                return (Vec::new(), Extra::default());
            }
        }
    } else {
        None
    };
    let x: Vec<T> = wgspmv::testing::suite::random_vector(a.ncols(), 7)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let y_ref = match reference::spmv_par(a, &x) {
        Ok(y) => y,
        Err(e) => {
            bar.suspend(|| eprintln!("{name}: {e}"));
            return (Vec::new(), Extra::default());
        }
    };
    let mut out = Vec::new();
    let mut extra = Extra::default();
    // With `--rounds`: each plan kept beside the index of its row in `out`, timed again below.
    let mut kept_plans = Vec::new();
    // Whether the warm setup is timed while the first plan still holds its memory.
    let keep_first = args.setup_memory == "fresh";
    let op = parse_op(&args.op).expect("checked in run");
    for v in variants {
        let m = &v.label;
        bar.set_message(format!("{name} / {m}"));
        if op != Op::Spmv {
            match bench_op(gpu, name, a, v, op, (repeat, copy)) {
                Ok(r) => out.push(r),
                Err(e) => bar.suspend(|| eprintln!("{name} / {m}: {e}")),
            }
            bar.inc(1);
            continue;
        }
        let result = (|| -> wgspmv::Result<(Row, wgspmv::SpmvPlan<T>)> {
            let plan = match &on_gpu {
                Some([row_ptr, col_idx, values]) => {
                    let desc = wgspmv::GpuCsr {
                        nrows: a.nrows(),
                        ncols: a.ncols(),
                        nnz: a.nnz(),
                        row_ptr,
                        col_idx,
                        values,
                    };
                    // Timed warm, as a host setup's GPU steps are: the first plan of a kind
                    // compiles its pipelines (once per device). It is dropped after the timed
                    // one (so that freeing its memory is not timed) or, asked, before it.
                    empty_pool(gpu)?;
                    let first = gpu.prepare_gpu_csr::<T>(&desc, v.method, &v.opts)?;
                    let kept = release_first(gpu, first, keep_first)?;
                    let plan = gpu.prepare_gpu_csr(&desc, v.method, &v.opts)?;
                    drop(kept);
                    plan
                }
                None if args.warm_setup => {
                    empty_pool(gpu)?;
                    let first = gpu.prepare_with(a, v.method, &v.opts)?;
                    let kept = release_first(gpu, first, keep_first)?;
                    let plan = gpu.prepare_with(a, v.method, &v.opts)?;
                    drop(kept);
                    plan
                }
                None => gpu.prepare_with(a, v.method, &v.opts)?,
            };
            let gx = GpuVector::from_slice(gpu, &x)?;
            let mut gy = GpuVector::filled(gpu, a.nrows(), T::NAN)?;
            plan.run(&gx, &mut gy)?;
            let y = gy.read()?;
            let c = reference::check(1.0, a, &x, 0.0, None, &y, &y_ref);
            let t = plan.time(&gx, &mut gy, repeat)?;
            let gbps = plan.minimal_traffic_bytes() as f64 / (t.ms * 1e6);
            if let Some(r) = plan.speculation() {
                let s = &r.speculation;
                let host = r.last_host_run;
                extra.speculative.push(format!(
                    "{name},{m},{},{},{:.4},{},{},{},{},{}",
                    s.tiles,
                    s.dirty_tiles,
                    s.hit_rate(),
                    s.synchronized,
                    r.transfer.map_or("gpu".to_owned(), |t| format!("host-{t}")),
                    host.map_or(String::new(), |h| format!(
                        "{:.4}",
                        h.host_stage.as_secs_f64() * 1e3
                    )),
                    host.map_or(String::new(), |h| h.bytes_read.to_string()),
                    host.map_or(String::new(), |h| h.bytes_written.to_string()),
                ));
            }
            if let Some(t) = plan.bccoo().and_then(|r| r.tuning.as_ref()) {
                let how = if t.remembered {
                    "tuning remembered".to_owned()
                } else {
                    format!(
                        "tuned in {:.0} ms over {} candidates",
                        t.time.as_secs_f64() * 1e3,
                        t.candidates.len()
                    )
                };
                eprintln!("{name} / {m}: {how}: {}", plan.bccoo().unwrap().summary());
                for (label, ms) in &t.candidates {
                    eprintln!("    {label}: {ms:.4} ms");
                }
            }
            if let Some(r) = plan.bccoo() {
                let f = &r.footprint;
                let mb = |b: u64| b as f64 / 1e6;
                let tuning = r.tuning.as_ref();
                extra.bccoo.push(format!(
                    "{name},{m},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{},{},{},{},{}",
                    r.summary(),
                    mb(f.flags),
                    mb(f.columns),
                    mb(f.values),
                    mb(f.auxiliary),
                    mb(f.total()),
                    mb(f.csr),
                    mb(f.coo),
                    f.total() as f64 / f.csr as f64,
                    f.empty_row_blocks,
                    f.stored_zeros,
                    r.carry_groups,
                    r.longest_chain,
                    r.stalls(gpu)?,
                    tuning.map_or(String::new(), |t| format!("{:.0}", t.time.as_secs_f64() * 1e3)),
                    tuning.map_or(String::new(), |t| t.candidates.len().to_string()),
                ));
            }
            if let Some(r) = plan.suraa() {
                let (s, ms, alloc) = (
                    &r.schedule,
                    r.setup_time.as_secs_f64() * 1e3,
                    r.setup_alloc_time.as_secs_f64() * 1e3,
                );
                extra.suraa.push(format!(
                    "{name},{m},{},{ms:.4},{:.2},{alloc:.4},{:.2},{},{},{},{},{},{}",
                    r.setup_on,
                    ms / t.ms,
                    (ms - alloc) / t.ms,
                    s.segment_rows,
                    s.segments,
                    s.dynamic_rows,
                    s.dynamic_groups,
                    s.vector_rows(),
                    s.scalar_rows()
                ));
            }
            let updates = update_time(gpu, &plan, a)?;
            let row = Row {
                matrix: name.to_owned(),
                method: m.clone(),
                rows: a.nrows(),
                cols: a.ncols(),
                nnz: a.nnz(),
                ms: t.ms,
                gflops: 2.0 * a.nnz() as f64 / (t.ms * 1e6),
                gbps,
                frac: gbps / copy,
                rel_err: c.rel_err,
                setup_ms: plan.report().setup_ms,
                update_ms: updates.map(|u| u.1),
                first_update_ms: updates.map(|u| u.0),
                update_stream_ms: updates.map(|u| u.2),
                validation_ms: plan.report().validation_ms,
                read_back_bytes: plan.report().read_back_bytes,
                split: plan.report().split,
                chosen: plan.report().method.to_owned(),
                note: if c.ok {
                    String::new()
                } else {
                    "FAILED the per-row accuracy check".into()
                },
            };
            Ok((row, plan))
        })();
        eprintln!("[{:.1} s] {name} / {m} done", START.elapsed().as_secs_f64());
        match result {
            Ok((r, plan)) => {
                if !r.note.is_empty() {
                    bar.suspend(|| eprintln!("{name} / {m}: {}", r.note));
                }
                if args.rounds > 1 {
                    kept_plans.push((out.len(), plan));
                }
                out.push(r);
            }
            Err(e) => bar.suspend(|| eprintln!("{name} / {m}: {e}")),
        }
        bar.inc(1);
    }
    if let Err(e) = retime_in_rounds(gpu, &x, &kept_plans, args, &mut out) {
        bar.suspend(|| eprintln!("{name}: the rounds of --rounds: {e}"));
    }
    (out, extra)
}

/// `--rounds`: times the kept plans `args.rounds - 1` more times, each round starting one plan
/// later, and keeps each row's fastest time (its GB/s and GFLOP/s with it).
fn retime_in_rounds<T: Scalar>(
    gpu: &Gpu,
    x: &[T],
    plans: &[(usize, wgspmv::SpmvPlan<T>)],
    args: &Args,
    out: &mut [Row],
) -> wgspmv::Result<()> {
    let Some((_, first)) = plans.first() else {
        return Ok(());
    };
    let gx = GpuVector::from_slice(gpu, x)?;
    let mut gy = GpuVector::filled(gpu, first.nrows(), T::NAN)?;
    for round in 1..args.rounds as usize {
        for k in 0..plans.len() {
            let (row, plan) = &plans[(round + k) % plans.len()];
            let ms = plan.time(&gx, &mut gy, args.repeat)?.ms;
            let r = &mut out[*row];
            if ms < r.ms {
                let scale = r.ms / ms;
                r.ms = ms;
                r.gbps *= scale;
                r.gflops *= scale;
                r.frac *= scale;
            }
        }
    }
    Ok(())
}

const CMRS_HEADER: &str = "matrix,mu,height,predicted_speedup,measured_speedup,to_cmrs_spmv_eq,to_csr_spmv_eq,padded_zeros,padded_overhead_pct";

/// The CMRS figures issue 3 asks for, from the rows just measured (needs `cmrs` and `csr-vector`).
fn cmrs_report<T: Scalar>(gpu: &Gpu, name: &str, a: &CsrMatrix<T>, rows: &[Row]) -> Option<String> {
    use wgspmv::internals::cmrs::default_height;
    use wgspmv::internals::cmrs::format::{predicted_speedup, CmrsLayout, CmrsMatrix};
    let ms = |m: &str| rows.iter().find(|r| r.method == m).map(|r| r.ms);
    let (cmrs_ms, vector_ms) = (ms("cmrs")?, ms("csr-vector")?);
    let mu = a.row_stats().mean;
    let b = std::mem::size_of::<T>();
    let height = default_height(gpu.info(), mu, b);
    let layout = CmrsLayout {
        height,
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let m = CmrsMatrix::from_csr(a, &layout).ok()?;
    let to_cmrs = t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let _ = m.to_csr().ok()?;
    let to_csr = t.elapsed().as_secs_f64() * 1e3;
    let team = if gpu.info().has(wgpu::Features::SUBGROUP) {
        gpu.info().subgroup_min_size
    } else {
        32
    };
    let padded = CmrsMatrix::from_csr(
        a,
        &CmrsLayout {
            height: 16,
            small_buffer: Some((team, 8.min(team))),
            ..Default::default()
        },
    )
    .ok()?;
    let csr_bytes = (a.nnz() * (b + 4) + (a.nrows() + 1) * 4) as f64;
    Some(format!(
        "{name},{mu:.2},{height},{:.2},{:.2},{:.1},{:.1},{},{:.1}",
        predicted_speedup(
            height as f64,
            mu,
            b as f64,
            wgspmv::internals::cmrs::SEGMENT_BYTES
        ),
        vector_ms / cmrs_ms,
        to_cmrs / cmrs_ms,
        to_csr / cmrs_ms,
        padded.padding,
        100.0 * padded.overhead_bytes_vs_csr() as f64 / csr_bytes
    ))
}

fn print_table(rows: &[Row], copy: f64) {
    println!(
        "\n{:<22} {:<16} {:>10} {:>10} {:>9} {:>9} {:>7} {:>9} {:>10}",
        "matrix", "method", "nnz", "ms", "GFLOP/s", "GB/s", "%copy", "rel_err", "setup/prod"
    );
    for r in rows {
        println!(
            "{:<22} {:<16} {:>10} {:>10.4} {:>9.2} {:>9.1} {:>6.1}% {:>9.1e} {:>10.1}{}",
            r.matrix,
            if r.chosen == r.method {
                r.method.clone()
            } else {
                format!("{}:{}", r.method, r.chosen)
            },
            r.nnz,
            r.ms,
            r.gflops,
            r.gbps,
            100.0 * r.frac,
            r.rel_err,
            r.setup_ms / r.ms,
            if r.note.is_empty() { "" } else { "  FAILED" }
        );
    }
    println!("copy bandwidth (ceiling): {copy:.1} GB/s");
}
