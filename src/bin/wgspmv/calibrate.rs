//! Calibrates `Method::Auto` for the adapter in hand: times every method (setup and product) on
//! the fixed synthetic set of `wgspmv::select::calibration`, fits the cost model, and writes a
//! profile that `Auto` loads (`WGSPMV_PROFILE=profile.txt`, or `AutoOptions::profile`).
//!
//!     wgspmv calibrate --out profile.txt --csv samples.csv
//!     wgspmv calibrate --refit samples.csv --out profile.txt
//!     wgspmv calibrate --out p.txt --check-suite 1   # then compare
//!
//! `--scale` sets the largest matrix (million stored entries); the set has every structure at
//! scale/16, scale/4 and scale. `--check-suite S` then runs the synthetic suite at S million
//! entries with every method and reports what Auto (model only, timed, and for one product)
//! chose against the fastest.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use wgspmv::internals::select::{calibration, fit, fit::Sample, predict, remember};
use wgspmv::select::{self, profile::Match, profile::Profile, Features};
use wgspmv::testing::SuiteClass;
use wgspmv::{CsrMatrix, Gpu, GpuVector, Method, PlanOptions, Scalar};

/// `wgspmv calibrate`: fit `Method::Auto`'s cost model on this adapter.
#[derive(clap::Args)]
pub struct Args {
    /// Write the fitted profile here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the raw samples (features, setup, product time) here; `--refit` reads them back.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Fit from this samples CSV instead of measuring (no GPU needed unless --check-suite).
    #[arg(long)]
    refit: Option<PathBuf>,
    /// Calibration sizes, million stored entries (default: scale/16, scale/4, scale).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<f64>,
    /// Largest calibration matrix, in million stored entries.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Also calibrate f64 (where the adapter has SHADER_F64).
    #[arg(long)]
    f64: bool,
    /// Profile name (default: from the adapter: nvidia, amd, intel, apple, cpu, or gpu).
    #[arg(long)]
    name: Option<String>,
    /// Cache size for the x-versus-cache regressor, MiB (default: 50 on NVIDIA, 32 on CPU
    /// adapters, 4 elsewhere).
    #[arg(long)]
    cache_mib: Option<f64>,
    /// Host-clock time to aim for per timed batch of products, ms.
    #[arg(long, default_value_t = 30.0)]
    batch_ms: f64,
    /// After fitting, run the suite at this many million entries and compare Auto's choices
    /// with the fastest method.
    #[arg(long)]
    check_suite: Option<f64>,
    /// Write the suite comparison CSV here.
    #[arg(long)]
    check_csv: Option<PathBuf>,
    /// Only these structures of the calibration set (comma-separated names; default: all), e.g.
    /// to fill in a size tier a time limit cut short.
    #[arg(long, value_delimiter = ',')]
    structures: Vec<String>,
    /// Stop measuring new calibration matrices after this many seconds (then fit).
    #[arg(long, default_value_t = 1e9)]
    max_seconds: f64,
    /// Write every method's measurement on the suite (samples CSV format) here.
    #[arg(long)]
    suite_csv: Option<PathBuf>,
    /// Offline: what the fitted (or --profile) model would choose on these samples (e.g. a
    /// --suite-csv from another run), against the fastest measured.
    #[arg(long)]
    eval: Option<PathBuf>,
    /// Expected products for --eval's main column (default 1000).
    #[arg(long, default_value_t = 1000)]
    eval_products: u64,
    /// Fit on the calibration samples plus these (e.g. a --suite-csv), for the written profile.
    #[arg(long)]
    also_fit: Vec<PathBuf>,
    /// Fit the product model on these samples too, but not the setup model (samples from an
    /// earlier run whose setups the library has since changed).
    #[arg(long)]
    also_fit_products: Vec<PathBuf>,
    /// Fit the product model on these samples too, every method's (measured at the current
    /// kernels, so `--fresh-methods` does not apply), but not the setup model (e.g. samples
    /// of another host, or another GPU of the profile's family, filling in a regime).
    #[arg(long)]
    also_fit_current_products: Vec<PathBuf>,
    /// Fit the setup model on these samples alone (setups re-measured after a build changed,
    /// e.g. on a few structures); every other sample then informs the product model only, and
    /// these samples' products are left out.
    #[arg(long)]
    setup_samples: Vec<PathBuf>,
    /// Methods whose kernels or defaults changed since the --also-fit / --also-fit-products
    /// files were measured (comma-separated): their samples come from this run or --refit alone.
    #[arg(long, value_delimiter = ',', value_parser = crate::args::method_names())]
    fresh_methods: Vec<String>,
    /// Use this profile for --check-suite / --eval instead of the fitted one.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// A `note` line for the written profile (repeatable), e.g. the command that made it.
    #[arg(long)]
    note: Vec<String>,
    /// Offline: for each calibration structure, fit without it and choose on it (E = 10⁹),
    /// printing the choice against the fastest measured: how the model does on structures it
    /// has not seen.
    #[arg(long)]
    leave_one_out: bool,
}

/// Runs `wgspmv calibrate`.
pub fn main(args: Args) -> wgspmv::Result<()> {
    run(&args)
}

static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

fn log(msg: impl AsRef<str>) {
    eprintln!("[{:7.1}s] {}", START.elapsed().as_secs_f64(), msg.as_ref());
}

fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> wgspmv::Error + '_ {
    move |source| wgspmv::Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// Setup (ms, the smaller of two builds when the first is short, so pipeline compilation and fresh
/// device memory do not count), product time (ms) and whether the format was built on the GPU,
/// of `method` on `a`.
fn measure<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
    x: &GpuVector<T>,
    y: &mut GpuVector<T>,
    batch_ms: f64,
) -> wgspmv::Result<(f64, f64, bool)> {
    let build = || -> wgspmv::Result<(wgspmv::SpmvPlan<T>, f64)> {
        let t = Instant::now();
        let p = gpu.prepare_with(a, method, opts)?;
        gpu.wait()?;
        Ok((p, t.elapsed().as_secs_f64() * 1e3))
    };
    let (mut plan, mut setup) = build()?;
    // (Less the pipelines it compiled: a fast GPU build is long only the first time.)
    let split = plan.report().split;
    if setup < 200.0 || split.analysis_ms + split.build_ms + split.upload_ms < 200.0 {
        // The second build reuses the memory the first freed, as every method's does after the
        // one before it: otherwise the first methods measured would pay the driver's fresh
        // allocations and the later ones not.
        drop(plan);
        let (p2, s2) = build()?;
        plan = p2;
        setup = setup.min(s2);
    }
    // The library's timer (GPU timestamps where the adapter has them, after keeping the GPU
    // busy until its clocks settle), as `bench` uses: a GPU left idle while the host built the
    // plan reads slower on a short host-clock batch, most for the methods with long setups.
    let _ = batch_ms;
    let t = plan.time(x, y, 50)?;
    Ok((setup, t.ms, plan.report().built_on_gpu))
}

/// Appends lines to a CSV file as they are measured, so a run cut short keeps what it measured.
struct Sink(Option<std::fs::File>);

impl Sink {
    fn create(path: Option<&PathBuf>, header: &str) -> wgspmv::Result<Self> {
        use std::io::Write as _;
        let Some(p) = path else { return Ok(Sink(None)) };
        let mut f = std::fs::File::create(p).map_err(io_err(p))?;
        writeln!(f, "{header}").map_err(io_err(p))?;
        Ok(Sink(Some(f)))
    }
    fn line(&mut self, l: &str) {
        use std::io::Write as _;
        if let Some(f) = &mut self.0 {
            let _ = writeln!(f, "{l}");
            let _ = f.flush();
        }
    }
}

/// Measures every method on `a` (cast to `T`) and records the samples.
fn calibrate_matrix<T: Scalar>(
    gpu: &Gpu,
    name: &str,
    a64: &CsrMatrix<f64>,
    args: &Args,
    out: &mut Vec<Sample>,
    sink: &mut Sink,
) -> wgspmv::Result<()> {
    let opts = PlanOptions::default();
    let a: CsrMatrix<T> = a64.cast();
    let f = Features::of(&a, gpu.info());
    let xv: Vec<T> = calibration::test_vector(a.ncols(), 5)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let x = GpuVector::from_slice(gpu, &xv)?;
    let mut y = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
    let mut line = format!(
        "{name} {} ({}x{}, {} nnz):",
        T::NAME,
        a.nrows(),
        a.ncols(),
        a.nnz()
    );
    for &m in Method::ALL {
        match measure(gpu, &a, m, &opts, &x, &mut y, args.batch_ms) {
            Ok((setup_ms, product_ms, on_gpu)) => {
                line += &format!(" {m} {product_ms:.4}/{setup_ms:.0}");
                let s = Sample {
                    matrix: name.to_owned(),
                    method: m,
                    features: f.clone(),
                    setup_ms,
                    product_ms,
                    built_on_gpu: Some(on_gpu),
                };
                sink.line(&fit::sample_to_csv(&s));
                out.push(s);
            }
            Err(e) => line += &format!(" {m} failed ({e})"),
        }
    }
    log(line);
    Ok(())
}

fn default_name(gpu: &Gpu) -> (String, Vec<Match>, f64) {
    let i = gpu.info();
    if i.device_type == wgpu::DeviceType::Cpu {
        return (
            "cpu".into(),
            vec![Match::DeviceType(wgpu::DeviceType::Cpu)],
            32.0,
        );
    }
    let name = match i.vendor {
        0x10de => "nvidia",
        0x1002 => "amd",
        0x8086 => "intel",
        0x106b => "apple",
        _ => "gpu",
    };
    let cache = if i.vendor == 0x10de { 50.0 } else { 4.0 };
    let m = if i.vendor != 0 {
        vec![Match::Vendor(i.vendor)]
    } else {
        vec![]
    };
    (name.into(), m, cache)
}

fn run(args: &Args) -> wgspmv::Result<()> {
    std::sync::LazyLock::force(&START);
    let need_gpu = args.refit.is_none() || args.check_suite.is_some();
    let gpu = if need_gpu { Some(Gpu::new()?) } else { None };
    if let Some(g) = &gpu {
        log(format!("{}", g.info()));
    }
    let samples = if let Some(path) = &args.refit {
        let text = std::fs::read_to_string(path).map_err(io_err(path))?;
        fit::samples_from_csv(&text)?
    } else {
        let gpu = gpu.as_ref().unwrap();
        let s = args.scale;
        let default = [s / 16.0, s / 4.0, s];
        let sizes: Vec<usize> = if args.sizes.is_empty() {
            &default[..]
        } else {
            &args.sizes[..]
        }
        .iter()
        .map(|v| ((v * 1e6) as usize).max(2000))
        .collect();
        let f64_too = args.f64 && gpu.info().has(wgpu::Features::SHADER_F64);
        if args.f64 && !f64_too {
            log("the adapter lacks SHADER_F64: f64 not calibrated");
        }
        log(format!(
            "calibration set: {} structures at sizes {sizes:?}",
            calibration::STRUCTURES.len()
        ));
        let mut sink = Sink::create(args.csv.as_ref(), fit::CSV_HEADER)?;
        // Warm the pipelines of every method on a small matrix first.
        let warm = calibration::STRUCTURES[0].generate(2000, 1)?;
        for &m in Method::ALL {
            let _ = gpu.prepare_with(&warm.cast::<f32>(), m, &PlanOptions::default());
            if f64_too {
                let _ = gpu.prepare_with(&warm, m, &PlanOptions::default());
            }
        }
        let mut samples = Vec::new();
        'outer: for &n in &sizes {
            // In the order given, so that what matters most is measured before a time limit.
            let chosen: Vec<&calibration::Structure> = if args.structures.is_empty() {
                calibration::STRUCTURES.iter().collect()
            } else {
                args.structures
                    .iter()
                    .filter_map(|n| calibration::STRUCTURES.iter().find(|s| s.name == n))
                    .collect()
            };
            for st in chosen {
                if START.elapsed().as_secs_f64() > args.max_seconds {
                    log("--max-seconds reached: fitting what was measured");
                    break 'outer;
                }
                let name = format!("{}-{}k", st.name, n / 1000);
                let a = st.generate(n, 1)?;
                calibrate_matrix::<f32>(gpu, &name, &a, args, &mut samples, &mut sink)?;
                if f64_too {
                    calibrate_matrix::<f64>(gpu, &name, &a, args, &mut samples, &mut sink)?;
                }
            }
        }
        samples
    };
    let mut samples = samples;
    let fresh: Vec<Method> = args
        .fresh_methods
        .iter()
        .map(|n| Method::from_name(n))
        .collect::<wgspmv::Result<_>>()?;
    let earlier = |s: &fit::Sample| !fresh.contains(&s.method);
    for p in &args.also_fit {
        let text = std::fs::read_to_string(p).map_err(io_err(p))?;
        samples.extend(fit::samples_from_csv(&text)?.into_iter().filter(earlier));
    }
    let products_only = |s: fit::Sample| fit::Sample {
        setup_ms: f64::NAN,
        ..s
    };
    for p in &args.also_fit_products {
        let text = std::fs::read_to_string(p).map_err(io_err(p))?;
        samples.extend(
            fit::samples_from_csv(&text)?
                .into_iter()
                .filter(earlier)
                .map(products_only),
        );
    }
    for p in &args.also_fit_current_products {
        let text = std::fs::read_to_string(p).map_err(io_err(p))?;
        samples.extend(fit::samples_from_csv(&text)?.into_iter().map(products_only));
    }
    if !args.setup_samples.is_empty() {
        samples = samples.into_iter().map(products_only).collect();
        for p in &args.setup_samples {
            let text = std::fs::read_to_string(p).map_err(io_err(p))?;
            samples.extend(
                fit::samples_from_csv(&text)?
                    .into_iter()
                    .map(|s| fit::Sample {
                        product_ms: f64::NAN,
                        ..s
                    }),
            );
        }
    }
    // Which adapter the samples came from: the CSV's, or the one in hand.
    let (mut name, mut matches, mut cache) = match &gpu {
        Some(g) => default_name(g),
        None => ("gpu".into(), vec![], 4.0),
    };
    if let (None, Some(s)) = (&gpu, samples.first()) {
        if s.features.device_type == wgpu::DeviceType::Cpu {
            (name, matches, cache) = (
                "cpu".into(),
                vec![Match::DeviceType(wgpu::DeviceType::Cpu)],
                32.0,
            );
        } else if s.features.vendor == 0x10de {
            (name, matches, cache) = ("nvidia".into(), vec![Match::Vendor(0x10de)], 50.0);
        } else if s.features.vendor != 0 {
            (name, matches) = ("gpu".into(), vec![Match::Vendor(s.features.vendor)]);
        }
    }
    let name = args.name.clone().unwrap_or(name);
    let cache = args.cache_mib.unwrap_or(cache) * (1 << 20) as f64;
    let mut notes = vec![format!(
        "fitted by wgspmv calibrate from {} samples ({} matrices)",
        samples.len(),
        {
            let mut m: Vec<&str> = samples.iter().map(|s| s.matrix.as_str()).collect();
            m.sort();
            m.dedup();
            m.len()
        }
    )];
    notes.extend(args.note.iter().cloned());
    if let Some(g) = &gpu {
        let i = g.info();
        notes.push(format!(
            "adapter: {} ({:?}, {:?}, driver {})",
            i.name, i.backend, i.device_type, i.driver
        ));
    }
    if args.leave_one_out {
        leave_one_out(&samples, &name, &matches, cache)?;
    }
    let (profile, quality) = fit::fit(&samples, &name, notes, matches, cache)?;
    for q in &quality {
        log(format!(
            "fit {:<12} {:3} samples: product rms ln-error {:.3} (x{:.2}), setup {:.3} (x{:.2})",
            q.method.name(),
            q.samples,
            q.product_rms_log,
            q.product_rms_log.exp(),
            q.setup_rms_log,
            q.setup_rms_log.exp()
        ));
    }
    // How often the model's choice on the calibration samples is the measured best (E = 1000).
    report_choices(&profile, &samples);
    let text = profile.to_string();
    match &args.out {
        Some(path) => std::fs::write(path, &text).map_err(io_err(path))?,
        None => print!("{text}"),
    }
    if let Some(path) = &args.eval {
        let text = std::fs::read_to_string(path).map_err(io_err(path))?;
        let ev = fit::samples_from_csv(&text)?;
        let p = match &args.profile {
            Some(p) => Profile::load(p)?,
            None => profile.clone(),
        };
        eval_samples(&p, &ev, args.eval_products);
    }
    if let Some(scale) = args.check_suite {
        let profile = match &args.profile {
            Some(p) => Profile::load(p)?,
            None => profile,
        };
        check_suite(gpu.as_ref().unwrap(), Arc::new(profile), scale, args)?;
    }
    Ok(())
}

/// Per matrix and scalar of `samples`: the fastest measured, the model's choice (E = 1000 and
/// E = 1) and how far they are from the best.
fn eval_samples(profile: &Profile, samples: &[Sample], e: u64) {
    let groups = by_matrix(samples);
    println!(
        "{:<18} {:>3} {:>12} {:>9} {:>12} {:>6} {:>8}",
        "matrix", "", "fastest", "ms", "auto", "ratio", "E=1"
    );
    let mut sum = 0.0;
    for (m, sb, mine) in &groups {
        let best = fastest(mine);
        let chosen = pick(profile, mine, e).unwrap();
        let one = |s: &Sample| s.setup_ms + s.product_ms;
        let cheapest = mine.iter().map(|s| one(s)).fold(f64::INFINITY, f64::min);
        let e1 = pick(profile, mine, 1).unwrap();
        let r = chosen.product_ms / best.product_ms;
        sum += r.ln();
        println!(
            "{m:<18} f{:<2} {:>12} {:>9.4} {:>12} {:>6.2} {:>8.2}  ({} at E=1)",
            sb * 8,
            best.method.name(),
            best.product_ms,
            chosen.method.name(),
            r,
            one(e1) / cheapest,
            e1.method.name()
        );
    }
    println!(
        "geometric mean auto/fastest: {:.3}",
        (sum / groups.len().max(1) as f64).exp()
    );
}

/// The samples of each matrix and scalar (label, bytes per value), in the order first seen.
fn by_matrix<'a>(
    samples: impl IntoIterator<Item = &'a Sample>,
) -> Vec<(&'a str, usize, Vec<&'a Sample>)> {
    let mut groups: Vec<(&str, usize, Vec<&Sample>)> = Vec::new();
    for s in samples {
        let key = (s.matrix.as_str(), s.features.scalar_bytes);
        match groups.iter_mut().find(|g| (g.0, g.1) == key) {
            Some(g) => g.2.push(s),
            None => groups.push((key.0, key.1, vec![s])),
        }
    }
    groups
}

/// The fastest measured of one matrix's samples.
fn fastest<'a>(mine: &[&'a Sample]) -> &'a Sample {
    mine.iter()
        .copied()
        .min_by(|a, b| a.product_ms.total_cmp(&b.product_ms))
        .expect("a group has a sample")
}

/// The sample of the method `profile` chooses for `e` products among one matrix's samples (its
/// first choice that was measured).
fn pick<'a>(profile: &Profile, mine: &[&'a Sample], e: u64) -> Option<&'a Sample> {
    predict(profile, &mine[0].features, e, &|m| regime(mine, m))
        .into_iter()
        .find_map(|c| mine.iter().copied().find(|s| s.method == c.method))
}

/// The calibration structure a sample's matrix label names (`powerlaw-local-8000k`:
/// `powerlaw-local`).
fn structure_of(label: &str) -> &str {
    match label.rsplit_once('-') {
        Some((s, size)) if size.ends_with('k') && size[..size.len() - 1].parse::<u64>().is_ok() => {
            s
        }
        _ => label,
    }
}

/// Fits without each structure in turn and chooses on its matrices (E = 10⁹) among the samples
/// with setups (those of this run, --refit and --also-fit), against the fastest measured.
fn leave_one_out(
    samples: &[Sample],
    name: &str,
    matches: &[Match],
    cache: f64,
) -> wgspmv::Result<()> {
    let mut structures: Vec<&str> = samples.iter().map(|s| structure_of(&s.matrix)).collect();
    structures.sort();
    structures.dedup();
    let (mut sum, mut n, mut worst) = (0.0, 0usize, (1.0f64, String::new()));
    for st in structures {
        let rest: Vec<Sample> = samples
            .iter()
            .filter(|s| structure_of(&s.matrix) != st)
            .cloned()
            .collect();
        let (profile, _) = fit::fit(&rest, name, vec![], matches.to_vec(), cache)?;
        let held = samples.iter().filter(|s| {
            structure_of(&s.matrix) == st && s.setup_ms.is_finite() && s.product_ms.is_finite()
        });
        let mut line = Vec::new();
        for (m, sb, mine) in by_matrix(held) {
            let Some(chosen) = pick(&profile, &mine, 1_000_000_000) else {
                continue;
            };
            let r = chosen.product_ms / fastest(&mine).product_ms;
            sum += r.ln();
            n += 1;
            if r > worst.0 {
                worst = (r, format!("{m} f{}", sb * 8));
            }
            line.push(format!("{m} f{} {} {r:.2}", sb * 8, chosen.method.name()));
        }
        println!("{st:<16} {}", line.join(", "));
    }
    println!(
        "leave one structure out (E = 10^9): geometric mean {:.3}x the fastest over {n}, worst {:.2}x ({})",
        (sum / n.max(1) as f64).exp(),
        worst.0,
        worst.1
    );
    Ok(())
}

/// Whether `method`'s sample among `mine` (one matrix) was built on the GPU (unknown: yes).
fn regime(mine: &[&Sample], method: Method) -> bool {
    mine.iter()
        .find(|s| s.method == method)
        .and_then(|s| s.built_on_gpu)
        .unwrap_or(true)
}

fn report_choices(profile: &Profile, samples: &[Sample]) {
    let (mut worst, mut sum_log, mut n) = (1.0f64, 0.0, 0);
    // Setup-only samples (`--setup-samples`) have no product to choose by.
    let timed: Vec<Sample> = samples
        .iter()
        .filter(|s| s.product_ms.is_finite())
        .cloned()
        .collect();
    for (m, sb, mine) in by_matrix(&timed) {
        let Some(chosen) = pick(profile, &mine, 1_000_000) else {
            continue;
        };
        let r = chosen.product_ms / fastest(&mine).product_ms;
        worst = worst.max(r);
        sum_log += r.ln();
        n += 1;
        if r > 1.15 {
            log(format!(
                "  model on {m} f{}: chose {} at {r:.2}x the fastest",
                sb * 8,
                chosen.method
            ));
        }
    }
    log(format!(
        "model on the calibration set (products only): geometric mean {:.3}x the fastest, worst {worst:.2}x, over {n}",
        (sum_log / n.max(1) as f64).exp()
    ));
}

fn check_suite(gpu: &Gpu, profile: Arc<Profile>, scale: f64, args: &Args) -> wgspmv::Result<()> {
    let mut csv = Sink::create(args.check_csv.as_ref(), "class,scalar,fastest,fastest_ms,auto_model,auto_model_ms,auto_timed,auto_timed_ms,e1_cheapest,e1_cheapest_ms,e1_auto,e1_auto_ms")?;
    let mut suite = Sink::create(args.suite_csv.as_ref(), fit::CSV_HEADER)?;
    let scalars: &[&str] = if args.f64 && gpu.info().has(wgpu::Features::SHADER_F64) {
        &["f32", "f64"]
    } else {
        &["f32"]
    };
    println!("\nsuite at {scale} M entries, profile {}:", profile.name);
    println!(
        "{:<17} {:>3} {:>12} {:>9} {:>12} {:>6} {:>12} {:>6} {:>8}",
        "class", "", "fastest", "ms", "auto", "ratio", "timed", "ratio", "E=1 ratio"
    );
    for c in SuiteClass::ALL {
        let a64 = c.generate((scale * 1e6) as usize, 42);
        for &sc in scalars {
            if sc == "f32" {
                check_one::<f32>(
                    gpu,
                    &profile,
                    c.name(),
                    &a64.cast(),
                    args,
                    &mut csv,
                    &mut suite,
                )?
            } else {
                check_one::<f64>(gpu, &profile, c.name(), &a64, args, &mut csv, &mut suite)?
            }
        }
    }
    Ok(())
}

fn check_one<T: Scalar>(
    gpu: &Gpu,
    profile: &Arc<Profile>,
    name: &str,
    a: &CsrMatrix<T>,
    args: &Args,
    csv: &mut Sink,
    suite: &mut Sink,
) -> wgspmv::Result<()> {
    let opts = PlanOptions::default();
    let xv: Vec<T> = calibration::test_vector(a.ncols(), 5)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let x = GpuVector::from_slice(gpu, &xv)?;
    let mut y = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
    let mut meas: Vec<(Method, f64, f64)> = Vec::new();
    for &m in Method::ALL {
        match measure(gpu, a, m, &opts, &x, &mut y, args.batch_ms) {
            Ok((s, p, on_gpu)) => {
                meas.push((m, s, p));
                suite.line(&fit::sample_to_csv(&Sample {
                    matrix: name.to_owned(),
                    method: m,
                    features: Features::of(a, gpu.info()),
                    setup_ms: s,
                    product_ms: p,
                    built_on_gpu: Some(on_gpu),
                }));
            }
            Err(e) => log(format!("{name} {m}: {e}")),
        }
    }
    let get = |m: Method| meas.iter().find(|r| r.0 == m).map_or(f64::NAN, |r| r.2);
    let fastest = meas.iter().min_by(|a, b| a.2.total_cmp(&b.2)).unwrap();
    let mut o = PlanOptions::default();
    o.auto.profile = Some(profile.clone());
    o.auto.model_only = true;
    let model = select::choose(gpu, a, &o)?;
    o.auto.timed_budget_products = Some(200.0);
    remember::forget_all();
    let timed = select::choose(gpu, a, &o)?;
    o.auto.timed_budget_products = None;
    o.expected_products = Some(1);
    let e1 = select::choose(gpu, a, &o)?;
    let one = |r: &(Method, f64, f64)| r.1 + r.2;
    let cheapest = meas
        .iter()
        .min_by(|a, b| one(a).total_cmp(&one(b)))
        .unwrap();
    let e1_ms = meas.iter().find(|r| r.0 == e1.method).map_or(f64::NAN, one);
    println!(
        "{name:<17} {} {:>12} {:>9.4} {:>12} {:>6.2} {:>12} {:>6.2} {:>8.2}",
        T::NAME,
        fastest.0.name(),
        fastest.2,
        model.method.name(),
        get(model.method) / fastest.2,
        timed.method.name(),
        get(timed.method) / fastest.2,
        e1_ms / one(cheapest)
    );
    if get(model.method) / fastest.2 > 1.15 {
        print!("{model}");
        for r in &meas {
            println!(
                "    measured {:<12} setup {:>9.2} ms, product {:.5} ms",
                r.0.name(),
                r.1,
                r.2
            );
        }
    }
    csv.line(&format!(
        "{name},{},{},{:.5},{},{:.5},{},{:.5},{},{:.4},{},{:.4}",
        T::NAME,
        fastest.0.name(),
        fastest.2,
        model.method.name(),
        get(model.method),
        timed.method.name(),
        get(timed.method),
        cheapest.0.name(),
        one(cheapest),
        e1.method.name(),
        e1_ms
    ));
    Ok(())
}
