//! `bccoo` and `bccoo-plus` built on the GPU from a CSR matrix in GPU buffers (shaders/bccoo/build_*;
//! [`BccooMatrix::from_csr`](super::BccooMatrix::from_csr) is the CPU twin, and the two agree word
//! for word). Three submissions, each followed by a few words read back:
//! 1. the blocks of every size, the largest column and the stored zeros (to choose the block size
//!    as the host does, and the column coding);
//! 2. which entries open a block of the chosen size (scanned), each block row's blocks, the
//!    empty block rows (to size the format);
//! 3. every entry placed (value, source, its block's column), row stops, the empty rows' zero
//!    blocks, per-thread first rows and escapes, per-workgroup info and the carry list (to size
//!    the column words and the auxiliary array);
//!
//! then the column words encoded. Stored zeros are placed as -0, which the kernels multiply while
//! they skip the +0 of fill and padding.

use super::{
    assemble, check_values_fit, finish, kernels, params, BccooLayout, FormatOnGpu, Params,
};
use crate::gpu::recorder::{submit_copies_and_pass, Recorder, SCAN_BLOCK};
use crate::gpu::Bind;
use crate::gpu::{DeviceBuffer, Gpu};
use crate::matrix::{check_u32, GpuCsr};
use crate::methods::common::bad;
use crate::methods::{Method, PlanOptions};
use crate::plan::values::{GatherPart, ValueLayout};
use crate::plan::{Binding, Phases, SpmvPlan};
use crate::{Result, Scalar};
use std::sync::Arc;

use super::format::{ColumnCoding, Footprint, COMPACT_EMPTY_ROWS};

/// Mirrors `BuildParams` in shaders/bccoo/build_common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct BuildParams {
    nrows: u32,
    ncols: u32,
    nnz: u32,
    height: u32,
    width: u32,
    slices: u32,
    slice_width: u32,
    block_rows: u32,
    blocks: u32,
    padded_blocks: u32,
    tile: u32,
    group_threads: u32,
    groups: u32,
    threads: u32,
    compact: u32,
    coding: u32,
    list_base: u32,
    group_info_base: u32,
    carry_base: u32,
    thread_escape_base: u32,
    escape_base: u32,
    pad: [u32; 3],
}

// Words of the statistics buffer (STAT_* in shaders/bccoo/build_common.wgsl).
const STAT_MAX_COL: usize = 12;
const STAT_ZEROS: usize = 13;
const STAT_EMPTY_ROWS: usize = 14;
const STAT_OWNERS: usize = 15;
const STAT_ESCAPES: usize = 16;
const STAT_CARRIES: usize = 17;
const STAT_CHAIN: usize = 18;
const STATS_WORDS: u64 = 19;

/// Invocations of the build kernels' workgroups (`WG` in the shaders).
const WG: u64 = 256;

/// The `coding` parameter of the build kernels.
fn coding_code(c: ColumnCoding) -> u32 {
    match c {
        ColumnCoding::U16 => 1,
        ColumnCoding::Delta16 => 2,
        _ => 0,
    }
}

/// Whether a host CSR is better uploaded as it is and built on the GPU (tuning takes the host
/// path, which builds its candidates on the GPU itself; the caller has checked the adapter kind
/// and `BuildOn`). A matrix given in GPU buffers builds on the GPU under the same condition.
pub(crate) fn builds_from_host<T: Scalar>(gpu: &Gpu, opts: &PlanOptions) -> bool {
    let int64 = !T::NEEDS_F64 || gpu.info().has(wgpu::Features::SHADER_INT64);
    int64 && !opts.bccoo.tune
}

/// A zeroed array of `n` words for the build.
fn words(gpu: &Gpu, label: &str, n: u64) -> Result<DeviceBuffer> {
    gpu.storage_zeroed(label, n * 4, wgpu::BufferUsages::empty())
}

/// The build kernels' parameters as a uniform buffer.
fn uniform(gpu: &Gpu, bp: &BuildParams) -> DeviceBuffer {
    gpu.uniform_buffer("bccoo build", bytemuck::bytes_of(bp))
}

/// Dispatches `kernel`'s pass `pass` over `count` items (none when `count` is 0).
fn pass(
    r: &mut Recorder,
    kernel: crate::kernel::Kernel,
    pass: u32,
    val_words: u32,
    buffers: &[&dyn Bind],
    count: u64,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let overrides = if kernel.overrides.iter().any(|o| o.0 == "VAL_WORDS") {
        vec![("PASS", pass), ("VAL_WORDS", val_words)]
    } else {
        vec![("PASS", pass)]
    };
    r.dispatch(kernel, overrides, buffers, count.div_ceil(WG) as u32)
}

/// Records `f` into one compute pass, after `copies` (source, destination, bytes) on the same
/// encoder, and submits it.
fn submit(
    gpu: &Gpu,
    copies: &[(&wgpu::Buffer, &wgpu::Buffer, u64)],
    f: impl FnOnce(&mut Recorder) -> Result<()>,
) -> Result<()> {
    let during = "building bccoo on the GPU";
    submit_copies_and_pass(gpu, "bccoo build", during, copies, f)
}

/// What the GPU builds of one matrix leave for the next (a tuning's candidates, `tune.rs`), so
/// that a candidate skips the work it shares with the last one: the counts of every block size
/// (any candidate), the blocks placed at one block size and slice count (a candidate of another
/// tile or workgroup size rearranges them: `build_relayout.wgsl`), and the finished format (a
/// candidate that differs only in how the kernel runs it: strategy, cache, carry path).
#[derive(Default)]
pub(crate) struct BuildReuse {
    /// The matrix's rows, columns and entries (a reuse serves one matrix).
    shape: Option<(usize, usize, usize)>,
    counted: Option<Counted>,
    placed: Option<Placed>,
    /// Candidates built by rearranging earlier blocks, and by sharing an earlier format.
    rearranged: usize,
    formats_shared: usize,
}

/// The blocks a [`BuildReuse`] holds at one moment: a search keeps the best plan's, and puts them
/// back when a later candidate (whose blocks replaced them) loses, so that the loser's buffers
/// are freed and no more than the best's format and one candidate's are held.
#[derive(Clone, Default)]
pub(crate) struct Kept(Option<Placed>);

impl BuildReuse {
    /// The blocks held now.
    pub(crate) fn keep(&self) -> Kept {
        Kept(self.placed.clone())
    }

    /// Holds `kept` instead of the blocks held now (a matrix of another shape holds nothing).
    pub(crate) fn restore(&mut self, kept: Kept) {
        self.placed = kept.0;
    }

    /// The block counts of every height and width (as `super::smallest_of_counts` takes them),
    /// counted on the GPU unless an earlier build of this matrix left them.
    pub(crate) fn block_counts<T: Scalar>(
        &mut self,
        gpu: &Gpu,
        a: &GpuCsr,
    ) -> Result<Vec<[u64; 3]>> {
        let shape = (a.nrows, a.ncols, a.nnz);
        if self.shape != Some(shape) || self.counted.is_none() {
            let bp = BuildParams {
                nrows: a.nrows as u32,
                ncols: a.ncols as u32,
                nnz: a.nnz as u32,
                ..Default::default()
            };
            let counted = count::<T>(gpu, a, &bp, None)?;
            *self = BuildReuse {
                shape: Some(shape),
                counted: Some(counted),
                ..Default::default()
            };
        }
        let st = &self.counted.as_ref().expect("counted above").st;
        Ok(block_counts_of(st))
    }

    /// Candidates built by rearranging earlier blocks and by sharing an earlier format (tests).
    #[cfg(test)]
    fn reused(&self) -> (usize, usize) {
        (self.rearranged, self.formats_shared)
    }
}

/// The block counts of every height and width in the block statistics' words.
fn block_counts_of(st: &[u32]) -> Vec<[u64; 3]> {
    (0..4)
        .map(|h| [0, 1, 2].map(|i| st[h * 3 + i] as u64))
        .collect()
}

/// The first submission's findings: block counts, the largest column, the stored zeros.
struct Counted {
    st: Vec<u32>,
}

/// Blocks of one size and slice count, placed for one tile and workgroup size.
#[derive(Clone)]
struct Placed {
    /// Block height, width and slices.
    shape: (u32, u32, u32),
    /// Tile and workgroup size of the values' transposed layout.
    tiling: (u32, u32),
    /// Stored blocks (natural order, before padding), padded blocks, empty block rows.
    blocks: u64,
    padded: u64,
    empty: u64,
    compact: bool,
    maybe_delta: bool,
    /// Block columns in natural order (padding repeats the last stored block's).
    cols: Arc<DeviceBuffer>,
    flags: Arc<DeviceBuffer>,
    values: Arc<DeviceBuffer>,
    sources: Arc<DeviceBuffer>,
    row_map: Arc<DeviceBuffer>,
    row_map_words: u64,
    /// The format finished from these blocks, and the layout asked for it.
    format: Option<(BccooLayout, FormatOnGpu)>,
}

/// Mirrors `RelayoutParams` in shaders/bccoo/build_relayout.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct RelayoutParams {
    blocks: u32,
    width: u32,
    old_padded: u32,
    old_tile: u32,
    old_threads: u32,
    old_flag_words: u32,
    padded: u32,
    tile: u32,
    threads: u32,
    slots: u32,
    flag_words: u32,
    pad: u32,
}

/// The plan built on the GPU, or `None` where the host builds it (tuning, f64 without 64-bit
/// integers in shaders: the host path then gives the same result or error).
/// With `validate`, the matrix is validated in the block statistics' submission and its findings
/// read back with them (one round trip for both; the statistics pass is bounded on any arrays,
/// and nothing it counted is used unless the matrix is valid); the time spent recording the
/// validation is written there.
pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    method: Method,
    opts: &PlanOptions,
    validate: Option<&mut f64>,
) -> Result<Option<SpmvPlan<T>>> {
    if opts.bccoo.tune {
        return Ok(None);
    }
    build(gpu, a, method, opts, &mut BuildReuse::default(), validate)
}

/// [`prepare`] for a tuning's candidates (the tuning options are not looked at), skipping what
/// `reuse` holds from earlier builds of the same matrix and leaving this build's work there.
pub(crate) fn prepare_reusing<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    method: Method,
    opts: &PlanOptions,
    reuse: &mut BuildReuse,
) -> Result<Option<SpmvPlan<T>>> {
    build(gpu, a, method, opts, reuse, None)
}

/// [`prepare_reusing`], validating as [`prepare`] does.
fn build<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    method: Method,
    opts: &PlanOptions,
    reuse: &mut BuildReuse,
    validate: Option<&mut f64>,
) -> Result<Option<SpmvPlan<T>>> {
    if T::NEEDS_F64 && !gpu.info().has(wgpu::Features::SHADER_INT64) {
        return Ok(None);
    }
    let (nrows, ncols, nnz) = (a.nrows, a.ncols, a.nnz);
    if reuse.shape != Some((nrows, ncols, nnz)) {
        *reuse = BuildReuse {
            shape: Some((nrows, ncols, nnz)),
            ..Default::default()
        };
    }
    let s = std::mem::size_of::<T>() as u64;
    let vw = (s / 4) as u32;
    let mut phases = Phases::start(gpu);
    // Where the build's time goes, for the debug log: sizing waits, allocations, recording.
    let started = std::time::Instant::now();
    let mark = |what: &str| {
        log::debug!(
            "bccoo gpu build: {what} at {:.3} ms",
            started.elapsed().as_secs_f64() * 1e3
        )
    };
    let none = wgpu::BufferUsages::empty();
    let words = |label, n: u64| words(gpu, label, n);
    let uniform = |bp: &BuildParams| uniform(gpu, bp);
    // Arrays not sized yet (or not used by a pass) are bound as small stand-ins.
    let stand_in = || words("stand-in", 4);
    // Bound whole (the caller's), beside the plan's buffers bound at their asked-for sizes.
    let (rp, ci, va): (&dyn Bind, &dyn Bind, &dyn Bind) = (a.row_ptr, a.col_idx, a.values);
    let mut bp = BuildParams {
        nrows: nrows as u32,
        ncols: ncols as u32,
        nnz: nnz as u32,
        ..Default::default()
    };

    // 1. Blocks of every size, the largest column, stored zeros.
    if reuse.counted.is_none() || validate.is_some() {
        reuse.counted = Some(count::<T>(gpu, a, &bp, validate)?);
        mark("block statistics read");
    }
    let counted = reuse.counted.as_ref().expect("counted above");
    let st = &counted.st;
    let counts = block_counts_of(st);
    let p = params::<T>(
        gpu,
        (nrows, ncols),
        &mut |_| Ok(counts.clone()),
        method,
        opts,
    )?;
    let layout = p.layout(opts);
    layout.validate()?;
    let (h, w, slices) = (p.h as usize, p.w as usize, p.slices as usize);
    let stacked_rows = nrows * slices;
    check_u32("rows times slices", stacked_rows)?;
    let slice_width = ncols.div_ceil(slices).div_ceil(w).max(1) * w;
    let block_rows = stacked_rows.div_ceil(h);
    let max_block_col = st[STAT_MAX_COL] as usize / w;
    if layout.columns == ColumnCoding::U16 && max_block_col >= 65536 {
        return Err(bad(
            "columns",
            "u16",
            format!("block column {max_block_col} does not fit 16 bits; use u32 or delta16"),
        ));
    }
    let maybe_delta = match layout.columns {
        ColumnCoding::Auto => max_block_col >= 65536,
        c => c == ColumnCoding::Delta16,
    };
    bp.height = h as u32;
    bp.width = w as u32;
    bp.slices = slices as u32;
    bp.slice_width = slice_width as u32;
    bp.block_rows = block_rows as u32;
    bp.list_base = block_rows as u32 + 1;
    bp.coding = if maybe_delta { 2 } else { 0 };
    let group_blocks = layout.group_blocks();

    // The blocks of this size placed by an earlier build (rearranged where its tiles differ), or
    // placed now.
    let earlier = reuse
        .placed
        .take()
        .filter(|pl| pl.shape == (p.h, p.w, p.slices) && pl.maybe_delta == maybe_delta);
    let tiling = (p.tile, p.wg);
    if let Some(pl) = &earlier {
        if let Some((l, f)) = pl.format.as_ref().filter(|(l, _)| *l == layout) {
            // The same format: only the kernels differ.
            let plan = plan_of::<T>(gpu, (nrows, ncols, nnz), f.clone(), pl, &p, method)?;
            mark("format reused");
            debug_assert_eq!(*l, layout);
            reuse.placed = earlier;
            reuse.formats_shared += 1;
            phases.analysis();
            return Ok(Some(finish(plan, phases)));
        }
    }
    let stats = words("bccoo build stats", STATS_WORDS)?;
    let read_stats = || gpu.read_buffer::<u32>(&stats, STATS_WORDS as usize);
    let relayout = earlier.filter(|pl| pl.blocks > 0);
    let (blocks, empty, compact, placement_rows) = match &relayout {
        Some(pl) => (pl.blocks, pl.empty, pl.compact, None),
        None => {
            // 2. Which entries open a block, each block row's blocks, the empty block rows.
            let owners = words("bccoo block openers", nnz as u64 + 1)?;
            let block_row = words("bccoo block rows", block_rows as u64 + 1)?;
            let nonempty = words("bccoo non-empty block rows", 2 * block_rows as u64 + 1)?;
            let scan_sums = words(
                "bccoo scan blocks",
                (nnz.max(block_rows) as u64 + 1).div_ceil(SCAN_BLOCK as u64),
            )?;
            let u = uniform(&bp);
            let (x0, x1, x2) = (stand_in()?, stand_in()?, stand_in()?);
            submit(gpu, &[], |r| {
                let blocks = [rp, ci, va, &owners, &block_row, &x0, &x1, &x2, &u];
                pass(r, kernels::BCCOO_BUILD_BLOCKS, 0, vw, &blocks, nnz as u64)?;
                r.scan(&owners, &scan_sums, nnz as u32 + 1)?;
                let rows = [rp, ci, &owners, &block_row, &nonempty, &x0, &x1, &stats, &u];
                pass(
                    r,
                    kernels::BCCOO_BUILD_ROWS,
                    0,
                    vw,
                    &rows,
                    block_rows as u64,
                )
            })?;
            let st = read_stats()?;
            mark("block rows read");
            let (empty, nonempty_blocks) = (st[STAT_EMPTY_ROWS] as u64, st[STAT_OWNERS] as u64);
            let compact = slices > 1 && empty * COMPACT_EMPTY_ROWS > nonempty_blocks;
            let blocks = nonempty_blocks + if compact { 0 } else { empty };
            (blocks, empty, compact, Some((owners, block_row, nonempty)))
        }
    };
    let padded = blocks.div_ceil(group_blocks).max(1) * group_blocks;
    check_u32("BCCOO blocks", (padded * (w * h) as u64) as usize)?;
    let slots = padded * (h * w) as u64;
    check_values_fit(gpu, opts, slots * s, padded as usize, p.h, p.w)?;
    let groups = padded / group_blocks;
    let threads = groups * p.wg as u64;
    phases.analysis();

    // 3. Every entry placed (or the earlier blocks rearranged), row stops, zero blocks,
    // per-thread and per-workgroup data.
    bp.blocks = blocks as u32;
    bp.padded_blocks = padded as u32;
    bp.tile = p.tile;
    bp.group_threads = p.wg;
    bp.groups = groups as u32;
    bp.threads = threads as u32;
    bp.compact = compact as u32;
    bp.group_info_base = threads as u32 + 1;
    bp.carry_base = (threads + 1 + groups) as u32;
    let cols = Arc::new(words("bccoo block columns", padded)?);
    let values = Arc::new(gpu.storage_zeroed("bccoo values", slots * s, none)?);
    let sources = Arc::new(words("gather sources", slots)?);
    let flag_words = padded.div_ceil(32);
    let flags = Arc::new(words("bccoo flags", flag_words)?);
    let (row_map, row_map_words) = match &relayout {
        Some(pl) => (pl.row_map.clone(), pl.row_map_words),
        None => {
            let n = if compact {
                2 * (block_rows as u64).div_ceil(32)
            } else {
                1
            };
            (Arc::new(words("bccoo+ row map", n)?), n)
        }
    };
    let aux_head = words("bccoo aux", threads + 1 + 2 * groups)?;
    let thread_escapes = words("bccoo thread escapes", threads + 1)?;
    let carried = words("bccoo carried groups", groups + 1)?;
    let scan_sums = words(
        "bccoo scan blocks",
        (block_rows as u64 + 1)
            .max(threads + 1)
            .div_ceil(SCAN_BLOCK as u64),
    )?;
    let u = uniform(&bp);
    mark("format buffers allocated");
    submit(gpu, &[], |r| {
        match (&relayout, &placement_rows) {
            (Some(pl), _) => {
                let (old_tile, old_wg) = pl.tiling;
                let rp = RelayoutParams {
                    blocks: blocks as u32,
                    width: w as u32,
                    old_padded: pl.padded as u32,
                    old_tile,
                    old_threads: old_wg,
                    old_flag_words: pl.padded.div_ceil(32) as u32,
                    padded: padded as u32,
                    tile: p.tile,
                    threads: p.wg,
                    slots: slots as u32,
                    flag_words: flag_words as u32,
                    pad: 0,
                };
                let ru = gpu.uniform_buffer("bccoo relayout", bytemuck::bytes_of(&rp));
                let b: [&dyn Bind; 9] = [
                    &*pl.values,
                    &*pl.sources,
                    &*pl.cols,
                    &*pl.flags,
                    &*values,
                    &*sources,
                    &*cols,
                    &*flags,
                    &ru,
                ];
                let count = slots.max(padded);
                r.dispatch(
                    kernels::BCCOO_BUILD_RELAYOUT,
                    vec![("VAL_WORDS", vw)],
                    &b,
                    count.div_ceil(WG) as u32,
                )?;
            }
            (None, Some((owners, block_row, nonempty))) => {
                let (b, rw) = (kernels::BCCOO_BUILD_BLOCKS, kernels::BCCOO_BUILD_ROWS);
                let blocks_b = [
                    rp, ci, va, owners, block_row, &*cols, &*values, &*sources, &u,
                ];
                let rows_b = [
                    rp, ci, owners, block_row, nonempty, &*cols, &*flags, &stats, &u,
                ];
                pass(r, b, 1, vw, &blocks_b, block_rows as u64)?;
                r.scan(block_row, &scan_sums, block_rows as u32 + 1)?;
                r.scan(nonempty, &scan_sums, block_rows as u32 + 1)?;
                pass(r, rw, 1, vw, &rows_b, block_rows as u64)?;
                pass(r, b, 2, vw, &blocks_b, slots)?;
                pass(r, b, 3, vw, &blocks_b, nnz as u64)?;
                pass(r, rw, 2, vw, &rows_b, flag_words)?;
                pass(r, rw, 3, vw, &rows_b, block_rows as u64)?;
                pass(r, rw, 4, vw, &rows_b, padded - blocks)?;
                if compact {
                    let stats_b = [rp, ci, va, &stats, nonempty, &*row_map, &u];
                    let words = (block_rows as u64).div_ceil(32);
                    pass(r, kernels::BCCOO_BUILD_STATS, 1, vw, &stats_b, words)?;
                }
            }
            (None, None) => unreachable!("blocks are placed or rearranged"),
        }
        let t = kernels::BCCOO_BUILD_TILES;
        let x0 = words("stand-in", 4)?;
        let tiles_b: [&dyn Bind; 8] = [
            &*flags,
            &*cols,
            &aux_head,
            &thread_escapes,
            &carried,
            &stats,
            &x0,
            &u,
        ];
        pass(r, t, 0, vw, &tiles_b, threads)?;
        r.scan(&aux_head, &scan_sums, threads as u32 + 1)?;
        if maybe_delta {
            r.scan(&thread_escapes, &scan_sums, threads as u32 + 1)?;
        }
        pass(r, t, 1, vw, &tiles_b, groups)?;
        r.scan(&carried, &scan_sums, groups as u32 + 1)?;
        pass(r, t, 2, vw, &tiles_b, groups)
    })?;
    let rearranged = relayout.is_some();
    reuse.rearranged += rearranged as usize;
    drop(placement_rows);
    drop(relayout);
    let st = read_stats()?;
    mark(if rearranged {
        "blocks rearranged, tiles read"
    } else {
        "entries placed, tiles read"
    });
    let (escapes, carries) = (st[STAT_ESCAPES] as u64, st[STAT_CARRIES] as u64);

    // 4. The column words, and the auxiliary array at its exact size.
    let coding = match layout.columns {
        ColumnCoding::Auto if max_block_col < 65536 => ColumnCoding::U16,
        ColumnCoding::Auto if padded * 2 + threads * 4 + escapes * 4 < padded * 4 => {
            ColumnCoding::Delta16
        }
        ColumnCoding::Auto => ColumnCoding::U32,
        c => c,
    };
    let delta = coding == ColumnCoding::Delta16;
    let col_word_count = if coding == ColumnCoding::U32 {
        padded
    } else {
        padded / 2
    };
    let escape_words = if delta { escapes } else { 0 };
    let columns = Arc::new(words("bccoo columns", col_word_count + escape_words)?);
    let head = threads + 1 + groups + carries;
    let aux_words = head + if delta { threads } else { 0 };
    let aux = Arc::new(words("bccoo aux", aux_words)?);
    bp.coding = coding_code(coding);
    bp.escape_base = col_word_count as u32;
    bp.thread_escape_base = head as u32;
    let u = uniform(&bp);
    submit(gpu, &[(&aux_head, &aux, head * 4)], |r| {
        let t = kernels::BCCOO_BUILD_TILES;
        let tiles_b: [&dyn Bind; 8] = [
            &*flags,
            &*cols,
            &*aux,
            &thread_escapes,
            &carried,
            &stats,
            &*columns,
            &u,
        ];
        pass(r, t, 3, vw, &tiles_b, col_word_count)?;
        if delta {
            pass(r, t, 4, vw, &tiles_b, threads)?;
        }
        Ok(())
    })?;
    phases.build();
    mark("column words submitted");

    let hw = (h * w) as u64;
    let zeros = counted.st[STAT_ZEROS] as u64;
    let footprint = Footprint {
        flags: flag_words * 4,
        columns: (col_word_count + escape_words) * 4,
        values: slots * s,
        auxiliary: (aux_words + if compact { row_map_words } else { 0 }) * 4,
        empty_row_blocks: if compact { 0 } else { empty },
        // The blocks' zeros: their fill and the stored zeros.
        stored_zeros: blocks * hw - (nnz as u64 - zeros) + (padded - blocks) * hw,
        csr: nnz as u64 * (s + 4) + (nrows as u64 + 1) * 4,
        coo: nnz as u64 * (s + 8),
    };
    let format = super::FormatOnGpu {
        layout: super::BccooLayout {
            columns: coding,
            ..layout
        },
        result_rows: if compact {
            (block_rows - empty as usize) * h
        } else {
            stacked_rows
        },
        groups: groups as usize,
        carry_groups: carries as usize,
        longest_chain: st[STAT_CHAIN],
        empty_row_blocks: if compact { 0 } else { empty as usize },
        mapped: compact,
        footprint,
        flags: Binding::Owned(flags.clone()),
        columns: Binding::Owned(columns),
        escape_base: col_word_count as u32,
        values: values.clone(),
        aux: Binding::Owned(aux),
        group_info_base: threads as u32 + 1,
        carry_base: (threads + 1 + groups) as u32,
        thread_escape_base: head as u32,
        row_map: Binding::Owned(row_map.clone()),
    };
    let placed = Placed {
        shape: (p.h, p.w, p.slices),
        tiling,
        blocks,
        padded,
        empty,
        compact,
        maybe_delta,
        cols,
        flags,
        values,
        sources,
        row_map,
        row_map_words,
        format: Some((layout, format.clone())),
    };
    let plan = plan_of::<T>(gpu, (nrows, ncols, nnz), format, &placed, &p, method)?;
    reuse.placed = Some(placed);
    mark("plan assembled");
    Ok(Some(finish(plan, phases)))
}

/// The first submission: block counts of every size, the largest column, the stored zeros.
fn count<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    bp: &BuildParams,
    validate: Option<&mut f64>,
) -> Result<Counted> {
    let vw = (std::mem::size_of::<T>() / 4) as u32;
    let (rp, ci, va): (&dyn Bind, &dyn Bind, &dyn Bind) = (a.row_ptr, a.col_idx, a.values);
    let stats = words(gpu, "bccoo build stats", STATS_WORDS)?;
    let (x0, x1) = (words(gpu, "stand-in", 4)?, words(gpu, "stand-in", 4)?);
    let u = uniform(gpu, bp);
    let stats_pass = |r: &mut Recorder| {
        let b = [rp, ci, va, &stats, &x0, &x1, &u];
        pass(r, kernels::BCCOO_BUILD_STATS, 0, vw, &b, a.nnz as u64)
    };
    let mut enc = gpu
        .device()
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("bccoo build"),
        });
    let check = a.record_check_if::<T>(gpu, &mut enc, validate)?;
    gpu.scoped("building bccoo on the GPU", || {
        stats_pass(&mut Recorder::new(gpu, &mut enc, "bccoo build"))
    })??;
    let stats_read = crate::gpu::RangeRead::first(&stats, STATS_WORDS * 4);
    let st = bytemuck::pod_collect_to_vec(&a.read_checked(gpu, enc, check.as_ref(), stats_read)?);
    Ok(Counted { st })
}

/// The plan around `format` (built from `placed`): the values gathered through `placed`'s
/// sources.
fn plan_of<T: Scalar>(
    gpu: &Gpu,
    shape: (usize, usize, usize),
    format: FormatOnGpu,
    placed: &Placed,
    p: &Params,
    method: Method,
) -> Result<SpmvPlan<T>> {
    let (h, w, _) = placed.shape;
    let slots = placed.padded * (h * w) as u64;
    let gather = GatherPart::on_gpu(
        placed.values.clone(),
        placed.sources.clone(),
        slots as usize,
        0..shape.2 as u64,
    );
    assemble(
        gpu,
        shape,
        format,
        p,
        method,
        ValueLayout::Blocks(vec![gather]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::UploadedCsr;
    use crate::methods::bccoo::{BccooOptions, Strategy};
    use crate::testing::{suite::random_vector, SuiteClass};
    use crate::{CsrMatrix, GpuVector};

    /// The words of a plan's format (aux, flags, column words, values, BCCOO+'s row map; read
    /// before any product).
    fn words<T: Scalar>(plan: &SpmvPlan<T>) -> Vec<Option<Vec<u32>>> {
        let mut words = plan.stage_words_for_testing(0, 0..1).unwrap();
        words.extend(plan.stage_words_for_testing(0, 6..9).unwrap());
        for stage in 1..3 {
            words.extend(plan.stage_words_for_testing(stage, 4..5).unwrap());
        }
        words
    }

    /// The bits of a plan's product of `x`.
    fn product<T: Scalar>(plan: &SpmvPlan<T>, x: &GpuVector<T>) -> Vec<u32> {
        let mut y = GpuVector::filled(plan.gpu(), plan.nrows(), T::from_f64(f64::NAN)).unwrap();
        plan.run(x, &mut y).unwrap();
        bytemuck::cast_slice::<T, u32>(&y.read().unwrap()).to_vec()
    }

    fn check<T: Scalar>(gpu: &Gpu, name: &str, a: &CsrMatrix<T>) {
        let Some(up) = UploadedCsr::new(gpu, a).unwrap() else {
            return;
        };
        let x: Vec<T> = random_vector(a.ncols(), 3)
            .into_iter()
            .map(T::from_f64)
            .collect();
        let x = GpuVector::from_slice(gpu, &x).unwrap();
        // Stored zeros filled, other entries zeroed.
        let new_values: Vec<T> = a
            .values()
            .iter()
            .enumerate()
            .map(|(i, v)| {
                T::from_f64(match (v.to_f64() == 0.0, i % 7) {
                    (true, _) => 1.5,
                    (false, 3) => 0.0,
                    _ => -3.0 * v.to_f64(),
                })
            })
            .collect();
        let o = |tile, wg, f: &dyn Fn(&mut BccooOptions)| {
            let mut b = BccooOptions {
                tile,
                ..Default::default()
            };
            f(&mut b);
            PlanOptions {
                bccoo: b,
                workgroup_size: wg,
                ..Default::default()
            }
        };
        let per_thread = |b: &mut BccooOptions| {
            b.strategy = Strategy::PerThread;
            b.cache_factor = Some(1);
        };
        let cache2 = |b: &mut BccooOptions| {
            b.strategy = Strategy::ResultCache;
            b.cache_factor = Some(2);
        };
        let two_by_two = |b: &mut BccooOptions| {
            b.block_height = Some(2);
            b.block_width = Some(2);
        };
        let delta = |b: &mut BccooOptions| {
            b.block_height = Some(1);
            b.block_width = Some(1);
            b.columns = ColumnCoding::Delta16;
        };
        let u32_cols = |b: &mut BccooOptions| {
            two_by_two(b);
            b.columns = ColumnCoding::U32;
        };
        let sliced = |b: &mut BccooOptions| b.slices = Some(4);
        // Each candidate after the first shares something with the one before: the counts (a
        // new block size), the blocks (another tile or workgroup size: rearranged), or the
        // format (another strategy or cache).
        let steps: Vec<(Method, PlanOptions)> = vec![
            (Method::Bccoo, o(None, None, &|_| {})),
            (Method::Bccoo, o(Some(4), None, &|_| {})),
            (Method::Bccoo, o(Some(64), Some(512), &|_| {})),
            (Method::Bccoo, o(Some(64), Some(512), &per_thread)),
            (Method::Bccoo, o(Some(64), Some(512), &cache2)),
            (Method::Bccoo, o(Some(8), Some(128), &|_| {})),
            (Method::Bccoo, o(Some(16), Some(256), &two_by_two)),
            (Method::Bccoo, o(Some(32), Some(128), &two_by_two)),
            (Method::Bccoo, o(Some(32), Some(128), &u32_cols)),
            (Method::Bccoo, o(Some(8), Some(256), &delta)),
            (Method::Bccoo, o(Some(4), Some(128), &delta)),
            (Method::BccooPlus, o(None, None, &|_| {})),
            (Method::BccooPlus, o(Some(4), Some(128), &|_| {})),
            (Method::BccooPlus, o(Some(16), None, &sliced)),
            (Method::BccooPlus, o(Some(64), Some(512), &sliced)),
        ];
        let mut reuse = BuildReuse::default();
        let mut built = Vec::new();
        let mut refused = 0;
        for (k, (m, opts)) in steps.iter().enumerate() {
            let label = format!("{name} / {} / step {k} {m}", T::NAME);
            let fresh = match prepare::<T>(gpu, &up.view(), *m, opts, None) {
                Ok(p) => p.expect("built on the GPU"),
                // An option this adapter or matrix refuses: refused the same way.
                Err(e) => {
                    let r = prepare_reusing::<T>(gpu, &up.view(), *m, opts, &mut reuse);
                    assert_eq!(
                        format!("{:?}", r.err()),
                        format!("{:?}", Some(e)),
                        "{label}"
                    );
                    refused += 1;
                    continue;
                }
            };
            let reused = prepare_reusing::<T>(gpu, &up.view(), *m, opts, &mut reuse)
                .unwrap()
                .expect("built on the GPU");
            let (f, r) = (fresh.bccoo().unwrap(), reused.bccoo().unwrap());
            assert_eq!(f.summary(), r.summary(), "{label}");
            assert_eq!(f.footprint, r.footprint, "{label}");
            let (fg, rg) = (
                (f.groups, f.carry_groups, f.longest_chain),
                (r.groups, r.carry_groups, r.longest_chain),
            );
            assert_eq!(fg, rg, "{label}");
            for (i, (g, h)) in words(&reused).iter().zip(&words(&fresh)).enumerate() {
                let first = g.as_ref().zip(h.as_ref()).and_then(|(g, h)| {
                    let at = g.iter().zip(h).position(|(a, b)| a != b);
                    at.or((g.len() != h.len()).then_some(g.len().min(h.len())))
                });
                assert!(
                    first.is_none() && g.is_some() == h.is_some(),
                    "{label}: array {i} differs from word {first:?} [{}]",
                    reused.report()
                );
            }
            assert!(product(&reused, &x) == product(&fresh, &x), "{label}");
            built.push((label, fresh, reused));
        }
        // The reuse did its work: steps 1, 2, 5, 7, 10, 12 and 14 rearrange the blocks of the
        // step before, 3 and 4 share its format (fewer where a step was refused).
        let (rearranged, shared) = reuse.reused();
        assert!(
            rearranged + refused >= 7 && shared + refused >= 2,
            "{name}: {rearranged} rearranged, {shared} shared"
        );
        // Value updates go through the rearranged sources. Plans of one search share their
        // format's buffers (as a tuning's candidates do), so the updates come after every build;
        // every plan gets the same values.
        for (label, fresh, reused) in &built {
            fresh.update_values(&new_values).unwrap();
            reused.update_values(&new_values).unwrap();
            let same = product(reused, &x) == product(fresh, &x);
            assert!(same, "{label}: products after a value update differ");
        }
    }

    /// Candidates built through a reuse (the counts shared across block sizes, the blocks
    /// rearranged for another tile and workgroup size, the format shared across strategies)
    /// equal fresh builds with the same options word for word, product for product, and after
    /// a value update (which goes through the rearranged sources).
    #[test]
    fn reused_builds_equal_fresh_builds() {
        let Some(gpu) = crate::gpu::test_gpu() else {
            return;
        };
        let f64_ok = gpu.info().has(wgpu::Features::SHADER_F64)
            && gpu.info().has(wgpu::Features::SHADER_INT64);
        for class in SuiteClass::ALL {
            let a = class.generate(30_000, 7);
            check(&gpu, class.name(), &a.cast::<f32>());
            if f64_ok && matches!(class, SuiteClass::Banded | SuiteClass::EmptyRows) {
                check(&gpu, class.name(), &a);
            }
        }
        // Stored zeros (±0, kept as -0), empty rows, and block columns
        // beyond 16 bits (the column coding left to the build: 16-bit differences or u32).
        let (rows, cols) = (3000usize, 300_000usize);
        let mut t = Vec::new();
        for r in (0..rows).filter(|r| r % 7 != 3) {
            for k in 0..(r % 9 + 1) {
                let c = (r * 7919 + k * 104_729) % cols;
                let v = match (r + k) % 11 {
                    0 => 0.0,
                    1 => -0.0,
                    _ => 0.5 + ((r * 31 + k) % 17) as f64 / 16.0,
                };
                t.push((r, c, v));
            }
        }
        let wide = CsrMatrix::from_triplets(rows, cols, t).unwrap();
        assert!(wide.values().contains(&0.0));
        check(
            &gpu,
            "stored zeros over 300 000 columns",
            &wide.cast::<f32>(),
        );
        if f64_ok {
            check(&gpu, "stored zeros over 300 000 columns", &wide);
        }
    }
}
