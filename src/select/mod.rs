//! `Method::Auto`: features of the matrix, the adapter and the workload → a cost model whose
//! coefficients are data (an adapter profile) → the method with the least
//! `setup + expected_products × time per product`; optionally the model's best few candidates
//! are built and timed on the device, and the timed choice is remembered per adapter and matrix.
//!
//! * [`Features`]: what is read from the matrix (O(nrows) plus a fixed sample of rows).
//! * [`profile`]: the model's form and its text file; built-in profiles in `src/profile/profiles/`.
//! * [`choose`] the decision alone, [`prepare_auto`] the plan and the decision ([`AutoChoice`]).
//! * Fitting a profile from measurements on a synthetic set: `wgspmv calibrate --out
//!   profile.txt` (docs/auto.md).
//! * Timed choices ([`AutoOptions::timed_budget_products`], and by default on a matrix below
//!   the profile's data, where the model extrapolates) are kept in the process and optionally
//!   in a file ([`AutoOptions::remember_file`]).
//!
//! The profile used: [`AutoOptions::profile`], else the file named by the environment variable
//! `WGSPMV_PROFILE`, else the built-in profile matching the adapter (vendor or device type),
//! else `generic`. See docs/auto.md.

pub(crate) mod calibration;
pub(crate) mod features;
pub(crate) mod fit;
mod predict;
pub mod profile;
pub(crate) mod remember;

use crate::matrix::{fingerprint, fingerprint_gpu};
pub use crate::profile::AutoOptions;
use crate::profile::{profile_for, Profile};
pub use features::Features;

use crate::{CsrMatrix, Error, Gpu, GpuVector, Method, PlanOptions, Result, Scalar, SpmvPlan};
use std::collections::HashMap;
use std::time::Instant;

/// Products a plan is assumed to serve when [`PlanOptions::expected_products`] is `None`: a
/// solver-like count (an iterative solve runs hundreds to thousands of products).
pub const DEFAULT_EXPECTED_PRODUCTS: u64 = 1000;

/// Candidates built and timed by a timed choice unless [`AutoOptions::timed_candidates`] says:
/// the model's best of each of the four families of methods.
pub const DEFAULT_TIMED_CANDIDATES: usize = 4;

/// Samples per candidate in a timed choice (each candidate keeps its fastest).
const TIMING_ROUNDS: u32 = 3;

/// The fewest expected products for which a matrix below the profile's data is chosen for by
/// timing: below, the setups decide (the model's least setup), and a timing would cost more
/// than a wrong product time.
pub const BELOW_DATA_MIN_PRODUCTS: u64 = 100;

/// Products a choice below the profile's data spends timing, at most (a tenth of the expected
/// products where that is less): products there take microseconds, so this is about a
/// millisecond on a GPU.
const BELOW_DATA_BUDGET: f64 = 60.0;

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
    /// The matrix is smaller than every matrix the profile was fitted on
    /// ([`Profile::below_data`]): the model extrapolates there, so a choice for at least
    /// [`BELOW_DATA_MIN_PRODUCTS`] products is timed unless [`AutoOptions::model_only`].
    pub below_data: bool,
}

impl AutoChoice {
    /// The model's choice: [`predict`]'s candidates, the first chosen.
    fn by_model(
        profile: &Profile,
        features: Features,
        expected: u64,
        on_gpu: &dyn Fn(Method) -> bool,
        opts: &PlanOptions,
    ) -> Self {
        let mut candidates = predict(profile, &features, expected, on_gpu);
        // Many vectors at once: the methods whose format has an SpMM kernel (the others run one
        // product per vector), where the profile models one.
        if opts.spmm_columns.is_some_and(|k| k > 1)
            && candidates
                .iter()
                .any(|c| crate::methods::has_spmm_kernel(c.method))
        {
            candidates.retain(|c| crate::methods::has_spmm_kernel(c.method));
        }
        Self {
            method: candidates[0].method,
            basis: Basis::Model,
            profile: profile.name.clone(),
            expected_products: expected,
            below_data: profile.below_data(&features),
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

/// The model's candidates for `features`, best (least predicted total) first; `on_gpu` says
/// which methods would build this matrix's format on the GPU (the setup's regime).
pub(crate) fn predict(
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

fn adapter_hash(gpu: &Gpu) -> u64 {
    let i = gpu.info();
    crate::matrix::fnv(
        format!("{}|{}|{:?}|{:#x}", i.name, i.driver, i.backend, i.vendor).into_bytes(),
        crate::matrix::FNV0,
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
        Method::CsrStream => 4,
        Method::Auto => 5,
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

/// The candidates a timed choice with the caller's budget builds: [`timed_candidates`], with
/// a `bccoo-plus` that would be tuned replaced by `bccoo` where that is tuned too (its search
/// covers the slice counts `bccoo-plus` takes and one slice besides; docs/auto.md: short rows).
fn caller_timed_candidates(choice: &AutoChoice, k: usize, opts: &PlanOptions) -> Vec<usize> {
    let expected = choice.expected_products;
    let mut timed = timed_candidates(&choice.candidates, k);
    let plain = choice
        .candidates
        .iter()
        .position(|c| c.method == Method::Bccoo);
    let tuned = |c: &Candidate| candidate_options(c, expected, opts, true).bccoo.tune;
    for i in timed.iter_mut() {
        let c = &choice.candidates[*i];
        if c.method == Method::BccooPlus {
            if let Some(p) = plain.filter(|&p| tuned(c) && tuned(&choice.candidates[p])) {
                *i = p;
            }
        }
    }
    timed
}

/// The candidates a choice below the profile's data times: `csr-scalar` and `csr-vector`
/// (the model errs between them most there: one row per invocation against one per subgroup,
/// where a product is bound by its longest row's latency), then the model's best candidate of
/// another family, unless its predicted setup alone is more than twice the best total.
fn below_data_candidates(candidates: &[Candidate]) -> Vec<usize> {
    let best_total = candidates.first().map_or(f64::INFINITY, |c| c.total_ms);
    let mut out: Vec<usize> = (0..candidates.len())
        .filter(|&i| family(candidates[i].method) == family(Method::CsrScalar))
        .collect();
    if let Some(i) = (0..candidates.len()).find(|&i| {
        family(candidates[i].method) != family(Method::CsrScalar)
            && (i == 0 || candidates[i].setup_ms <= 2.0 * best_total)
    }) {
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
    let plan = crate::methods::prepare_concrete(gpu, a, method, opts)?;
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
        Method::CsrStream => true,
        Method::Speculative => speculative,
        Method::Bccoo | Method::BccooPlus => bccoo,
        Method::Auto => false,
    };
    Ok(AutoChoice::by_model(
        &profile, features, expected, &on_gpu, opts,
    ))
}

/// Builds a candidate of a timed choice: its plan and its setup, ms.
pub(crate) type BuildCandidate<'a, T> =
    dyn FnMut(Method, &PlanOptions) -> Result<(SpmvPlan<T>, f64)> + 'a;

/// The timed choice (`how`, from [`timing`]) for a validated CSR matrix in GPU buffers
/// (`choice`: [`choose_gpu_csr`]'s, whose candidates are built from the buffers by `build`,
/// which returns a plan and its setup in ms, then timed):
/// nothing of the matrix read back but its fingerprint's chunk hashes (8 bytes per 4096 words);
/// `bccoo` tuned there by the guided search where the host's timed choice would tune it. The
/// choice is remembered, and looked up, as a host CSR's of the same structure is.
pub(crate) fn prepare_auto_gpu_csr<T: Scalar>(
    gpu: &Gpu,
    a: &crate::GpuCsr,
    opts: &PlanOptions,
    mut choice: AutoChoice,
    how: Timing,
    build: &mut BuildCandidate<T>,
) -> Result<(SpmvPlan<T>, AutoChoice)> {
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
            let o = candidate_options(
                &choice.candidates[k],
                choice.expected_products,
                opts,
                matches!(how, Timing::Caller(_)),
            );
            // (A remembered method that fails to build here is timed again with the rest.)
            if let Ok((plan, _)) = build(r.method, &o) {
                choice.candidates[k].measured_product_ms = Some(r.product_ms);
                choice.method = r.method;
                choice.basis = Basis::Remembered;
                return Ok((plan, choice));
            }
        }
    }
    let (i, plan) = time_candidates(gpu, &mut choice, opts, how, (a.nrows, a.ncols), build)?;
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

/// How a choice is timed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Timing {
    /// The caller's budget: the model's best of each family, on a warmed-up GPU.
    Caller(f64),
    /// Below the profile's data: both CSR kernels and the model's best of the other families,
    /// a few products each, without a warm-up (launches and latencies decide there, not clocks).
    BelowData(f64),
}

/// Whether and how `choice` (the model's) is timed: with the caller's budget, below the
/// profile's data for enough products (unless `model_only`), else not.
pub(crate) fn timing(choice: &AutoChoice, opts: &PlanOptions) -> Result<Option<Timing>> {
    match opts.auto.timed_budget_products {
        Some(b) if !(b.is_finite() && b > 0.0) => Err(Error::InvalidParameter {
            name: "timed_budget_products",
            value: b.to_string(),
            reason: "a positive number of products".into(),
        }),
        Some(b) => Ok(Some(Timing::Caller(b))),
        None if choice.below_data
            && !opts.auto.model_only
            && choice.expected_products >= BELOW_DATA_MIN_PRODUCTS =>
        {
            let budget = BELOW_DATA_BUDGET.min(choice.expected_products as f64 / 10.0);
            Ok(Some(Timing::BelowData(budget)))
        }
        None => Ok(None),
    }
}

/// Chooses a method for `a` on `gpu` (see the module docs). With a timed budget, or below the
/// profile's data ([`AutoChoice::below_data`]), the candidates are built and timed, then
/// dropped; [`prepare_auto`] keeps the winner's plan instead.
pub fn choose<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>, opts: &PlanOptions) -> Result<AutoChoice> {
    let _turn = gpu.gl_turn();
    gpu.check_scalar::<T>()?;
    decide(gpu, a, opts, false).map(|(c, _)| c)
}

/// Chooses as [`choose`] does and prepares the chosen method's plan (a timed choice keeps the
/// plan it timed; a model choice whose build fails falls back to the next candidate).
pub fn prepare_auto<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    opts: &PlanOptions,
) -> Result<(SpmvPlan<T>, AutoChoice)> {
    let _turn = gpu.gl_turn();
    gpu.check_scalar::<T>()?;
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
        match crate::methods::prepare_concrete(gpu, a, m, &o) {
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
    let mut choice = AutoChoice::by_model(&profile, features, expected, &|m| on_gpu[&m], opts);
    let Some(how) = timing(&choice, opts)? else {
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
        how,
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

/// Builds the candidates `how` times (`build`: a plan and its setup, ms) and times them
/// against one another on an `(nrows, ncols)` product, within its budget of products of the
/// model's best; sets the choice to the least measured setup + expected products × time, and
/// returns its index among the candidates and its plan. With the caller's budget: the model's
/// first candidates of distinct families, `bccoo` and `bccoo-plus` tuned where the expected
/// products repay it; below the profile's data: `csr-scalar`, `csr-vector` and the model's
/// best of another family, untuned.
fn time_candidates<T: Scalar>(
    gpu: &Gpu,
    choice: &mut AutoChoice,
    opts: &PlanOptions,
    how: Timing,
    (nrows, ncols): (usize, usize),
    build: &mut BuildCandidate<T>,
) -> Result<(usize, SpmvPlan<T>)> {
    let expected = choice.expected_products;
    let timing_start = Instant::now();
    let (budget, tuned, settle) = match how {
        Timing::Caller(b) => (b, true, true),
        Timing::BelowData(b) => (b, false, false),
    };
    let mut timed = match how {
        Timing::Caller(_) => {
            let k = opts
                .auto
                .timed_candidates
                .unwrap_or(DEFAULT_TIMED_CANDIDATES)
                .max(1);
            caller_timed_candidates(choice, k, opts)
        }
        Timing::BelowData(_) => below_data_candidates(&choice.candidates),
    };
    if timed.is_empty() {
        timed.push(0);
    }
    // (On a settled GPU two untimed products each come first.)
    let per_candidate = budget / timed.len() as f64 - if settle { 2.0 } else { 0.0 };
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
        let o = candidate_options(c, expected, opts, tuned);
        match build(c.method, &o) {
            Ok((plan, setup)) => {
                // Compiling a kernel is paid once per process (or never, with a pipeline
                // cache), not per matrix: it would favour whichever method ran first.
                let setup = (setup - plan.report().compile_ms).max(0.0);
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
    let ms = SpmvPlan::time_together(&plans, &gx, &mut gy, TIMING_ROUNDS, reps, settle)?;
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
