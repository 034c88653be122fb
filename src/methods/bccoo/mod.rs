//! `bccoo` and `bccoo-plus`: yaSpMV's bit-flag blocked COO with the matrix-based segmented sum
//! (Yan et al., PPoPP'14). The host build is in `format.rs`, the kernels in `shaders/bccoo/`, the
//! auto-tuner ([`BccooOptions::tune`]) in `tune.rs`.
//!
//! One product is one main dispatch: thread tiles of blocks summed sequentially, a workgroup scan,
//! rows written once (per invocation, or through a workgroup result cache and coalesced). Rows that
//! cross workgroups take a carry, by one of two paths:
//! - **single pass** (adjacent synchronization, no second kernel, no global barrier): logical
//!   workgroup ids from an atomic ticket; every workgroup publishes its slot (one 32-bit atomic word
//!   per value, two for f64, initialised to a sentinel) before it waits on anything, so only the
//!   workgroup that closes a row waits, on the slots of the workgroups that row crossed, in parallel
//!   and with a bounded spin. This departs from the paper's chain, where each workgroup without a
//!   row stop waits for its predecessor's sum before publishing its own: that chain is serial in the
//!   length of the row, this wait is not. If a spin
//!   runs out, the workgroup keeps its row, without the carry, in a pending slot and lists itself;
//!   the last workgroup of the dispatch to finish adds those carries, so the result is right
//!   anyway, still without a second kernel.
//! - **two pass**: nobody waits; a second small kernel adds the carries. For adapters where
//!   workgroups are not known to make progress while another spins (Metal, unknown drivers).

pub(crate) mod format;
pub(crate) mod gpu_build;
pub(crate) mod tune;

pub(crate) use format::BccooMatrix;
pub use format::{BccooLayout, ColumnCoding, Footprint};
pub use tune::TuneReport;

pub(crate) mod kernels;
pub(crate) use kernels::KERNELS;

use crate::gpu::{DeviceBuffer, Gpu, GpuInfo};
use crate::kernel::{LaneMode, Variant};
use crate::methods::common::{
    bad, check_workgroup_memory, chunk_limit, lane_mode, upload, upload_buffer, workgroup_size,
};
use crate::methods::{Method, PlanOptions};
use crate::plan::values::{GatherPart, SourceMaker, ValueLayout};
use crate::plan::{Binding, Grid, Phases, SpmvPlan, Stage};
use crate::{CsrMatrix, Error, Result, Scalar};
use rayon::prelude::*;
use std::sync::Arc;

/// How a workgroup writes the rows it completes (section 3.2.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Per-thread writes where the mean block row holds at least a thread tile of blocks (a tile
    /// then completes about one row, and the cache would only add work), the result cache
    /// elsewhere. Such rows in f64 blocks of 4 rows or f32 4x4 blocks take blocks half as large
    /// where that side is open (f64 2 rows, f32 2 columns); f64 blocks of 4 given rows keep the
    /// cache.
    #[default]
    Auto,
    /// Strategy 1: each invocation keeps its tile's sums to itself and writes each completed row
    /// straight to `y` (only the first row's sum waits for the scan).
    PerThread,
    /// Strategy 2: completed rows go to a result cache in workgroup memory
    /// ([`BccooOptions::cache_factor`] rows per invocation), written to `y` coalesced.
    ResultCache,
}

/// How carries cross workgroups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Carry {
    /// Single pass on adapters known to keep started workgroups running while another spins
    /// (Vulkan and DX12 on NVIDIA, AMD and Intel GPUs); two passes
    /// elsewhere (Metal, GL, CPU adapters, unknown drivers).
    #[default]
    Auto,
    /// Adjacent synchronization in the one kernel (waits that run out are finished by the last
    /// workgroup of the dispatch).
    SinglePass,
    /// A second kernel adds the carries; nothing ever waits.
    TwoPass,
}

/// Parameters of `bccoo` and `bccoo-plus`; `None` means "choose for this matrix and adapter"
/// (see [`BccooOptions::tune`] for choosing by timing).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BccooOptions {
    /// Block height (1..=4). Default: the size with the smallest footprint (halved where
    /// [`Strategy::Auto`] writes long rows per thread).
    pub block_height: Option<u32>,
    /// Block width (1, 2 or 4). Default: as the height.
    pub block_width: Option<u32>,
    /// Blocks per thread tile (4, 8, 16, 24, 32, 40, 64, 96 or 128); default 16.
    pub tile: Option<u32>,
    /// Vertical slices (a power of two up to 32). BCCOO is the one-slice case of BCCOO+: `bccoo`
    /// defaults to 1, and its tuning searches 1..=32 as the paper's tuner chooses between the two
    /// formats (Table 1), so a tuned `bccoo` plan may run BCCOO+. `bccoo-plus` takes at least 2;
    /// default: slices of `x` about an eighth of the adapter's cache each (`default_slices`).
    pub slices: Option<u32>,
    /// How block column indices are stored; default [`ColumnCoding::Auto`].
    pub columns: ColumnCoding,
    /// How a workgroup writes the rows it completes; default [`Strategy::Auto`].
    pub strategy: Strategy,
    /// Result-cache rows per invocation (1 or 2, the paper's range); default 2 where workgroup
    /// memory allows (1, unused, with per-thread writes). Given, [`Strategy::Auto`] means the
    /// cache.
    pub cache_factor: Option<u32>,
    /// How partial row sums cross workgroups; default [`Carry::Auto`].
    pub carry: Carry,
    /// Choose every parameter left `None` by timing candidates on this adapter (section 4); the
    /// choice is remembered for the same matrix, adapter and method.
    pub tune: bool,
    /// A text file that remembers tuning choices across processes: read before tuning, appended
    /// to after (the matrix is recognised by a hash of its structure).
    pub tune_file: Option<std::path::PathBuf>,
    /// With `tune`: a guided search instead of the staged one, spending about this many products
    /// (of the untuned plan) on its builds and timings: a handful of candidates chosen from the
    /// matrix's structure (the next block size by footprint, a tile for gathers or for dense
    /// blocks, slices where `x` is large), each timed for a few products, and the best of their
    /// improvements combined. `None`: the staged search of every parameter (seconds).
    pub tune_budget_products: Option<u32>,
    /// Polls per slot word before a single-pass wait gives up and leaves the carry to the last
    /// workgroup of the dispatch; 0: nobody waits, the last workgroup adds every carry (tests use
    /// it to exercise that path). Default 1 048 576.
    pub spin_limit: Option<u32>,
}

/// Default of [`BccooOptions::spin_limit`].
pub(crate) const DEFAULT_SPIN_LIMIT: u32 = 1 << 20;

/// Mirrors `struct Params` in shaders/bccoo/common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct BccooParams {
    padded_blocks: u32,
    out_rows: u32,
    ncols: u32,
    groups: u32,
    group_threads: u32,
    escape_base: u32,
    thread_escape_base: u32,
    group_info_base: u32,
    carry_base: u32,
    carry_groups: u32,
    tile: u32,
    stall_unit: u32,
}

/// Mirrors `struct CombineParams` in shaders/bccoo/combine.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct CombineParams {
    nrows: u32,
}

/// Words of the `state` buffer before the repair list (shaders/bccoo/common.wgsl, STATE_LIST).
const STATE_HEADER: usize = 4;
/// Index of the running count of stalled waits in `state`.
const STATE_STALLS: usize = 3;

/// How a `bccoo` plan is laid out, what it costs in memory, and how it was chosen.
#[derive(Clone, Debug)]
pub struct BccooReport {
    /// The layout used (column coding resolved).
    pub layout: BccooLayout,
    /// The write strategy used (never `Auto`).
    pub strategy: Strategy,
    /// Result-cache rows per invocation (meaningful with [`Strategy::ResultCache`]).
    pub cache_factor: u32,
    /// The carry scheme used (never `Auto`).
    pub carry: Carry,
    /// The team reduction path the kernels were built for.
    pub lanes: LaneMode,
    /// Bytes of each part of the format on the GPU.
    pub footprint: Footprint,
    /// Workgroups the main kernel dispatches.
    pub groups: usize,
    /// Workgroups whose first row began in an earlier one.
    pub carry_groups: usize,
    /// The most workgroups back that any carried row began (its chain of published sums).
    pub longest_chain: u32,
    /// The block sizes the options allowed, smallest footprint first, when the plan chose its
    /// block size (the first is the one it took: a half-size block goes first where
    /// [`Strategy::Auto`] took it for long rows); empty when the size was given.
    pub block_sizes: Vec<(u32, u32)>,
    /// Set when the parameters were chosen by timing.
    pub tuning: Option<tune::TuneReport>,
    state: Arc<DeviceBuffer>,
}

impl BccooReport {
    /// Single-pass waits that ran out of spins (and whose carries the last workgroup added) since
    /// the plan was built; reads a counter back from the GPU.
    pub fn stalls(&self, gpu: &Gpu) -> Result<u32> {
        Ok(gpu.read_buffer::<u32>(&self.state, STATE_HEADER)?[STATE_STALLS])
    }

    /// One line for reports: `hxw tile T wg W slices S cols C strategy carry`.
    pub fn summary(&self) -> String {
        let l = &self.layout;
        format!(
            "{}x{} tile {} wg {} slices {} cols {} {} {}",
            l.block_height,
            l.block_width,
            l.tile,
            l.workgroup,
            l.slices,
            l.columns.name(),
            match self.strategy {
                Strategy::PerThread => "per-thread".to_owned(),
                _ => format!("cache x{}", self.cache_factor),
            },
            match self.carry {
                Carry::TwoPass => "two-pass",
                _ => "single-pass",
            }
        )
    }
}

/// Whether this adapter is known to keep started workgroups running while another spins: GPUs of
/// NVIDIA, AMD and Intel through Vulkan or DX12. Not Metal (no such promise), not GL or unknown
/// drivers, and not CPU adapters: there a spinning workgroup holds one of the few cores that the
/// workgroup it waits on needs, and an OS that deschedules the latter turns the wait into a stall
/// (single pass is still correct there, the last workgroup finishing such waits, and tested).
pub(crate) fn single_pass_is_safe(info: &GpuInfo) -> bool {
    let known_vendor = matches!(info.vendor, 0x10de | 0x1002 | 0x8086);
    let backend_ok = matches!(info.backend, wgpu::Backend::Vulkan | wgpu::Backend::Dx12);
    known_vendor && backend_ok && info.device_type != wgpu::DeviceType::Cpu
}

/// The block size with the smallest footprint, and the four smallest (the paper's pruning).
pub(crate) fn smallest_footprints<T: Scalar>(a: &CsrMatrix<T>) -> Vec<(u32, u32)> {
    smallest_of_counts(&block_counts(a, None), std::mem::size_of::<T>() as u64)
}

/// The block counts of every height and width, counted on the host (`only`: that height's
/// alone, the others left zero).
fn block_counts<T: Scalar>(a: &CsrMatrix<T>, only: Option<u32>) -> BlockCounts {
    format::BLOCK_HEIGHTS
        .iter()
        .map(|&h| match only {
            Some(o) if o != h => [0; 3],
            _ => format::block_counts(a, h),
        })
        .collect()
}

/// [`smallest_footprints`] from the block counts of every height (in [`format::BLOCK_HEIGHTS`]
/// order) and width (in [`format::BLOCK_WIDTHS`] order), however they were counted.
pub(crate) fn smallest_of_counts(counts: &[[u64; 3]], scalar_bytes: u64) -> Vec<(u32, u32)> {
    let mut sizes: Vec<(u64, u32, u32)> = Vec::new();
    for (&h, counts) in format::BLOCK_HEIGHTS.iter().zip(counts) {
        for (i, &w) in format::BLOCK_WIDTHS.iter().enumerate() {
            sizes.push((format::block_footprint(counts[i], h, w, scalar_bytes), h, w));
        }
    }
    sizes.sort();
    sizes.into_iter().take(4).map(|(_, h, w)| (h, w)).collect()
}

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    let info = gpu.info();
    if T::NEEDS_F64 && !info.has(wgpu::Features::SHADER_INT64) {
        return Err(Error::MissingFeature {
            adapter: info.name.clone(),
            feature: "SHADER_INT64",
            needed_for: "bccoo's f64 carries (the bit cast of an f64 into two 32-bit words)".into(),
            hint: " (use f32, or another method for f64)",
        });
    }
    if opts.bccoo.tune {
        let (plan, report) = tune::tune(gpu, a, method, opts)?;
        return Ok(with_tuning(plan, report));
    }
    build(gpu, a, method, opts)
}

/// The plan from the caller's CSR in GPU buffers (validated), built on the GPU, or `None` where
/// the host builds it: f64 without 64-bit integers in shaders (the host path refuses it). A
/// tuning (guided or staged) searches from the buffers.
pub(crate) fn prepare_gpu<T: Scalar>(
    gpu: &Gpu,
    a: &crate::matrix::GpuCsr,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<SpmvPlan<T>>> {
    let int64 = gpu.info().has(wgpu::Features::SHADER_INT64);
    if opts.bccoo.tune && (int64 || !T::NEEDS_F64) {
        let budget = opts.bccoo.tune_budget_products;
        let (plan, report) = tune::tune_gpu(gpu, a, method, opts, budget)?;
        return Ok(Some(with_tuning(plan, report)));
    }
    gpu_build::prepare(gpu, a, method, opts, None)
}

/// `plan` with its tuning's report in its `bccoo` report.
fn with_tuning<T: Scalar>(mut plan: SpmvPlan<T>, report: tune::TuneReport) -> SpmvPlan<T> {
    let mut detail = plan
        .bccoo()
        .expect("a bccoo plan has a bccoo report")
        .clone();
    detail.tuning = Some(report);
    plan.report_mut().detail = Some(Arc::new(detail));
    plan
}

/// The parameters of one build, from the options or chosen for the adapter.
struct Params {
    /// The block sizes the options allow, smallest footprint first, the one taken moved first
    /// (empty when given).
    block_sizes: Vec<(u32, u32)>,
    lanes: LaneMode,
    tile: u32,
    h: u32,
    w: u32,
    slices: u32,
    strategy: Strategy,
    carry: Carry,
    wg: u32,
    cache_factor: u32,
    spin: u32,
}

impl Params {
    /// The format's layout (the column coding as asked).
    fn layout(&self, opts: &PlanOptions) -> BccooLayout {
        BccooLayout {
            block_height: self.h,
            block_width: self.w,
            tile: self.tile,
            workgroup: self.wg,
            slices: self.slices,
            columns: opts.bccoo.columns,
        }
    }
}

/// Of the adapter's last-level cache, the share one vertical slice of `x` may take: the rest
/// holds the slice's share of the other streams and the other workgroups' lines.
const SLICE_OF_CACHE: f64 = 1.0 / 8.0;

/// BCCOO+'s default slice count on `gpu` ([`slices_for_cache`] with the Auto profile's cache
/// estimate: wgpu does not report cache sizes).
fn default_slices(gpu: &Gpu, opts: &PlanOptions, ncols: usize, scalar_bytes: u64) -> u32 {
    slices_for_cache(ncols, scalar_bytes, cache_estimate(gpu, opts))
}

/// The Auto profile's estimate of `gpu`'s last-level cache in bytes (wgpu reports none).
fn cache_estimate(gpu: &Gpu, opts: &PlanOptions) -> f64 {
    let info = gpu.info();
    crate::profile::profile_for(gpu, &opts.auto)
        .unwrap_or_else(|_| crate::profile::builtin_for(info.vendor, info.device_type))
        .cache_bytes
}

/// Slices of `x` about [`SLICE_OF_CACHE`] of a cache of `cache_bytes` each (a profile without
/// an estimate: the generic profile's 8 MiB), the nearest power of two in 2..=32, and none
/// narrower than 256 columns where `x` has 512 or more.
pub(crate) fn slices_for_cache(ncols: usize, scalar_bytes: u64, cache_bytes: f64) -> u32 {
    let x_bytes = (ncols as u64 * scalar_bytes) as f64;
    let by_cache = (x_bytes / slice_bytes(cache_bytes)).max(1.0).log2().round() as u32;
    let most = (ncols / 256).clamp(2, 32) as u32;
    (1u32 << by_cache.min(5)).clamp(2, most)
}

/// The bytes of `x` one vertical slice should hold on a cache of `cache_bytes` (without an
/// estimate: the generic profile's 8 MiB).
fn slice_bytes(cache_bytes: f64) -> f64 {
    let cache = if cache_bytes.is_finite() && cache_bytes > 0.0 {
        cache_bytes
    } else {
        8.0 * 1048576.0
    };
    cache * SLICE_OF_CACHE
}

/// Block counts of every height (in [`format::BLOCK_HEIGHTS`] order) and width (in
/// [`format::BLOCK_WIDTHS`] order).
type BlockCounts = Vec<[u64; 3]>;

/// Resolves and checks the options: block size, slices, strategy, carry path, workgroup size and
/// cache factor (within the adapter's workgroup memory), spin limit.
/// `count_blocks` gives the block counts (asked only when the options leave the block size or the
/// strategy open; with a height, only that height's need be counted).
fn params<T: Scalar>(
    gpu: &Gpu,
    (nrows, ncols): (usize, usize),
    count_blocks: &mut dyn FnMut(Option<u32>) -> Result<BlockCounts>,
    method: Method,
    opts: &PlanOptions,
) -> Result<Params> {
    let info = gpu.info();
    let o = &opts.bccoo;
    let s = std::mem::size_of::<T>() as u64;
    let lanes = lane_mode(gpu, opts.lanes)?;
    let at_least = if lanes == LaneMode::Subgroup {
        info.subgroup_max_size
    } else {
        1
    };
    let tile = o.tile.unwrap_or(16);
    if !kernels::BCCOO_TILES.contains(&tile) {
        return Err(bad(
            "bccoo.tile",
            tile,
            format!("must be one of {:?}", kernels::BCCOO_TILES),
        ));
    }
    // Every height's counts where the block size is open; only the given height's otherwise.
    let mut counted: Option<BlockCounts> = None;
    let mut counts = |height: Option<u32>| -> Result<BlockCounts> {
        if counted.is_none() {
            counted = Some(count_blocks(height)?);
        }
        Ok(counted.clone().unwrap_or_default())
    };
    let blocks_of = |counts: &BlockCounts, h: u32, w: u32| {
        let hi = format::BLOCK_HEIGHTS.iter().position(|&x| x == h);
        let wi = format::BLOCK_WIDTHS.iter().position(|&x| x == w);
        hi.zip(wi).and_then(|(hi, wi)| Some(counts.get(hi)?[wi]))
    };
    // Block rows long enough that a thread tile completes at most about one of them: there the
    // result cache only adds a barrier and a pass over workgroup memory, and per-thread writes
    // measured faster (docs/bccoo.md). BCCOO+'s slices are not counted: a block row's blocks
    // mostly fall in few slices where rows are long and local (banded: per-thread 1.2x faster
    // at 2 slices), though scattered long rows split across many (wide, 4 slices: 0.97x).
    let long_rows = |counts: &BlockCounts, (h, w): (u32, u32)| {
        blocks_of(counts, h, w)
            .is_some_and(|b| b >= nrows.div_ceil(h as usize).max(1) as u64 * tile as u64)
    };
    let mut block_sizes = Vec::new();
    let mut chosen_per_thread = None;
    let (h, w) = match (o.block_height, o.block_width) {
        (Some(h), Some(w)) => (h, w),
        (h, w) => {
            let counts = counts(None)?;
            block_sizes = smallest_of_counts(&counts, s)
                .into_iter()
                .filter(|&(bh, bw)| h.is_none_or(|h| h == bh) && w.is_none_or(|w| w == bw))
                .collect();
            let mut first = block_sizes
                .first()
                .copied()
                .unwrap_or((h.unwrap_or(1), w.unwrap_or(1)));
            // f64 blocks of 3 rows ran far slower than 1x1 despite their smaller footprint, per
            // thread and with the cache alike (docs/bccoo.md), so an open height takes the next
            // size of another height by footprint, else 1x1.
            if s == 8 && h.is_none() && first.0 == 3 {
                let other = block_sizes.iter().copied().find(|b| b.0 != 3);
                first = other.unwrap_or((1, w.unwrap_or(1)));
                block_sizes.retain(|&b| b != first);
                block_sizes.insert(0, first);
            }
            // Long block rows are written per thread, which holds a batch of blocks' products
            // in registers: f64 blocks of 4 rows and f32 blocks of 16 entries measured slower
            // there than blocks half as large (f64 halves the height, its sums being twice the
            // size; f32 the width, a taller block completing rows less often). Halving never
            // adds fill, only a column index per block at most (2 of an f32 4x4 block's 66 bytes,
            // of an f64 4-row block's up to 130).
            let (large, halved) = if s == 8 {
                (first.0 == 4, (first.0 / 2, first.1))
            } else {
                (first.0 * first.1 == 16, (first.0, first.1 / 2))
            };
            let swap = o.strategy == Strategy::Auto
                && o.cache_factor.is_none()
                && large
                && if s == 8 { h.is_none() } else { w.is_none() }
                && long_rows(&counts, first)
                && long_rows(&counts, halved);
            if swap {
                chosen_per_thread = Some(true);
                block_sizes.retain(|&b| b != halved);
                block_sizes.insert(0, halved);
                halved
            } else {
                first
            }
        }
    };
    // Checked before they size anything (workgroup memory below grows with the height).
    if !format::BLOCK_HEIGHTS.contains(&h) {
        return Err(bad(
            "bccoo.block_height",
            h,
            format!("must be one of {:?}", format::BLOCK_HEIGHTS),
        ));
    }
    if !format::BLOCK_WIDTHS.contains(&w) {
        return Err(bad(
            "bccoo.block_width",
            w,
            format!("must be one of {:?}", format::BLOCK_WIDTHS),
        ));
    }
    let slices = match method {
        Method::BccooPlus => {
            let slices = o
                .slices
                .unwrap_or_else(|| default_slices(gpu, opts, ncols, s));
            if slices < 2 {
                return Err(bad(
                    "bccoo.slices",
                    slices,
                    "bccoo-plus needs at least 2 vertical slices (bccoo is the 1-slice format)",
                ));
            }
            slices
        }
        _ => o.slices.unwrap_or(1),
    };
    let strategy = match o.strategy {
        Strategy::Auto => {
            // Not f64 blocks of 4 rows: their per-thread sums measured slower than the cache's.
            // A given cache factor asks for the cache.
            let per = match chosen_per_thread {
                Some(p) => p,
                None if o.cache_factor.is_some() => false,
                None => !(s == 8 && h == 4) && long_rows(&counts(Some(h))?, (h, w)),
            };
            if per {
                Strategy::PerThread
            } else {
                Strategy::ResultCache
            }
        }
        s => s,
    };
    let carry = match o.carry {
        Carry::Auto if single_pass_is_safe(info) => Carry::SinglePass,
        Carry::Auto => Carry::TwoPass,
        c => c,
    };
    // A forced option works or is refused: on GL, waits between workgroups were seen to succeed
    // on stale slots (rows left unwritten), so adjacent synchronization is not offered there.
    if carry == Carry::SinglePass && info.backend == wgpu::Backend::Gl {
        return Err(Error::Unsupported {
            method: method.name(),
            what: "carry sums in a single pass (Carry::SinglePass) on the GL backend",
            why: "waits between workgroups gave wrong results there; use Carry::TwoPass or Auto",
        });
    }
    // Workgroup memory: the scan's vec4 sums and flags, the cache, the lane module's buffer.
    let have = info.limits.max_compute_workgroup_storage_size as u64;
    let cache_factor_ok = |f: u32| kernels::BCCOO_CACHE_FACTORS.contains(&f);
    if let Some(f) = o.cache_factor.filter(|&f| !cache_factor_ok(f)) {
        return Err(bad(
            "bccoo.cache_factor",
            f,
            format!("must be one of {:?}", kernels::BCCOO_CACHE_FACTORS),
        ));
    }
    let needs = |wg: u32, f: u32| {
        let fixed = wg as u64 * (4 * s + 4)
            + if lanes == LaneMode::Workgroup {
                wg as u64 * s
            } else {
                0
            }
            + 16;
        fixed
            + if strategy == Strategy::ResultCache {
                f as u64 * wg as u64 * h as u64 * s
            } else {
                0
            }
    };
    // The largest workgroup that fits by default; the tuner times 128, 256 and 512.
    let default_wg = [512, 256, 128, 64]
        .into_iter()
        .find(|&wg| needs(wg, o.cache_factor.unwrap_or(1)) <= have)
        .unwrap_or(64);
    let wg = workgroup_size(gpu, opts.workgroup_size, default_wg, at_least)?;
    let cache_factor = match o.cache_factor {
        Some(f) => f,
        // Per-thread writes have no cache (one variant, not two with the same code).
        None if strategy == Strategy::PerThread => 1,
        None if needs(wg, 2) <= have => 2,
        None => 1,
    };
    check_workgroup_memory(gpu, "workgroup_size", wg, needs(wg, cache_factor))?;
    let spin = o.spin_limit.unwrap_or(DEFAULT_SPIN_LIMIT);

    Ok(Params {
        block_sizes,
        lanes,
        tile,
        h,
        w,
        slices,
        strategy,
        carry,
        wg,
        cache_factor,
        spin,
    })
}

/// BCCOO+'s second pass: adds the slices' partial results (`out`) into y.
fn combine_stage<T: Scalar>(
    gpu: &Gpu,
    nrows: usize,
    f: &FormatOnGpu,
    out: Binding,
) -> Result<Stage> {
    let overrides = vec![
        ("WG_SIZE", 256),
        ("HEIGHT", f.layout.block_height),
        ("SLICES", f.layout.slices),
        ("MAPPED", f.mapped as u32),
    ];
    let combine = gpu.stage_pipeline(&Variant::new(
        kernels::BCCOO_COMBINE,
        T::WGSL,
        LaneMode::Workgroup,
        overrides,
    ))?;
    let cp = CombineParams {
        nrows: nrows as u32,
    };
    Ok(Stage {
        pipeline: combine,
        bindings: vec![
            out,
            Binding::Y,
            Binding::Coeffs,
            Binding::Owned(Arc::new(
                gpu.uniform_buffer("bccoo+ combine", bytemuck::bytes_of(&cp)),
            )),
            f.row_map.clone(),
        ],
        grid: Grid::Direct(gpu.grid((nrows as u32).div_ceil(256))),
    })
}

/// A BCCOO format in GPU buffers (built on the host and uploaded, or built on the GPU): what the
/// kernels bind and what the plan and its report say of it.
#[derive(Clone)]
pub(crate) struct FormatOnGpu {
    /// The layout, column coding resolved.
    pub layout: BccooLayout,
    /// Result rows the main kernel writes.
    pub result_rows: usize,
    /// Workgroup tiles.
    pub groups: usize,
    /// Workgroups that carry a row from an earlier one.
    pub carry_groups: usize,
    /// The longest carry chain.
    pub longest_chain: u32,
    /// Zero blocks of empty block rows.
    pub empty_row_blocks: usize,
    /// BCCOO+ leaving empty block rows out: the combining pass reads through the row map.
    pub mapped: bool,
    /// Bytes of each part.
    pub footprint: Footprint,
    /// Row-stop bit flags.
    pub flags: Binding,
    /// Column words, then the escapes from `escape_base`.
    pub columns: Binding,
    pub escape_base: u32,
    /// The value planes.
    pub values: Arc<DeviceBuffer>,
    /// Thread rows, then group info, the carry list and thread escapes from their bases.
    pub aux: Binding,
    pub group_info_base: u32,
    pub carry_base: u32,
    pub thread_escape_base: u32,
    /// BCCOO+'s row map (a placeholder word when not mapped).
    pub row_map: Binding,
}

impl FormatOnGpu {
    /// Uploads a host build.
    fn upload<T: Scalar>(gpu: &Gpu, m: &BccooMatrix<T>, nnz: usize) -> Result<Self> {
        let mut aux = m.thread_row.clone();
        let group_info_base = aux.len() as u32;
        aux.extend_from_slice(&m.group_info);
        let carry_base = aux.len() as u32;
        aux.extend_from_slice(&m.carry_groups);
        let thread_escape_base = aux.len() as u32;
        aux.extend_from_slice(&m.thread_escape);
        let mut cols = m.columns.clone();
        let escape_base = cols.len() as u32;
        cols.extend_from_slice(&m.escapes);
        let row_map = if m.row_map.is_empty() {
            vec![0u32]
        } else {
            m.row_map.clone()
        };
        Ok(Self {
            layout: m.layout,
            result_rows: m.result_rows,
            groups: m.groups,
            carry_groups: m.carry_groups.len(),
            longest_chain: m
                .group_info
                .iter()
                .map(|i| i >> format::GROUP_CHAIN_SHIFT)
                .max()
                .unwrap_or(0),
            empty_row_blocks: m.empty_row_blocks,
            mapped: !m.row_map.is_empty(),
            footprint: m.footprint(nnz),
            flags: upload(gpu, "bccoo flags", &m.flags)?,
            columns: upload(gpu, "bccoo columns", &cols)?,
            escape_base,
            values: upload_buffer(gpu, "bccoo values", &m.values)?,
            aux: upload(gpu, "bccoo aux", &aux)?,
            group_info_base,
            carry_base,
            thread_escape_base,
            row_map: upload(gpu, "bccoo+ row map", &row_map)?,
        })
    }
}

/// Builds the plan for fully or partly given options (no timing).
pub(crate) fn build<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    build_reusing(gpu, a, method, opts, &mut None)
}

/// The last host format a tuning built, for the candidates that differ from it only in how the
/// kernel runs it (strategy, result cache, carry path): they skip the conversion.
pub(crate) type FormatCache<T> = Option<(BccooLayout, Arc<BccooMatrix<T>>)>;

/// [`build`], converting only when `cache` holds no format of the same layout.
pub(crate) fn build_reusing<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
    cache: &mut FormatCache<T>,
) -> Result<SpmvPlan<T>> {
    let mut phases = Phases::start(gpu);
    let s = std::mem::size_of::<T>() as u64;
    let p = params::<T>(
        gpu,
        (a.nrows(), a.ncols()),
        &mut |only| Ok(block_counts(a, only)),
        method,
        opts,
    )?;
    let (h, w) = (p.h, p.w);
    let layout = p.layout(opts);
    phases.analysis();
    let m = match cache {
        Some((l, m)) if *l == layout => m.clone(),
        _ => {
            let m = Arc::new(BccooMatrix::from_csr(a, &layout)?);
            *cache = Some((layout, m.clone()));
            m
        }
    };
    phases.build();
    check_values_fit(gpu, opts, m.values.len() as u64 * s, m.padded_blocks, h, w)?;
    let format = FormatOnGpu::upload(gpu, &m, a.nnz())?;
    // Value updates gather into the blocks; their sources are made at the first update.
    let (shape, structure) = (a.shape(), Arc::new(structure_of(a)));
    let make: SourceMaker = Box::new(move || value_sources(shape, &structure, &layout));
    let gather = GatherPart::lazy(format.values.clone(), make);
    let plan = assemble(
        gpu,
        a.shape(),
        format,
        &p,
        method,
        ValueLayout::Blocks(vec![gather]),
    )?;
    Ok(finish(plan, phases))
}

/// Puts the setup's split into the plan's report.
fn finish<T: Scalar>(mut plan: SpmvPlan<T>, mut phases: Phases) -> SpmvPlan<T> {
    phases.upload();
    plan.report_mut().split = phases.split;
    plan
}

/// The value planes within one storage binding (bccoo does not split matrices into chunks).
fn check_values_fit(
    gpu: &Gpu,
    opts: &PlanOptions,
    values_bytes: u64,
    padded_blocks: usize,
    h: u32,
    w: u32,
) -> Result<()> {
    let limit = chunk_limit(gpu, opts);
    if values_bytes > limit {
        return Err(Error::TooLargeForAdapter {
            what: format!("bccoo's value planes ({padded_blocks} blocks of {h}x{w}; bccoo does not split matrices into chunks)"),
            bytes: values_bytes,
            limit_name: "max_storage_buffer_binding_size",
            limit,
        });
    }
    Ok(())
}

/// The plan around a format on the GPU: the main kernel, the carry and combining passes, and
/// how values are updated.
fn assemble<T: Scalar>(
    gpu: &Gpu,
    shape: (usize, usize, usize),
    f: FormatOnGpu,
    p: &Params,
    method: Method,
    values: ValueLayout,
) -> Result<SpmvPlan<T>> {
    let (nrows, ncols, _) = shape;
    let s = std::mem::size_of::<T>();
    let &Params {
        ref block_sizes,
        lanes,
        tile,
        h,
        w,
        slices,
        strategy,
        carry,
        wg,
        cache_factor,
        spin,
    } = p;
    let mut params = BccooParams {
        padded_blocks: (f.groups as u64 * f.layout.group_blocks()) as u32,
        out_rows: f.result_rows as u32,
        ncols: ncols as u32,
        groups: f.groups as u32,
        group_threads: wg,
        escape_base: f.escape_base,
        thread_escape_base: f.thread_escape_base,
        group_info_base: f.group_info_base,
        carry_base: f.carry_base,
        carry_groups: f.carry_groups as u32,
        tile,
        stall_unit: 0,
    };

    let single = carry == Carry::SinglePass;
    // The main and carry kernels are assembled per block height.
    // BCCOO+'s slices multiply into partial results with a pair of their own (1, 0), bound.
    let stage_pipeline = |v: &Variant| {
        if slices > 1 {
            gpu.bound_stage_pipeline(v)
        } else {
            gpu.stage_pipeline(v)
        }
    };
    let main = stage_pipeline(
        &Variant::new(
            kernels::BCCOO,
            T::WGSL,
            lanes,
            vec![
                ("WG_SIZE", wg),
                ("WIDTH", w),
                ("COLS", f.layout.columns.shader_code()),
                (
                    "STRATEGY",
                    if strategy == Strategy::PerThread {
                        1
                    } else {
                        2
                    },
                ),
                ("CACHE_FACTOR", cache_factor),
                ("SINGLE_PASS", single as u32),
                ("SPIN_LIMIT", spin),
                ("ORDERED_FINISH", !single_pass_is_safe(gpu.info()) as u32),
            ],
        )
        .with_height(h),
    )?;
    let grid = gpu.grid(f.groups as u32);
    if single {
        // The `done` word counts finished workgroups below `stall_unit` and stalled waits above.
        let dispatched = grid[0] as u64 * grid[1] as u64;
        let unit = (dispatched + 1).next_power_of_two();
        if unit * (f.carry_groups as u64 + 1) > 1 << 32 {
            return Err(bad(
                "bccoo.carry",
                "SinglePass",
                format!("{dispatched} workgroups with {} carried rows overflow the single-pass finish counter; use Carry::TwoPass or a larger tile", f.carry_groups),
            ));
        }
        params.stall_unit = unit as u32;
    }

    // Slots (and pending rows) and the repair list start at the sentinel (all ones); the state
    // header (ticket, done, repair count, stalls) at zero.
    let slots = upload(
        gpu,
        "bccoo slots",
        &vec![u32::MAX; 2 * f.groups * 4 * (s / 4)],
    )?;
    let mut state_init = vec![u32::MAX; STATE_HEADER + f.groups];
    state_init[..STATE_HEADER].fill(0);
    // COPY_SRC: `stalls()` reads the counter back.
    let state = Arc::new(gpu.storage_buffer(
        "bccoo state",
        bytemuck::cast_slice(&state_init),
        wgpu::BufferUsages::COPY_SRC,
    )?);
    let params_buf = Binding::Owned(Arc::new(
        gpu.uniform_buffer("bccoo params", bytemuck::bytes_of(&params)),
    ));

    // BCCOO+ multiplies into one partial result per slice, combined by a second pass.
    let (out, out_coeffs) = if slices > 1 {
        let partial = Arc::new(gpu.storage_zeroed(
            "bccoo+ partial results",
            f.result_rows as u64 * s as u64,
            wgpu::BufferUsages::empty(),
        )?);
        let unit = [T::from_f64(1.0), T::from_f64(0.0)];
        (
            Binding::Owned(partial),
            Binding::Owned(Arc::new(
                gpu.uniform_buffer("bccoo+ unit coeffs", bytemuck::cast_slice(&unit)),
            )),
        )
    } else {
        (Binding::Y, Binding::Coeffs)
    };
    // Bindings 0-4 are shared with the two-pass carry kernel; `state` is the main kernel's own.
    let common = vec![f.aux.clone(), out.clone(), out_coeffs, params_buf, slots];
    let mut main_bindings = common.clone();
    main_bindings.extend([
        Binding::Owned(state.clone()),
        f.flags.clone(),
        f.columns.clone(),
        Binding::Owned(f.values.clone()),
        Binding::X,
    ]);
    let mut stages = vec![Stage {
        pipeline: main,
        bindings: main_bindings,
        grid: Grid::Direct(grid),
    }];
    if !single && f.carry_groups > 0 {
        let carry_pipeline = stage_pipeline(
            &Variant::new(kernels::BCCOO_CARRY, T::WGSL, lanes, vec![("WG_SIZE", wg)])
                .with_height(h),
        )?;
        stages.push(Stage {
            pipeline: carry_pipeline,
            bindings: common,
            grid: Grid::Direct(gpu.grid(f.carry_groups as u32)),
        });
    }
    if slices > 1 {
        stages.push(combine_stage::<T>(gpu, nrows, &f, out)?);
    }

    let report = BccooReport {
        layout: f.layout,
        strategy,
        cache_factor,
        carry,
        lanes,
        footprint: f.footprint,
        groups: f.groups,
        carry_groups: f.carry_groups,
        longest_chain: f.longest_chain,
        block_sizes: block_sizes.clone(),
        tuning: None,
        state,
    };
    let details = format!(
        "{}: {}, {} workgroups via {}, {} carried rows (longest across {} workgroups), {} empty-row blocks, {:.1} MB (CSR {:.1} MB)",
        method.name(),
        report.summary(),
        f.groups,
        lanes.name(),
        f.carry_groups,
        f.longest_chain,
        f.empty_row_blocks,
        report.footprint.total() as f64 / 1e6,
        report.footprint.csr as f64 / 1e6,
    );
    let mut plan = SpmvPlan::new(gpu, shape, stages, method.name(), details).with_values(values);
    plan.report_mut().detail = Some(Arc::new(report));
    Ok(plan)
}

/// A copy of `a`'s row pointers and columns, kept for value updates.
fn structure_of<T: Scalar>(a: &CsrMatrix<T>) -> (Vec<u32>, Vec<u32>) {
    let copy = |from: &[u32]| {
        let mut v = vec![0u32; from.len()];
        v.par_chunks_mut(1 << 20)
            .zip(from.par_chunks(1 << 20))
            .for_each(|(d, s)| d.copy_from_slice(s));
        v
    };
    (copy(a.row_ptr()), copy(a.col_idx()))
}

/// For each stored value of the format with `layout`, the CSR entry it holds (or
/// [`NONE`](crate::plan::values::NONE) for fill and padding): the same build over a matrix whose
/// values number its entries (from 1, so that 0 stays fill; exact in f64 below 2⁵³ entries).
fn value_sources(
    (nrows, ncols, nnz): (usize, usize, usize),
    (row_ptr, col_idx): &(Vec<u32>, Vec<u32>),
    layout: &BccooLayout,
) -> Result<Vec<u32>> {
    let numbers = (1..=nnz).into_par_iter().map(|i| i as f64).collect();
    let numbered = CsrMatrix::try_new(nrows, ncols, row_ptr.clone(), col_idx.clone(), numbers)?;
    let m = BccooMatrix::<f64>::from_csr(&numbered, layout)?;
    Ok(m.values
        .par_iter()
        .map(|&v| {
            if v == 0.0 {
                crate::plan::values::NONE
            } else {
                v as u32 - 1
            }
        })
        .collect())
}

impl<T: Scalar> SpmvPlan<T> {
    /// For `bccoo` and `bccoo-plus` plans: the layout, carry path, footprint and tuning.
    pub fn bccoo(&self) -> Option<&BccooReport> {
        self.report().detail()
    }
}

#[cfg(test)]
mod tests {
    use super::slices_for_cache;

    const MIB: f64 = 1048576.0;

    #[test]
    fn slices_take_an_eighth_of_the_cache_each() {
        // 50 MiB cache: slices of about 6.25 MiB of x.
        let cols = |mib: f64, bytes: u64| (mib * MIB / bytes as f64) as usize;
        assert_eq!(slices_for_cache(cols(8.0, 4), 4, 50.0 * MIB), 2);
        assert_eq!(slices_for_cache(cols(16.0, 8), 8, 50.0 * MIB), 2);
        assert_eq!(slices_for_cache(cols(21.3, 8), 8, 50.0 * MIB), 4);
        assert_eq!(slices_for_cache(cols(64.0, 4), 4, 50.0 * MIB), 8);
        assert_eq!(slices_for_cache(cols(128.0, 8), 8, 50.0 * MIB), 16);
        // Never more than 32, never fewer than 2 (BCCOO+ is the sliced format).
        assert_eq!(slices_for_cache(cols(4096.0, 4), 4, 50.0 * MIB), 32);
        assert_eq!(slices_for_cache(1000, 4, 50.0 * MIB), 2);
        // The generic 8 MiB cache keeps the old 1 MiB slices; no estimate falls back to it.
        assert_eq!(slices_for_cache(cols(8.0, 4), 4, 8.0 * MIB), 8);
        assert_eq!(slices_for_cache(cols(8.0, 4), 4, f64::NAN), 8);
        assert_eq!(slices_for_cache(cols(8.0, 4), 4, 0.0), 8);
        // No slice narrower than 256 columns where x allows it: 2048 columns make at most 8.
        assert_eq!(slices_for_cache(2048, 8, 1024.0), 8);
        // Fewer than 512 columns still make the 2 that BCCOO+ needs.
        assert_eq!(slices_for_cache(300, 8, 1024.0), 2);
        assert_eq!(slices_for_cache(0, 8, 50.0 * MIB), 2);
    }
}
