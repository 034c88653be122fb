//! Auto-tuning of `bccoo` / `bccoo-plus` (section 4): candidates are built (on the GPU from one
//! upload of the CSR where the plain build would be) and timed on the adapter in hand. With
//! [`BccooOptions::tune_budget_products`], a guided search of a handful of candidates within that
//! many products (see `guided`); without, the staged search, with the paper's pruning: only the four block sizes with the smallest footprints are
//! tried, the transpose is always offline, the result cache holds 1 or 2 rows per invocation, and
//! (beyond the paper) the search is staged: the slice count first (1, i.e. BCCOO, then BCCOO+'s
//! 2..=32, fewest first, stopping at the first slower count; `bccoo-plus` starts at 2), then
//! block size, tile, workgroup size, strategy and cache, the carry path (single or two pass,
//! where single pass is allowed), and last the slice counts next to the chosen one. Each stage
//! keeps the best so far and skips layouts already timed. Parameters the caller set
//! are not searched. The choice is remembered for the same matrix structure, adapter, method and
//! value type: in this process, or, when [`BccooOptions::tune_file`] names one, in a tuning file
//! shared across processes (one line per choice, appended).

use super::gpu_build::BuildReuse;
use super::{
    build, build_reusing, single_pass_is_safe, smallest_footprints, BccooOptions, Carry,
    ColumnCoding, FormatCache, Strategy,
};
use crate::gpu::{Gpu, GpuVector};
use crate::matrix::{GpuCsr, UploadedCsr};
use crate::methods::{Method, PlanOptions};
use crate::plan::SpmvPlan;
use crate::{CsrMatrix, Result, Scalar};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What tuning tried and chose.
#[derive(Clone, Debug)]
pub struct TuneReport {
    /// Each candidate's label and its time per product (ms); empty when the choice was remembered.
    pub candidates: Vec<(String, f64)>,
    /// The options chosen (every tunable parameter set) and the workgroup size.
    pub chosen: BccooOptions,
    /// The workgroup size chosen (invocations per workgroup).
    pub workgroup_size: u32,
    /// Wall-clock time of the search, builds and uploads included, pipeline compiles left out (as
    /// in a setup's split; zero when remembered).
    pub time: Duration,
    /// The choice came from an earlier tuning of the same matrix on the same adapter.
    pub remembered: bool,
}

/// Adapter, lane policy and given options; method; value type; matrix structure, as one line.
type Key = String;

fn memory() -> &'static Mutex<HashMap<Key, (BccooOptions, u32)>> {
    static M: OnceLock<Mutex<HashMap<Key, (BccooOptions, u32)>>> = OnceLock::new();
    M.get_or_init(Default::default)
}

/// One remembered choice as a line of a tuning file: `key<TAB>h w tile slices columns strategy
/// cache carry workgroup`.
fn encode(key: &str, o: &BccooOptions, wg: u32) -> String {
    let strategy = match o.strategy {
        Strategy::PerThread => "per-thread",
        _ => "cache",
    };
    let carry = match o.carry {
        Carry::TwoPass => "two",
        _ => "single",
    };
    let n = |v: Option<u32>| v.unwrap_or(0);
    format!(
        "{key}\t{} {} {} {} {} {strategy} {} {carry} {wg}",
        n(o.block_height),
        n(o.block_width),
        n(o.tile),
        n(o.slices),
        o.columns.name(),
        n(o.cache_factor)
    )
}

/// The choice a tuning file holds for `key` (the last line for it wins); lines that do not parse
/// are ignored (the matrix is tuned again).
fn lookup(text: &str, key: &str) -> Option<(BccooOptions, u32)> {
    text.lines().rev().find_map(|line| {
        let (k, v) = line.split_once('\t')?;
        if k != key {
            return None;
        }
        let f: Vec<&str> = v.split(' ').collect();
        let [h, w, tile, slices, columns, strategy, cache, carry, wg] = f.as_slice() else {
            return None;
        };
        let num = |s: &str| s.parse::<u32>().ok();
        let columns = [
            ColumnCoding::Auto,
            ColumnCoding::U32,
            ColumnCoding::U16,
            ColumnCoding::Delta16,
        ]
        .into_iter()
        .find(|c| c.name() == *columns)?;
        let strategy = match *strategy {
            "per-thread" => Strategy::PerThread,
            "cache" => Strategy::ResultCache,
            _ => return None,
        };
        let carry = match *carry {
            "single" => Carry::SinglePass,
            "two" => Carry::TwoPass,
            _ => return None,
        };
        let o = BccooOptions {
            block_height: Some(num(h)?),
            block_width: Some(num(w)?),
            tile: Some(num(tile)?),
            slices: Some(num(slices)?),
            columns,
            strategy,
            cache_factor: Some(num(cache)?),
            carry,
            ..Default::default()
        };
        Some((o, num(wg)?))
    })
}

/// The options that rebuild `plan` exactly: every choice it made, pinned (the spin limit from `o`).
fn pinned<T: Scalar>(plan: &SpmvPlan<T>, o: &BccooOptions) -> BccooOptions {
    let r = plan.bccoo().expect("a bccoo plan has a bccoo report");
    BccooOptions {
        block_height: Some(r.layout.block_height),
        block_width: Some(r.layout.block_width),
        tile: Some(r.layout.tile),
        slices: Some(r.layout.slices),
        columns: r.layout.columns,
        strategy: r.strategy,
        cache_factor: Some(r.cache_factor),
        carry: r.carry,
        tune: false,
        tune_file: None,
        tune_budget_products: None,
        spin_limit: o.spin_limit,
    }
}

/// A candidate this adapter cannot hold (an option out of its range, workgroup memory, a
/// binding size): the tuners skip it.
fn unfit(e: &crate::Error) -> bool {
    matches!(
        e,
        crate::Error::InvalidParameter { .. }
            | crate::Error::TooLargeForAdapter { .. }
            | crate::Error::DeviceLimit { .. }
    )
}

/// A search's best plan, and every candidate's label and time per product (ms).
type Searched<T> = (SpmvPlan<T>, Vec<(String, f64)>);

/// Rounds of a candidate's timing against the best so far (each keeps its fastest).
const ROUNDS: u32 = 3;

/// Tunes and returns the plan built with the chosen parameters.
pub(crate) fn tune<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<(SpmvPlan<T>, TuneReport)> {
    let (start, compiled) = (Instant::now(), gpu.compile_ns());
    // Where a tuning's time goes, for the debug log.
    let mark = |what: &str| {
        let ms = start.elapsed().as_secs_f64() * 1e3;
        log::debug!("tuning: {what} at {ms:.3} ms");
    };
    let file = opts.bccoo.tune_file.clone();
    let given = BccooOptions {
        tune: false,
        tune_file: None,
        ..opts.bccoo.clone()
    };
    let key = key_of::<T>(gpu, opts, &given, method, crate::matrix::fingerprint(a));
    if let Some((chosen, wg)) = recall(file.as_deref(), &key)? {
        let po = PlanOptions {
            bccoo: chosen.clone(),
            workgroup_size: Some(wg),
            ..opts.clone()
        };
        let plan = match crate::methods::build_through_gpu(gpu, a, method, &po)? {
            Some(plan) => plan,
            None => build(gpu, a, method, &po)?,
        };
        return Ok((plan, recalled(chosen, wg)));
    }
    mark("matrix fingerprinted");
    // Candidates are built on the GPU from one upload of the CSR where the plain build would be
    // (milliseconds each, against a host build of hundreds).
    let untuned = PlanOptions {
        bccoo: given.clone(),
        ..opts.clone()
    };
    let uploaded = if crate::methods::builds_on_gpu(gpu, a, method, &untuned)? {
        crate::matrix::UploadedCsr::new(gpu, a)?
    } else {
        None
    };
    let x: Vec<T> = crate::methods::common::probe_vector(a.ncols());
    let gx = GpuVector::from_slice(gpu, &x)?;
    let mut gy = GpuVector::filled(gpu, a.nrows(), T::from_f64(0.0))?;
    mark("matrix and vectors uploaded");
    let (plan, candidates) = match given.tune_budget_products {
        Some(budget) => guided(
            gpu,
            Source::Host(a, uploaded.as_ref()),
            method,
            opts,
            &given,
            budget,
            &gx,
            &mut gy,
        )?,
        None => staged(
            gpu,
            Source::Host(a, uploaded.as_ref()),
            method,
            opts,
            &given,
            &gx,
            &mut gy,
        )?,
    };
    let report = searched(gpu, &plan, &given, candidates, (start, compiled));
    remember(file.as_deref(), key, &report)?;
    Ok((plan, report))
}

/// The key of one tuning in the memory and in tuning files: the adapter, the lane policy, the
/// options left to the tuner, the method, the scalar and the matrix's fingerprint.
fn key_of<T: Scalar>(
    gpu: &Gpu,
    opts: &PlanOptions,
    given: &BccooOptions,
    method: Method,
    fingerprint: u64,
) -> Key {
    let info = gpu.info();
    format!(
        "{} {:?} {} {:?} {:?} {} {} {:016x}",
        info.name,
        info.backend,
        info.driver,
        opts.lanes,
        given,
        method.name(),
        T::NAME,
        fingerprint
    )
    .replace(['\t', '\n'], " ")
}

/// The choice remembered for `key`: with a tuning file, the file is the memory (what another
/// process tuned counts too).
fn recall(file: Option<&std::path::Path>, key: &Key) -> Result<Option<(BccooOptions, u32)>> {
    match file {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => Ok(lookup(&text, key)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(crate::Error::Io {
                path: path.to_owned(),
                source,
            }),
        },
        None => Ok(crate::lock(memory()).get(key).cloned()),
    }
}

/// The report of a choice taken from memory.
fn recalled(chosen: BccooOptions, workgroup_size: u32) -> TuneReport {
    TuneReport {
        candidates: Vec::new(),
        chosen,
        workgroup_size,
        time: Duration::ZERO,
        remembered: true,
    }
}

/// Remembers a search's choice under `key`, in the process and in the tuning file if any.
fn remember(file: Option<&std::path::Path>, key: Key, report: &TuneReport) -> Result<()> {
    let (chosen, wg) = (report.chosen.clone(), report.workgroup_size);
    if let Some(path) = file {
        use std::io::Write;
        let line = encode(&key, &chosen, wg);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "{line}"))
            .map_err(|source| crate::Error::Io {
                path: path.to_owned(),
                source,
            })?;
    }
    crate::lock(memory()).insert(key, (chosen, wg));
    Ok(())
}

/// The report of a search that chose `plan`: every remaining choice pinned to what it used,
/// and the time since `started` (a clock and the compile time then), compiles left out.
fn searched<T: Scalar>(
    gpu: &Gpu,
    plan: &SpmvPlan<T>,
    given: &BccooOptions,
    candidates: Vec<(String, f64)>,
    (started, compiled): (Instant, u64),
) -> TuneReport {
    TuneReport {
        candidates,
        chosen: pinned(plan, given),
        workgroup_size: plan
            .bccoo()
            .expect("a bccoo plan has a bccoo report")
            .layout
            .workgroup,
        time: started
            .elapsed()
            .saturating_sub(Duration::from_nanos(gpu.compile_ns() - compiled)),
        remembered: false,
    }
}

/// Tunes from the caller's CSR in GPU buffers (validated) by the guided search within `budget`
/// products, or the staged search without one, every candidate built on the GPU: nothing of the
/// matrix is read back but its fingerprint's chunk hashes (8 bytes per 4096 words) and the
/// block statistics' few words, under which the choice is remembered and looked up as a host
/// tuning's is (the same key for the same structure, tuning file included).
pub(crate) fn tune_gpu<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    method: Method,
    opts: &PlanOptions,
    budget: Option<u32>,
) -> Result<(SpmvPlan<T>, TuneReport)> {
    let (start, compiled) = (Instant::now(), gpu.compile_ns());
    let file = opts.bccoo.tune_file.clone();
    let given = BccooOptions {
        tune: false,
        tune_file: None,
        ..opts.bccoo.clone()
    };
    let key = key_of::<T>(
        gpu,
        opts,
        &given,
        method,
        crate::matrix::fingerprint_gpu(gpu, a)?,
    );
    if let Some((chosen, wg)) = recall(file.as_deref(), &key)? {
        let po = PlanOptions {
            bccoo: chosen.clone(),
            workgroup_size: Some(wg),
            ..opts.clone()
        };
        if let Some(plan) = super::gpu_build::prepare::<T>(gpu, a, method, &po, None)? {
            return Ok((plan, recalled(chosen, wg)));
        }
    }
    let x: Vec<T> = crate::methods::common::probe_vector(a.ncols);
    let gx = GpuVector::from_slice(gpu, &x)?;
    let mut gy = GpuVector::filled(gpu, a.nrows, T::from_f64(0.0))?;
    let source = Source::Gpu(a);
    let (plan, candidates) = match budget {
        Some(budget) => guided(gpu, source, method, opts, &given, budget, &gx, &mut gy)?,
        None => staged(gpu, source, method, opts, &given, &gx, &mut gy)?,
    };
    let report = searched(gpu, &plan, &given, candidates, (start, compiled));
    remember(file.as_deref(), key, &report)?;
    Ok((plan, report))
}

/// The staged search (see the module's notes): every parameter the caller left open, stage
/// after stage. Returns the best plan and every candidate's label and time.
#[allow(clippy::too_many_arguments)]
fn staged<T: Scalar>(
    gpu: &Gpu,
    src: Source<'_, T>,
    method: Method,
    opts: &PlanOptions,
    given: &BccooOptions,
    gx: &GpuVector<T>,
    gy: &mut GpuVector<T>,
) -> Result<Searched<T>> {
    let info = gpu.info();
    let given = given.clone();
    let mut reuse = Reuse::<T>::default();
    // The block sizes of the smallest footprints, for the block-size stage (counted before the
    // first build, which then takes the counts from `reuse`).
    let footprints = if given.block_height.is_none() || given.block_width.is_none() {
        src.smallest_footprints(gpu, &mut reuse)?
    } else {
        Vec::new()
    };
    let mut candidates = Vec::new();
    // Builds and times a candidate, returning the plan so that the winner is not built again.
    // The first candidate is timed after a warm-up that settles the clocks; each later one
    // against the best so far, in turns (both times come back: the best's is taken again).
    type Timed<T> = Option<(f64, Option<f64>, SpmvPlan<T>)>;
    // The blocks the best plan was built from (see `guided`).
    let mut best_blocks = super::gpu_build::Kept::default();
    let mut time =
        |o: &BccooOptions, wg: Option<u32>, best: Option<&SpmvPlan<T>>| -> Result<Timed<T>> {
            let po = PlanOptions {
                bccoo: o.clone(),
                workgroup_size: wg,
                ..opts.clone()
            };
            let plan = match src.build(gpu, method, &po, &mut reuse) {
                Ok(p) => p,
                Err(e) if unfit(&e) => {
                    reuse.gpu.restore(best_blocks.clone());
                    return Ok(None);
                }
                Err(e) => return Err(e),
            };
            let (ms, best_ms) = match best {
                None => (plan.time(gx, gy, 10)?.ms, None),
                Some(b) => {
                    let t = SpmvPlan::time_together(&[&plan, b], gx, gy, ROUNDS, 200, true)?;
                    (t[0], Some(t[1]))
                }
            };
            // The stages keep a candidate faster than the best's time of the same comparison:
            // the best's blocks stay in the reuse, and a loser's are freed with it.
            if best_ms.is_none_or(|b| ms < b) {
                best_blocks = reuse.gpu.keep();
            } else {
                reuse.gpu.restore(best_blocks.clone());
            }
            candidates.push((plan.bccoo().map_or(String::new(), |r| r.summary()), ms));
            Ok(Some((ms, best_ms, plan)))
        };

    let mut best = given.clone();
    let mut best_wg = opts.workgroup_size;
    let mut best_ms = f64::INFINITY;
    let mut best_plan: Option<SpmvPlan<T>> = None;
    // Every timed candidate as the options that rebuild it, every choice its plan made pinned
    // (but the column coding, which follows the layout): later stages build on the best of them,
    // so a candidate already timed is recognised and not timed again.
    let mut timed: HashSet<(BccooOptions, Option<u32>)> = HashSet::new();
    // Tries each value of one parameter on top of the best so far. A stage marked `unimodal`
    // stops at the first value slower than the best.
    macro_rules! stage {
        ($values:expr, $apply:expr) => {
            stage!($values, $apply, false)
        };
        ($values:expr, $apply:expr, $unimodal:expr) => {
            for v in $values {
                let mut o = best.clone();
                let mut wg = best_wg;
                #[allow(clippy::redundant_closure_call)]
                ($apply)(&mut o, &mut wg, v);
                if timed.contains(&(o.clone(), wg)) {
                    continue;
                }
                if let Some((ms, best_again, plan)) = time(&o, wg, best_plan.as_ref())? {
                    if let Some(b) = best_again {
                        best_ms = b;
                    }
                    let key = (
                        BccooOptions {
                            columns: given.columns,
                            ..pinned(&plan, &best)
                        },
                        plan.bccoo().map(|r| r.layout.workgroup),
                    );
                    timed.insert(key.clone());
                    if ms < best_ms {
                        best_ms = ms;
                        (best, best_wg) = key;
                        best_plan = Some(plan);
                    } else if $unimodal {
                        break;
                    }
                }
            }
        };
    }
    // The slice count comes first, fewest first: 1 is BCCOO, more is BCCOO+ (the paper's tuner
    // chooses the format too; `bccoo-plus` starts at 2). BCCOO+'s default (slices of x sized to
    // the cache) can be 32 slices, whose stacked empty rows make every other candidate slow to
    // build and to run; and more slices only pay while x is what limits, so the search stops at
    // the first slower count.
    // Slices narrower than 256 columns only add partial results.
    let max_slices = (src.ncols() / 256).max(2) as u32;
    let fewest_slices = if method == Method::BccooPlus { 2 } else { 1 };
    let slice_counts = |counts: &[u32]| -> Vec<u32> {
        counts
            .iter()
            .copied()
            .filter(|&s| s >= fewest_slices && (s == fewest_slices || s <= max_slices))
            .collect()
    };
    let set_slices = |o: &mut BccooOptions, _: &mut Option<u32>, s: u32| o.slices = Some(s);
    if given.slices.is_none() {
        stage!(slice_counts(&[1, 2, 4, 8, 16, 32]), set_slices, true);
    }
    if given.block_height.is_none() || given.block_width.is_none() {
        let sizes: Vec<(u32, u32)> = footprints
            .iter()
            .copied()
            .filter(|&(h, w)| {
                given.block_height.is_none_or(|g| g == h)
                    && given.block_width.is_none_or(|g| g == w)
            })
            .collect();
        // Each size at the slice count chosen so far and, when that is several, at one slice too:
        // blocks that pair rows can win without slices where single entries won with them.
        let mut slice_choices = vec![best.slices];
        if given.slices.is_none() && best.slices.is_some_and(|s| s > fewest_slices) {
            slice_choices.push(Some(fewest_slices));
        }
        let candidates: Vec<((u32, u32), Option<u32>)> = slice_choices
            .iter()
            .flat_map(|&s| sizes.iter().map(move |&hw| (hw, s)))
            .collect();
        stage!(
            candidates,
            |o: &mut BccooOptions, _: &mut Option<u32>, ((h, w), s): ((u32, u32), Option<u32>)| {
                o.block_height = Some(h);
                o.block_width = Some(w);
                o.slices = s;
            }
        );
    }
    if given.tile.is_none() {
        // Small tiles pay where gathers of x limit, large ones where blocks are dense.
        stage!(
            [4u32, 8, 16, 32, 64],
            |o: &mut BccooOptions, _: &mut Option<u32>, t| o.tile = Some(t)
        );
    }
    if opts.workgroup_size.is_none() {
        stage!([128u32, 256, 512], |_: &mut BccooOptions,
                                    wg: &mut Option<u32>,
                                    w| {
            *wg = Some(w)
        });
    }
    if given.strategy == Strategy::Auto && given.cache_factor.is_none() {
        let choices = [
            (Strategy::PerThread, 1u32),
            (Strategy::ResultCache, 1),
            (Strategy::ResultCache, 2),
        ];
        stage!(choices, |o: &mut BccooOptions,
                         _: &mut Option<u32>,
                         (s, f)| {
            o.strategy = s;
            o.cache_factor = Some(f);
        });
    }
    // Where single pass is allowed, time it against two passes; which wins depends on the layout.
    if given.carry == Carry::Auto && single_pass_is_safe(info) {
        stage!(
            [Carry::SinglePass, Carry::TwoPass],
            |o: &mut BccooOptions, _: &mut Option<u32>, c| o.carry = c
        );
    }
    // The slice counts next to the chosen one, once more on the final layout: the first round ran
    // on the default tile and workgroup.
    if let (None, Some(s)) = (given.slices, best.slices) {
        stage!(slice_counts(&[s * 2, s / 2]), set_slices);
    }
    let plan = match best_plan {
        Some(p) => p,
        // Nothing could be built (or nothing was left to search): the plain build reports why,
        // or is the plan.
        None => {
            let po = PlanOptions {
                bccoo: best.clone(),
                workgroup_size: best_wg,
                ..opts.clone()
            };
            src.build(gpu, method, &po, &mut Reuse::default())?
        }
    };
    Ok((plan, candidates))
}

/// What a search's builds leave for its next candidates: the last host format, the GPU builds'
/// counts, blocks and format.
#[derive(Default)]
struct Reuse<T: Scalar> {
    host: FormatCache<T>,
    gpu: BuildReuse,
}

/// Where a guided search builds its candidates from.
#[derive(Clone, Copy)]
enum Source<'s, T: Scalar> {
    /// The host CSR, and its upload where the GPU build takes it.
    Host(&'s CsrMatrix<T>, Option<&'s UploadedCsr>),
    /// The caller's CSR in GPU buffers, validated (always built on the GPU).
    Gpu(&'s GpuCsr<'s>),
}

impl<T: Scalar> Source<'_, T> {
    fn ncols(&self) -> usize {
        match self {
            Source::Host(a, _) => a.ncols(),
            Source::Gpu(a) => a.ncols,
        }
    }

    /// The block sizes of the smallest footprints ([`smallest_footprints`]), from block counts
    /// made on the GPU for a matrix given there (those of the last build where it left them).
    fn smallest_footprints(&self, gpu: &Gpu, reuse: &mut Reuse<T>) -> Result<Vec<(u32, u32)>> {
        match *self {
            Source::Host(a, _) => Ok(smallest_footprints(a)),
            Source::Gpu(a) => {
                let counts = reuse.gpu.block_counts::<T>(gpu, a)?;
                Ok(super::smallest_of_counts(
                    &counts,
                    std::mem::size_of::<T>() as u64,
                ))
            }
        }
    }

    /// Builds one candidate (see [`build_candidate`]).
    fn build(
        &self,
        gpu: &Gpu,
        method: Method,
        po: &PlanOptions,
        reuse: &mut Reuse<T>,
    ) -> Result<SpmvPlan<T>> {
        match *self {
            Source::Host(a, uploaded) => build_candidate(gpu, a, uploaded, method, po, reuse),
            Source::Gpu(a) => {
                let built = super::gpu_build::prepare_reusing(gpu, a, method, po, &mut reuse.gpu)?;
                let mut plan = built.ok_or_else(|| crate::Error::InvalidParameter {
                    name: "bccoo.tune",
                    value: "true".into(),
                    reason: "this adapter cannot build bccoo on the GPU for this value type".into(),
                })?;
                plan.report_mut().built_on_gpu = true;
                Ok(plan)
            }
        }
    }
}

/// Builds one candidate: on the GPU from the uploaded CSR where there is one (the GPU build
/// takes it), else on the host, reusing what earlier candidates built where they share it.
fn build_candidate<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    uploaded: Option<&UploadedCsr>,
    method: Method,
    po: &PlanOptions,
    reuse: &mut Reuse<T>,
) -> Result<SpmvPlan<T>> {
    if let Some(up) = uploaded {
        let built = super::gpu_build::prepare_reusing(gpu, &up.view(), method, po, &mut reuse.gpu)?;
        if let Some(mut plan) = built {
            plan.report_mut().built_on_gpu = true;
            return Ok(plan);
        }
    }
    build_reusing(gpu, a, method, po, &mut reuse.host)
}

/// Rounds of the guided search's timing (each candidate keeps its fastest).
const GUIDED_ROUNDS: u32 = 4;

/// Rounds after which a comparison is decided where the two differ by more than
/// [`GUIDED_CLEAR`] (most candidates do: docs/bccoo.md).
const GUIDED_FIRST_ROUNDS: u32 = 2;

/// How far apart a candidate and the best must be after [`GUIDED_FIRST_ROUNDS`] for the
/// comparison to stop there: three times the margin a candidate must win by.
const GUIDED_CLEAR: f64 = 0.03;

/// A guided candidate replaces the best only when its time is below this fraction of the best's
/// (warm samples in one submission vary by about 0.5%).
const GUIDED_MARGIN: f64 = 0.99;

/// GPU time of one sample of the guided search's timing, about, where the adapter times the
/// samples back to back with timestamps (docs/bccoo.md: a quarter of a millisecond buys more
/// candidates within a budget than one millisecond did, at about twice the samples' spread).
const GUIDED_SAMPLE_MS: f64 = 0.25;

/// The same where samples are timed on the host (each with its own submission and wait).
const GUIDED_SAMPLE_MS_HOST: f64 = 1.0;

/// The guided search: the untuned plan, then one parameter at a time on top of the best so far,
/// in the order and with the values the structure points at: for blocks of several entries the
/// next block size by footprint; the tile (8 then 4 for single-entry blocks, whose gathers of
/// `x` limit, 32 where 8 loses; 32 for larger blocks), vertical slices for single-entry blocks
/// where `x` is larger than a slice's share of the cache (2, 4, ... while each is faster, else
/// BCCOO+'s default count), for single-entry blocks the next block size by footprint (and a longer
/// tile if it won), the other write strategy (per-thread or the cache) and smaller workgroups
/// while faster (a quarter where a half loses; before the strategy where the default writes
/// per thread). A candidate
/// replaces the best only when [`GUIDED_MARGIN`] faster. First the untuned plan runs until the
/// GPU's clocks are up ([`Gpu::warm_up`]); each candidate is built and timed against the best so
/// far ([`GUIDED_SAMPLE_MS`] of products per sample, in turns, in one submission; two rounds,
/// and two more where the two are within [`GUIDED_CLEAR`]) and the loser dropped. Each build
/// reuses what the last one left where it can (`gpu_build::BuildReuse`). What the search spends
/// beyond the untuned plan's own build, pipeline compiles left out, stays within about `budget`
/// products of the untuned plan: a candidate is built only while most of it is left.
#[allow(clippy::too_many_arguments)]
fn guided<T: Scalar>(
    gpu: &Gpu,
    src: Source<'_, T>,
    method: Method,
    opts: &PlanOptions,
    given: &BccooOptions,
    budget: u32,
    gx: &GpuVector<T>,
    gy: &mut GpuVector<T>,
) -> Result<Searched<T>> {
    let ncols = src.ncols();
    let mut reuse = Reuse::<T>::default();
    let po = |o: &BccooOptions| PlanOptions {
        bccoo: BccooOptions {
            tune: false,
            tune_budget_products: None,
            ..o.clone()
        },
        ..opts.clone()
    };
    let first = src.build(gpu, method, &po(given), &mut reuse)?;
    // The untuned plan's time sets the budget and the samples' length.
    log::debug!("guided search: untuned plan built");
    let once = SpmvPlan::time_together(&[&first], gx, gy, 1, 2, false)?[0].max(1e-6);
    // Candidates compared at a GPU's idle clocks rank otherwise than settled (docs/bccoo.md):
    // the untuned plan runs until the clocks are up, which the budget does not count.
    if let Some(w) = first.warm_up(gx, gy, once)? {
        log::debug!(
            "guided search: warm-up {:.1} ms (warm at once: {})",
            w.ms,
            w.was_warm
        );
    }
    // From here the clock runs, without the time spent compiling pipelines.
    let (start, compiled) = (Instant::now(), gpu.compile_ns());
    let spent_ms = || {
        let ns = start.elapsed().as_nanos() as u64;
        ns.saturating_sub(gpu.compile_ns() - compiled) as f64 / 1e6
    };
    let timestamps = gpu.info().has(wgpu::Features::TIMESTAMP_QUERY) && !first.finishes_on_host();
    let sample_ms = if timestamps {
        GUIDED_SAMPLE_MS
    } else {
        GUIDED_SAMPLE_MS_HOST
    };
    let reps_for = |ms: f64| ((sample_ms / ms).ceil() as u32).clamp(2, 200);
    let mut reps = reps_for(once);
    let label = |p: &SpmvPlan<T>| p.bccoo().map_or(String::new(), |r| r.summary());
    // Plans timed against one another in turns, each keeping its fastest: in one submission
    // where the adapter has timestamps (the GPU does not idle between the samples).
    let compare = |plans: &[&SpmvPlan<T>], gy: &mut GpuVector<T>, reps: u32, rounds: u32| {
        let reps = vec![reps; plans.len()];
        match SpmvPlan::time_back_to_back(plans, gx, gy, rounds, &reps)? {
            Some(series) => {
                for (p, s) in plans.iter().zip(&series) {
                    let spent = spent_ms();
                    log::debug!("guided search: {} (at {spent:.1} ms): {s:.4?}", label(p));
                }
                Ok(series
                    .iter()
                    .map(|s| s.iter().copied().fold(f64::INFINITY, f64::min))
                    .collect())
            }
            None => SpmvPlan::time_together(plans, gx, gy, rounds, reps[0], false),
        }
    };
    // A candidate against the best: the first rounds, and the rest only where those leave the
    // two within GUIDED_CLEAR of each other (each keeps its fastest sample).
    let duel = |plans: [&SpmvPlan<T>; 2], gy: &mut GpuVector<T>, reps: u32| -> Result<Vec<f64>> {
        let first = compare(&plans, gy, reps, GUIDED_FIRST_ROUNDS)?;
        if (first[0] / first[1] - 1.0).abs() > GUIDED_CLEAR {
            return Ok(first);
        }
        let rest = compare(&plans, gy, reps, GUIDED_ROUNDS - GUIDED_FIRST_ROUNDS)?;
        Ok(first.iter().zip(&rest).map(|(a, b)| a.min(*b)).collect())
    };
    let ms0 = compare(&[&first], gy, reps, GUIDED_FIRST_ROUNDS)?[0].max(1e-6);
    reps = reps_for(ms0);
    let budget_ms = budget as f64 * ms0;
    // The next candidate is built while this much of the budget is left (a build costs about
    // as much as the untuned one did, which the budget does not count).
    let reserve = 0.3 * budget_ms;
    let r = first.bccoo().expect("a bccoo plan has a bccoo report");
    let (layout, sizes) = (r.layout, r.block_sizes.clone());
    let mut candidates = vec![(label(&first), ms0)];
    let mut best = first;
    // The blocks the best plan was built from, held while candidates are built from them.
    let mut best_blocks = reuse.gpu.keep();
    // The best so far as options and workgroup size (`None`: the plan's default).
    let mut best_o = (
        BccooOptions {
            columns: given.columns,
            ..pinned(&best, given)
        },
        opts.workgroup_size,
    );
    // Builds `best_o` changed by `change` and times it against the best, keeping the faster;
    // whether it won (false when it could not be built, or the budget is spent).
    type Change<'c> = &'c dyn Fn(&mut BccooOptions, &mut Option<u32>);
    let mut try_one = |change: Change,
                       best: &mut SpmvPlan<T>,
                       best_o: &mut (BccooOptions, Option<u32>),
                       candidates: &mut Vec<(String, f64)>|
     -> Result<bool> {
        let mut o = best_o.clone();
        change(&mut o.0, &mut o.1);
        if o == *best_o || budget_ms - spent_ms() < reserve {
            return Ok(false);
        }
        let po = PlanOptions {
            workgroup_size: o.1,
            ..po(&o.0)
        };
        let plan = match src.build(gpu, method, &po, &mut reuse) {
            Ok(p) => p,
            Err(e) if unfit(&e) => {
                reuse.gpu.restore(best_blocks.clone());
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        let t = duel([&plan, &*best], gy, reps)?;
        candidates.push((label(&plan), t[0]));
        // Kept only when faster by more than the samples' spread: a change that wins by less
        // is not worth the risk of a slower plan.
        if t[0] >= GUIDED_MARGIN * t[1] {
            // The best's blocks back in the reuse: the loser's are freed with it.
            reuse.gpu.restore(best_blocks.clone());
            return Ok(false);
        }
        best_blocks = reuse.gpu.keep();
        *best = plan;
        *best_o = o;
        Ok(true)
    };
    let writes_per_thread = best_o.0.strategy == Strategy::PerThread;
    let mut step = |change: Change| try_one(change, &mut best, &mut best_o, &mut candidates);
    let open_tile = given.tile.is_none();
    let open_size = given.block_height.is_none() || given.block_width.is_none();
    let next_size = sizes.get(1).copied().filter(|_| open_size);
    // A block size, with the slices found so far (`None`) or with `Some(slices)`.
    let size = |(h, w): (u32, u32), slices: Option<Option<u32>>| {
        move |o: &mut BccooOptions, _: &mut Option<u32>| {
            o.block_height = Some(h);
            o.block_width = Some(w);
            o.slices = slices.unwrap_or(o.slices);
            // Blocks of several entries gather fewer `x` per entry than the single entries a
            // tile of 4 can suit: at least 8 (docs/bccoo.md: short rows).
            if h * w > 1 && open_tile {
                o.tile = o.tile.map(|t| t.max(8));
            }
        }
    };
    let single_entry = layout.block_height * layout.block_width == 1;
    let mut single = single_entry;
    // Blocks of several entries try the next block size by footprint first: the tile found
    // for one need not suit the next (banded f32: 3x2 at tile 16, the staged tuner's choice,
    // lost to 3x1 at tile 32 when tried after the tile; tried first, the timed choice moved
    // from 1.06 to 1.00 of the staged tuner's, f64 banded from 1.09 to 1.04). Single-entry
    // blocks try it last, as before (f64 power_law lost its tile-8 step to the budget when not).
    if let Some((h, w)) = next_size.filter(|_| !single_entry) {
        if step(&size((h, w), None))? {
            single = h * w == 1;
        }
    }
    // Shorter tiles where gathers of `x` limit; where they do not, a longer one.
    let tile_step = |step: &mut dyn FnMut(Change) -> Result<bool>, single: bool| -> Result<()> {
        let half = |o: &mut BccooOptions, _: &mut Option<u32>| {
            o.tile = Some((o.tile.unwrap_or(16) / 2).max(4))
        };
        let double = |o: &mut BccooOptions, _: &mut Option<u32>| {
            o.tile = Some((o.tile.unwrap_or(16) * 2).min(64))
        };
        if single && step(&half)? {
            step(&half)?;
        } else {
            step(&double)?;
        }
        Ok(())
    };
    if open_tile {
        tile_step(&mut step, single)?;
    }
    // Slices for scattered columns (single-entry blocks); blocks of several entries found
    // columns close together.
    if given.slices.is_none() && (single || layout.slices > 1) {
        let scalar_bytes = std::mem::size_of::<T>() as u64;
        let x_bytes = ncols as u64 * scalar_bytes;
        let cache = super::cache_estimate(gpu, opts);
        // Slices narrower than 256 columns only add partial results.
        let most = (ncols / 256).min(32) as u32;
        let mut s = layout.slices;
        let before = s;
        if s > 2 {
            // BCCOO+ at its default: fewer slices while fewer are faster.
            while s > 2 && step(&|o, _| o.slices = Some(s / 2))? {
                s /= 2;
            }
        } else if x_bytes as f64 > super::slice_bytes(cache) {
            // Doubling while faster; where two lose to one, BCCOO+'s count for this cache (the
            // first doubling can lose where more slices win). An `x` that one slice's share of
            // the cache holds gains nothing from slices, only partial results to add.
            let by_x = super::slices_for_cache(ncols, scalar_bytes, cache).min(most);
            if 2 <= most && step(&|o, _| o.slices = Some(2))? {
                s = 2;
                while s * 2 <= most && step(&|o, _| o.slices = Some(s * 2))? {
                    s *= 2;
                }
            } else if by_x > 2 && step(&|o, _| o.slices = Some(by_x))? {
                s = by_x;
            }
        }
        // Slices change what each tile gathers: the tile found at the first count need not
        // suit the new one (docs/bccoo.md: f64 power_law and short_rows).
        if s != before && open_tile {
            tile_step(&mut step, single)?;
        }
    }
    if let Some((h, w)) = next_size.filter(|_| single_entry) {
        // The same block turned the other way when the first orientation loses: pairs in a row
        // and pairs in a column suit different structures, and their footprints are often close
        // (docs/bccoo.md: short rows).
        let turned = sizes
            .get(2)
            .copied()
            .filter(|&s| s == (w, h) && h != w && open_size);
        // At the caller's slices: those found for single entries need not suit blocks.
        let at_given = Some(given.slices);
        let won = step(&size((h, w), at_given))?
            || match turned {
                Some(t) => step(&size(t, at_given))?,
                None => false,
            };
        // Larger blocks hold more per load: a longer tile may pay again.
        if won && h * w > 1 && open_tile {
            step(&|o, _| o.tile = Some(o.tile.unwrap_or(16) * 2))?;
        }
    }
    // The other write strategy than the best's (the default already writes long rows per thread).
    let flip_strategy = given.strategy == Strategy::Auto && given.cache_factor.is_none();
    let strategy_step = |step: &mut dyn FnMut(Change) -> Result<bool>| -> Result<()> {
        if flip_strategy {
            step(&|o, _| {
                if o.strategy == Strategy::PerThread {
                    o.strategy = Strategy::ResultCache;
                    o.cache_factor = None;
                } else {
                    o.strategy = Strategy::PerThread;
                    o.cache_factor = Some(1);
                }
            })?;
        }
        Ok(())
    };
    // Smaller workgroups, halving while faster (more of them resident where sums carry less);
    // where the first halving loses, the quarter once: residency need not change monotonically.
    let workgroup_step = |step: &mut dyn FnMut(Change) -> Result<bool>| -> Result<()> {
        if opts.workgroup_size.is_none() {
            let mut wg = layout.workgroup;
            let mut halved = false;
            while wg > 128 && step(&|_, w| *w = Some(wg / 2))? {
                wg /= 2;
                halved = true;
            }
            if !halved && wg >= 512 {
                step(&|_, w| *w = Some(wg / 4))?;
            }
        }
        Ok(())
    };
    // Where the default already writes per thread (long block rows) the other strategy has not
    // won in the staged searches, smaller workgroups have: they go first while budget is left.
    if writes_per_thread {
        workgroup_step(&mut step)?;
        strategy_step(&mut step)?;
    } else {
        strategy_step(&mut step)?;
        workgroup_step(&mut step)?;
    }
    Ok((best, candidates))
}
