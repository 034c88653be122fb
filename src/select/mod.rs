//! `Method::Auto`: features of the matrix, the adapter and the workload → a cost model whose
//! coefficients are data (an adapter profile) → the method with the least
//! `setup + expected_products × time per product`; optionally the model's best few candidates
//! are built and timed on the device, and the timed choice is remembered per adapter and matrix.
//!
//! * [`features`]: what is read from the matrix (O(nrows) plus a fixed sample of rows).
//! * [`profile`]: the model's form and its text file; built-in profiles in `src/select/profiles/`.
//! * [`fit`]: fitting a profile from measurements; [`calibration`]: the synthetic set they are
//!   taken on (`wgspmv calibrate --out profile.txt`).
//! * [`remember`]: timed choices kept in the process and optionally in a file.
//!
//! The profile used: [`AutoOptions::profile`], else the file named by the environment variable
//! `WGSPMV_PROFILE`, else the built-in profile matching the adapter (vendor or device type),
//! else `generic`. See docs/auto.md.

pub mod calibration;
pub mod features;
pub mod fit;
pub mod profile;
pub mod remember;

pub use features::Features;
pub use fit::Sample;
pub use profile::{Kernel, Match, MethodModel, Profile, Residual, Traffic};

use crate::{CsrMatrix, Error, Gpu, GpuVector, Method, PlanOptions, Result, Scalar, SpmvPlan};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Products a plan is assumed to serve when [`PlanOptions::expected_products`] is `None`: a
/// solver-like count (an iterative solve runs hundreds to thousands of products).
pub const DEFAULT_EXPECTED_PRODUCTS: u64 = 1000;

/// Candidates built and timed by a timed choice unless [`AutoOptions::timed_candidates`] says:
/// the model's best of each of the four families of methods.
pub const DEFAULT_TIMED_CANDIDATES: usize = 4;

/// Samples per candidate in a timed choice (each candidate keeps its fastest).
const TIMING_ROUNDS: u32 = 3;

/// The environment variable naming a profile file.
pub const PROFILE_ENV: &str = "WGSPMV_PROFILE";

/// How `Method::Auto` chooses.
#[derive(Clone, Debug, Default)]
pub struct AutoOptions {
    /// The cost-model profile; `None`: `WGSPMV_PROFILE`, else the built-in one for the adapter.
    pub profile: Option<Arc<Profile>>,
    /// Build the model's best few candidates and time them on the device, spending about this
    /// many products' time on the timing in all (at least 5 products per candidate); `None`:
    /// the model alone decides.
    pub timed_budget_products: Option<f64>,
    /// How many candidates a timed choice builds, at most: the model's best of each family of
    /// methods, best first (default [`DEFAULT_TIMED_CANDIDATES`]).
    pub timed_candidates: Option<usize>,
    /// A file that remembers timed choices across processes (read before timing, appended to
    /// after). Timed choices are always remembered in the process.
    pub remember_file: Option<PathBuf>,
}

/// How the chosen method was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// The cost model's prediction alone.
    Model,
    /// The model's best candidates were built and timed on the device.
    Timed,
    /// A timed choice remembered for this adapter, matrix and workload.
    Remembered,
}

/// One method as Auto saw it.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The method this candidate stands for.
    pub method: Method,
    /// Predicted setup (format build and upload), ms.
    pub setup_ms: f64,
    /// Predicted time of one product, ms.
    pub product_ms: f64,
    /// `setup_ms + expected_products × product_ms`.
    pub total_ms: f64,
    /// Measured setup, ms (timed choice).
    pub measured_setup_ms: Option<f64>,
    /// Measured time of one product, ms (timed choice, or a remembered measurement).
    pub measured_product_ms: Option<f64>,
    /// Why building it failed, if it was tried and failed.
    pub error: Option<String>,
}

/// What `Method::Auto` chose and why.
#[derive(Clone, Debug)]
pub struct AutoChoice {
    /// The method chosen.
    pub method: Method,
    /// Whether the model, a timing or a remembered timing decided.
    pub basis: Basis,
    /// The profile the predictions come from.
    pub profile: String,
    /// The products the plan is expected to serve, which weigh setup against product time.
    pub expected_products: u64,
    /// What the model read from the matrix and adapter.
    pub features: Features,
    /// Every method of the profile, by predicted total time (best first).
    pub candidates: Vec<Candidate>,
    /// Wall time spent building and timing candidates (timed choice), ms; 0 otherwise.
    pub timing_ms: f64,
}

impl AutoChoice {
    /// The model's choice: [`predict`]'s candidates, the first chosen.
    fn by_model(
        profile: &Profile,
        features: Features,
        expected: u64,
        on_gpu: &dyn Fn(Method) -> bool,
    ) -> Self {
        let candidates = predict(profile, &features, expected, on_gpu);
        Self {
            method: candidates[0].method,
            basis: Basis::Model,
            profile: profile.name.clone(),
            expected_products: expected,
            features,
            candidates,
            timing_ms: 0.0,
        }
    }

    /// The candidate entry of the chosen method.
    pub fn chosen(&self) -> &Candidate {
        self.candidates
            .iter()
            .find(|c| c.method == self.method)
            .expect("the chosen method is a candidate")
    }
}

impl std::fmt::Display for AutoChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "auto: {} ({:?}; profile {}; {} products; {}x{}, {} nnz, mean {:.1}, cv {:.2}, long share {:.2}, empty {:.2}, scatter {:.2})",
            self.method,
            self.basis,
            self.profile,
            self.expected_products,
            self.features.nrows,
            self.features.ncols,
            self.features.nnz,
            self.features.mean,
            self.features.cv,
            self.features.long_share,
            self.features.empty_frac,
            self.features.scatter
        )?;
        writeln!(
            f,
            "  {:<12} {:>11} {:>12} {:>12} {:>11} {:>12}",
            "method", "setup ms", "product ms", "total ms", "meas. setup", "meas. product"
        )?;
        let opt = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.4}"));
        for c in &self.candidates {
            writeln!(
                f,
                "{} {:<12} {:>11.3} {:>12.5} {:>12.3} {:>11} {:>12}{}",
                if c.method == self.method { '*' } else { ' ' },
                c.method.name(),
                c.setup_ms,
                c.product_ms,
                c.total_ms,
                opt(c.measured_setup_ms),
                opt(c.measured_product_ms),
                c.error
                    .as_ref()
                    .map_or(String::new(), |e| format!("  ({e})"))
            )?;
        }
        Ok(())
    }
}

/// The profile Auto uses on `gpu` with `opts` (see the module docs for the order).
pub fn profile_for(gpu: &Gpu, opts: &AutoOptions) -> Result<Arc<Profile>> {
    if let Some(p) = &opts.profile {
        return Ok(p.clone());
    }
    if let Some(path) = std::env::var_os(PROFILE_ENV).filter(|p| !p.is_empty()) {
        static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<Profile>>>> = OnceLock::new();
        let path = PathBuf::from(path);
        let cache = LOADED.get_or_init(Default::default);
        if let Some(p) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&path) {
            return Ok(p.clone());
        }
        let p = Arc::new(Profile::load(&path)?);
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path, p.clone());
        return Ok(p);
    }
    let info = gpu.info();
    Ok(profile::builtin_for(info.vendor, info.device_type))
}

/// The model's candidates for `features`, best (least predicted total) first; `on_gpu` says
/// which methods would build this matrix's format on the GPU (the setup's regime).
pub fn predict(
    profile: &Profile,
    features: &Features,
    expected_products: u64,
    on_gpu: &dyn Fn(Method) -> bool,
) -> Vec<Candidate> {
    let mut c: Vec<Candidate> = profile
        .methods
        .iter()
        .map(|m| {
            let setup_ms = m.setup_ms(features, on_gpu(m.method));
            let product_ms = profile.product_ms(m, features);
            Candidate {
                method: m.method,
                setup_ms,
                product_ms,
                total_ms: setup_ms + expected_products as f64 * product_ms,
                measured_setup_ms: None,
                measured_product_ms: None,
                error: None,
            }
        })
        .collect();
    c.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    c
}

/// A hash of the matrix structure (dimensions, row pointers, column indices; not the values),
/// the same in every process, on any number of threads and from GPU buffers
/// (`fingerprint_gpu`): the row pointers and then the columns are cut into chunks of
/// `FINGERPRINT_CHUNK` words, each hashed on its own (in parallel: a serial pass over a large
/// matrix's columns is a noticeable part of a tuning of short products, docs/bccoo.md), and the
/// chunks' hashes folded in order.
pub fn fingerprint<T: Scalar>(a: &CsrMatrix<T>) -> u64 {
    use rayon::prelude::*;
    let chunks = |words: &[u32]| -> Vec<u64> {
        words
            .par_chunks(FINGERPRINT_CHUNK)
            .map(chunk_hash)
            .collect()
    };
    let (ptr, cols) = (chunks(a.row_ptr()), chunks(a.col_idx()));
    fold_chunks(a.shape(), ptr.into_iter().chain(cols))
}

/// Words per chunk of the fingerprint (`CHUNK` in shaders/shared/fingerprint.wgsl).
pub(crate) const FINGERPRINT_CHUNK: usize = 4096;

/// One chunk's hash: two 32-bit multiplicative lanes (32-bit operations only, so that a GPU
/// without 64-bit integers computes the same, shaders/shared/fingerprint.wgsl).
pub(crate) fn chunk_hash(words: &[u32]) -> u64 {
    let (mut a, mut b) = (0x811C_9DC5u32, 0x9E37_79B9u32);
    for &w in words {
        a = (a ^ w).wrapping_mul(0x0100_0193);
        b = (b ^ w).wrapping_mul(0x85EB_CA6B).rotate_left(13);
    }
    (a as u64) << 32 | b as u64
}

/// The fingerprint from the matrix's shape and its chunks' hashes in order.
pub(crate) fn fold_chunks(
    (nrows, ncols, nnz): (usize, usize, usize),
    chunks: impl Iterator<Item = u64>,
) -> u64 {
    let mix = |h: u64, w: u32| {
        (h ^ w as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
    };
    let h = remember::fnv(
        [nrows as u64, ncols as u64, nnz as u64]
            .iter()
            .flat_map(|v| v.to_le_bytes()),
        remember::FNV0,
    );
    chunks.fold(h, |h, c| mix(mix(h, c as u32), (c >> 32) as u32))
}

/// [`fingerprint`] of a CSR matrix in GPU buffers: the chunks hashed on the GPU, one invocation
/// each, their hashes read back (8 bytes per 4096 words) and folded here.
pub(crate) fn fingerprint_gpu(gpu: &Gpu, a: &crate::matrix::GpuCsr) -> Result<u64> {
    let words = [a.nrows as u64 + 1, a.nnz as u64];
    let chunks = words.map(|w| w.div_ceil(FINGERPRINT_CHUNK as u64));
    let total = chunks[0] + chunks[1];
    let out = gpu.storage_zeroed("fingerprint chunks", total * 8, wgpu::BufferUsages::empty())?;
    let params: [u32; 4] = [
        words[0] as u32,
        words[1] as u32,
        chunks[0] as u32,
        total as u32,
    ];
    let params = gpu.uniform_buffer("fingerprint", bytemuck::cast_slice(&params));
    let mut stand_in = None;
    let col_idx = a.bindable_col_idx(gpu, &mut stand_in)?;
    crate::gpu::recorder::submit_pass(gpu, "fingerprint", "fingerprinting a GPU matrix", |r| {
        let buffers: [&dyn crate::gpu::Bind; 4] = [a.row_ptr, col_idx, &out, &params];
        r.dispatch(
            crate::kernel::FINGERPRINT,
            vec![],
            &buffers,
            total.div_ceil(64) as u32,
        )
    })?;
    let hashes: Vec<[u32; 2]> = gpu.read_buffer(&out, total as usize)?;
    Ok(fold_chunks(
        (a.nrows, a.ncols, a.nnz),
        hashes
            .into_iter()
            .map(|[lo, hi]| (hi as u64) << 32 | lo as u64),
    ))
}

fn adapter_hash(gpu: &Gpu) -> u64 {
    let i = gpu.info();
    remember::fnv(
        format!("{}|{}|{:?}|{:#x}", i.name, i.driver, i.backend, i.vendor).into_bytes(),
        remember::FNV0,
    )
}

/// Builds a `bccoo` tuning takes, about (docs/bccoo.md: 14-22 candidates).
const TUNING_BUILDS: f64 = 15.0;
/// Builds the guided `bccoo` tuning takes, about (docs/bccoo.md: 3-8 candidates).
const GUIDED_TUNING_BUILDS: f64 = 6.0;
/// Products a timed choice's guided `bccoo` tuning may spend at least (docs/bccoo.md: with fewer
/// it stops before the block size or the slices on the suite).
const GUIDED_TUNING_BUDGET: u32 = 1000;

/// The options a candidate is built with: the caller's, and where the choice is timed (or a
/// timed choice remembered), `bccoo` and `bccoo-plus` tuned on the device when the tuning's
/// builds cost under a tenth of the expected products (the tuner remembers its own choice, so
/// a remembered Auto choice rebuilds the same layout).
fn candidate_options(c: &Candidate, expected: u64, opts: &PlanOptions, timed: bool) -> PlanOptions {
    let mut o = opts.clone();
    // A timed choice tunes by the guided search within its own budget (at least
    // GUIDED_TUNING_BUDGET); without a budget, by the staged search.
    let budget = opts
        .auto
        .timed_budget_products
        .map(|b| (b.round() as u32).max(GUIDED_TUNING_BUDGET));
    let builds = if budget.is_some() {
        GUIDED_TUNING_BUILDS
    } else {
        TUNING_BUILDS
    };
    let worth_tuning = builds * c.setup_ms < 0.1 * expected as f64 * c.product_ms.max(0.0);
    if timed && worth_tuning && matches!(c.method, Method::Bccoo | Method::BccooPlus) {
        o.bccoo.tune = true;
        o.bccoo.tune_budget_products = budget;
    }
    o
}

/// Methods that read the matrix the same way (a row per team, rows grouped in strips, tiles of
/// nonzeros, blocks of COO); the model errs most between families, least within one.
fn family(m: Method) -> u8 {
    match m {
        Method::CsrScalar | Method::CsrVector => 0,
        Method::Cmrs | Method::CmrsPadded => 1,
        Method::Speculative | Method::Suraa => 2,
        Method::Bccoo | Method::BccooPlus => 3,
        Method::Auto => 4,
    }
}

/// Which of the model's candidates (sorted best first) a timed choice builds: the best of each
/// family, best first, at most `k`, leaving out any whose predicted setup alone is more than
/// twice the best candidate's predicted total (it cannot win by being measured faster).
fn timed_candidates(candidates: &[Candidate], k: usize) -> Vec<usize> {
    let best_total = candidates.first().map_or(f64::INFINITY, |c| c.total_ms);
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        if out.len() == k {
            break;
        }
        if seen.contains(&family(c.method)) || (i > 0 && c.setup_ms > 2.0 * best_total) {
            continue;
        }
        seen.push(family(c.method));
        out.push(i);
    }
    out
}

/// Builds one candidate; returns the plan and its setup time, ms.
fn concrete<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<(SpmvPlan<T>, f64)> {
    let t = Instant::now();
    let plan = gpu.prepare_with(a, method, opts)?;
    gpu.wait()?;
    Ok((plan, t.elapsed().as_secs_f64() * 1e3))
}

/// The model's choice for a validated CSR matrix in GPU buffers, nothing read back but the
/// features' counts (`Features::of_gpu_csr`); each method's setup regime is where its build
/// from GPU buffers runs (the strips' loop budgets, known only while building, are taken as
/// met). By the model alone ([`prepare_auto_gpu_csr`] times its candidates); no remembered
/// choices, which need the host's arrays.
pub(crate) fn choose_gpu_csr<T: Scalar>(
    gpu: &Gpu,
    a: &crate::GpuCsr,
    opts: &PlanOptions,
) -> Result<AutoChoice> {
    let profile = profile_for(gpu, &opts.auto)?;
    let features = Features::of_gpu_csr::<T>(gpu, a)?;
    let expected = opts
        .expected_products
        .unwrap_or(DEFAULT_EXPECTED_PRODUCTS)
        .max(1);
    let shape = (a.nrows, a.ncols, a.nnz);
    let speculative =
        crate::methods::speculative::gpu_build::builds_from_host::<T>(gpu, shape, opts)
            .unwrap_or(false);
    let bccoo = crate::methods::bccoo::gpu_build::builds_from_host::<T>(gpu, opts);
    let on_gpu = |m: Method| match m {
        Method::CsrScalar | Method::CsrVector | Method::Cmrs | Method::CmrsPadded => true,
        Method::Suraa => true,
        Method::Speculative => speculative,
        Method::Bccoo | Method::BccooPlus => bccoo,
        Method::Auto => false,
    };
    Ok(AutoChoice::by_model(&profile, features, expected, &on_gpu))
}

/// Builds a candidate of a timed choice: its plan and its setup, ms.
pub(crate) type BuildCandidate<'a, T> =
    dyn FnMut(Method, &PlanOptions) -> Result<(SpmvPlan<T>, f64)> + 'a;

/// The timed choice for a validated CSR matrix in GPU buffers ([`choose_gpu_csr`]'s candidates,
/// built from the buffers by `build`, which returns a plan and its setup in ms, then timed):
/// nothing of the matrix read back but its fingerprint's chunk hashes (8 bytes per 4096 words);
/// `bccoo` tuned there by the guided search where the host's timed choice would tune it. The
/// choice is remembered, and looked up, as a host CSR's of the same structure is.
pub(crate) fn prepare_auto_gpu_csr<T: Scalar>(
    gpu: &Gpu,
    a: &crate::GpuCsr,
    opts: &PlanOptions,
    build: &mut BuildCandidate<T>,
) -> Result<(SpmvPlan<T>, AutoChoice)> {
    let budget = timed_budget(opts)?.expect("a timed choice has a budget");
    let mut choice = choose_gpu_csr::<T>(gpu, a, opts)?;
    // Remembered under the same key as a host CSR of the same structure.
    let key = remember::Key {
        adapter: adapter_hash(gpu),
        matrix: fingerprint_gpu(gpu, a)?,
        scalar: T::NAME,
        products_decade: (choice.expected_products as f64).log10().round() as i32,
    };
    let file = opts.auto.remember_file.as_deref();
    if let Some(r) = remember::recall(&key, file) {
        if let Some(k) = choice.candidates.iter().position(|c| c.method == r.method) {
            let o = candidate_options(&choice.candidates[k], choice.expected_products, opts, true);
            // (A remembered method that fails to build here is timed again with the rest.)
            if let Ok((plan, _)) = build(r.method, &o) {
                choice.candidates[k].measured_product_ms = Some(r.product_ms);
                choice.method = r.method;
                choice.basis = Basis::Remembered;
                return Ok((plan, choice));
            }
        }
    }
    let (i, plan) = time_candidates(gpu, &mut choice, opts, budget, (a.nrows, a.ncols), build)?;
    remember::store(
        key,
        remember::Remembered {
            method: choice.method,
            product_ms: choice.candidates[i].measured_product_ms.unwrap_or(0.0),
        },
        file,
    )?;
    Ok((plan, choice))
}

/// The timed choice's budget in products, `None` for a choice by the model alone.
fn timed_budget(opts: &PlanOptions) -> Result<Option<f64>> {
    match opts.auto.timed_budget_products {
        Some(b) if !(b.is_finite() && b > 0.0) => Err(Error::InvalidParameter {
            name: "timed_budget_products",
            value: b.to_string(),
            reason: "a positive number of products".into(),
        }),
        b => Ok(b),
    }
}

/// Chooses a method for `a` on `gpu` (see the module docs). With a timed budget the candidates
/// are built and timed, then dropped; [`prepare_auto`] keeps the winner's plan instead.
pub fn choose<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>, opts: &PlanOptions) -> Result<AutoChoice> {
    decide(gpu, a, opts, false).map(|(c, _)| c)
}

/// Chooses as [`choose`] does and prepares the chosen method's plan (a timed choice keeps the
/// plan it timed; a model choice whose build fails falls back to the next candidate).
pub fn prepare_auto<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    opts: &PlanOptions,
) -> Result<(SpmvPlan<T>, AutoChoice)> {
    let (mut choice, plan) = decide(gpu, a, opts, true)?;
    if let Some(plan) = plan {
        return Ok((plan, choice));
    }
    // Model or remembered choice: build it, falling back down the list if a build fails.
    let mut order: Vec<Method> = vec![choice.method];
    order.extend(
        choice
            .candidates
            .iter()
            .map(|c| c.method)
            .filter(|&m| m != choice.method),
    );
    let mut first_err = None;
    let timed = choice.basis != Basis::Model;
    for m in order {
        let c = choice.candidates.iter().find(|c| c.method == m);
        let o = c.map_or_else(
            || opts.clone(),
            |c| candidate_options(c, choice.expected_products, opts, timed),
        );
        match gpu.prepare_with(a, m, &o) {
            Ok(plan) => {
                choice.method = m;
                return Ok((plan, choice));
            }
            Err(e) => {
                if let Some(c) = choice.candidates.iter_mut().find(|c| c.method == m) {
                    c.error = Some(e.to_string());
                }
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.expect("at least one candidate"))
}

fn decide<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    opts: &PlanOptions,
    keep_plan: bool,
) -> Result<(AutoChoice, Option<SpmvPlan<T>>)> {
    let auto = &opts.auto;
    let profile = profile_for(gpu, auto)?;
    let features = Features::of(a, gpu.info());
    let expected = opts
        .expected_products
        .unwrap_or(DEFAULT_EXPECTED_PRODUCTS)
        .max(1);
    // Where each method would build this matrix (as `prepare_with` decides: no upload here).
    let mut on_gpu = HashMap::new();
    for m in &profile.methods {
        // (A method whose options fail here fails when built, and falls down the list then.)
        let gpu_build = crate::methods::builds_on_gpu(gpu, a, m.method, opts).unwrap_or(false);
        on_gpu.insert(m.method, gpu_build);
    }
    let mut choice = AutoChoice::by_model(&profile, features, expected, &|m| on_gpu[&m]);
    let Some(budget) = timed_budget(opts)? else {
        return Ok((choice, None));
    };
    let key = remember::Key {
        adapter: adapter_hash(gpu),
        matrix: fingerprint(a),
        scalar: T::NAME,
        products_decade: (expected as f64).log10().round() as i32,
    };
    let file = auto.remember_file.as_deref();
    if let Some(r) = remember::recall(&key, file) {
        if let Some(c) = choice.candidates.iter_mut().find(|c| c.method == r.method) {
            c.measured_product_ms = Some(r.product_ms);
            choice.method = r.method;
            choice.basis = Basis::Remembered;
            return Ok((choice, None));
        }
    }
    let (i, plan) = time_candidates(
        gpu,
        &mut choice,
        opts,
        budget,
        (a.nrows(), a.ncols()),
        &mut |m, o| concrete(gpu, a, m, o),
    )?;
    remember::store(
        key,
        remember::Remembered {
            method: choice.method,
            product_ms: choice.candidates[i].measured_product_ms.unwrap_or(0.0),
        },
        file,
    )?;
    Ok((choice, keep_plan.then_some(plan)))
}

/// Builds the model's first candidates of distinct families (`build`: a plan and its setup, ms)
/// and times them against one another on an `(nrows, ncols)` product, within `budget` products
/// of the model's best; sets the choice to the least measured setup + expected products × time,
/// and returns its index among the candidates and its plan. `bccoo` and `bccoo-plus` are tuned
/// where the expected products repay it.
fn time_candidates<T: Scalar>(
    gpu: &Gpu,
    choice: &mut AutoChoice,
    opts: &PlanOptions,
    budget: f64,
    (nrows, ncols): (usize, usize),
    build: &mut BuildCandidate<T>,
) -> Result<(usize, SpmvPlan<T>)> {
    let expected = choice.expected_products;
    let timing_start = Instant::now();
    let k = opts
        .auto
        .timed_candidates
        .unwrap_or(DEFAULT_TIMED_CANDIDATES)
        .max(1);
    // Two untimed products each, then the rounds' samples.
    let mut timed = timed_candidates(&choice.candidates, k);
    // Where the family of blocks is tuned, it is tuned as `bccoo`, whose search covers the
    // slice counts `bccoo-plus` takes and one slice besides (docs/auto.md: short rows).
    let plain = choice
        .candidates
        .iter()
        .position(|c| c.method == Method::Bccoo);
    for i in timed.iter_mut() {
        let c = &choice.candidates[*i];
        if c.method != Method::BccooPlus {
            continue;
        }
        if let Some(p) = plain {
            let tuned = |c: &Candidate| candidate_options(c, expected, opts, true).bccoo.tune;
            if tuned(c) && tuned(&choice.candidates[p]) {
                *i = p;
            }
        }
    }
    let per_candidate = budget / timed.len() as f64 - 2.0;
    let reps = ((per_candidate / TIMING_ROUNDS as f64).floor() as u32).max(1);
    let x: Vec<T> = calibration::test_vector(ncols, 17)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let gx = GpuVector::from_slice(gpu, &x)?;
    let mut gy = GpuVector::filled(gpu, nrows, T::from_f64(0.0))?;
    // Build every candidate first, then time them in two rounds (forward, then backward) and
    // keep each one's better round: a discrete GPU left idle while the host built a plan runs
    // slower for a while, which would otherwise count against the methods with long setups.
    let mut built: Vec<(usize, SpmvPlan<T>)> = Vec::new();
    let mut first_err = None;
    for i in timed {
        let c = &choice.candidates[i];
        let o = candidate_options(c, expected, opts, true);
        match build(c.method, &o) {
            Ok((plan, setup)) => {
                choice.candidates[i].measured_setup_ms = Some(setup);
                built.push((i, plan));
            }
            Err(e) => {
                choice.candidates[i].error = Some(e.to_string());
                first_err.get_or_insert(e);
            }
        }
    }
    // Every built candidate in turns, each keeping its fastest of TIMING_ROUNDS samples: a GPU
    // left idle while the host built a plan slows them all alike (GPU timestamps where the
    // adapter has them).
    let plans: Vec<&SpmvPlan<T>> = built.iter().map(|(_, p)| p).collect();
    let ms = SpmvPlan::time_together(&plans, &gx, &mut gy, TIMING_ROUNDS, reps, true)?;
    for ((i, _), ms) in built.iter().zip(ms) {
        choice.candidates[*i].measured_product_ms = Some(ms);
    }
    let mut best: Option<(f64, usize, SpmvPlan<T>)> = None;
    for (i, plan) in built {
        let c = &choice.candidates[i];
        let (Some(setup), Some(ms)) = (c.measured_setup_ms, c.measured_product_ms) else {
            continue;
        };
        if c.error.is_some() {
            continue;
        }
        let total = setup + expected as f64 * ms;
        if best.as_ref().is_none_or(|b| total < b.0) {
            best = Some((total, i, plan));
        }
    }
    let Some((_, i, plan)) = best else {
        return Err(first_err.expect("a candidate was tried"));
    };
    choice.method = choice.candidates[i].method;
    choice.basis = Basis::Timed;
    choice.timing_ms = timing_start.elapsed().as_secs_f64() * 1e3;
    Ok((i, plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::UploadedCsr;
    use crate::testing::SuiteClass;

    /// The fingerprint hashed on the GPU is the host's, word for word of its definition: arrays
    /// of less than one chunk, of whole chunks and a ragged last one, no entries, empty rows;
    /// and it tells structures apart that differ in one column or one row pointer.
    #[test]
    fn fingerprint_on_the_gpu_equals_the_hosts() {
        let Some(gpu) = crate::gpu::test_gpu() else {
            return;
        };
        let mut matrices: Vec<CsrMatrix<f32>> = vec![
            CsrMatrix::try_new(3, 4, vec![0, 0, 0, 0], vec![], vec![]).unwrap(),
            CsrMatrix::try_new(2, 3, vec![0, 1, 3], vec![2, 0, 1], vec![1.0; 3]).unwrap(),
        ];
        for (class, rows) in [
            (SuiteClass::Banded, 4095),
            (SuiteClass::PowerLaw, 9000),
            (SuiteClass::EmptyRows, 4096 * 3 - 1),
        ] {
            matrices.push(class.generate(rows, 5).cast::<f32>());
        }
        let moved = {
            let a = &matrices[3];
            let mut cols = a.col_idx().to_vec();
            // The last entry of row 0 one column further right (still sorted, still in range).
            let end = a.row_ptr()[1] as usize - 1;
            cols[end] += 1;
            assert!(
                cols[end] < a.ncols() as u32
                    && (end + 1 == cols.len() || a.row_ptr()[1] as usize == end + 1)
            );
            CsrMatrix::try_new(
                a.nrows(),
                a.ncols(),
                a.row_ptr().to_vec(),
                cols,
                a.values().to_vec(),
            )
            .unwrap()
        };
        let mut seen = std::collections::HashSet::new();
        for a in matrices.iter().chain([&moved]) {
            let up = UploadedCsr::new(&gpu, a).unwrap().unwrap();
            let (host, on_gpu) = (fingerprint(a), fingerprint_gpu(&gpu, &up.view()).unwrap());
            assert_eq!(host, on_gpu, "{:?}", a.shape());
            assert!(
                seen.insert(host),
                "{:?}: a fingerprint seen before",
                a.shape()
            );
        }
    }
}
