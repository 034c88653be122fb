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
//! then the column words encoded. Stored zeros (which the kernels skip) are listed on the GPU
//! for the pass that restores them, their entries read back for the update guard.

use super::{assemble, check_values_fit, finish, kernels, params};
use crate::gpu::recorder::{submit_copies_and_pass, Recorder, SCAN_BLOCK};
use crate::gpu::Bind;
use crate::gpu::{Gpu, RangeRead};
use crate::matrix::{check_u32, GpuCsr};
use crate::methods::common::bad;
use crate::methods::{Method, PlanOptions};
use crate::plan::values::{GatherPart, ValueLayout, ZeroGuard};
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
    zero_count: u32,
    pad: [u32; 2],
}

// Words of the statistics buffer (STAT_* in shaders/bccoo/build_common.wgsl).
const STAT_MAX_COL: usize = 12;
const STAT_ZEROS: usize = 13;
const STAT_EMPTY_ROWS: usize = 14;
const STAT_OWNERS: usize = 15;
const STAT_ESCAPES: usize = 16;
const STAT_CARRIES: usize = 17;
const STAT_CHAIN: usize = 18;
const STATS_WORDS: u64 = 20;

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

/// The plan built on the GPU, or `None` where the host builds it (tuning, f64 without 64-bit
/// integers in shaders: the host path then gives the same result or error).
pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<SpmvPlan<T>>> {
    if opts.bccoo.tune || (T::NEEDS_F64 && !gpu.info().has(wgpu::Features::SHADER_INT64)) {
        return Ok(None);
    }
    let (nrows, ncols, nnz) = (a.nrows, a.ncols, a.nnz);
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
    let words = |label, n: u64| gpu.storage_zeroed(label, n * 4, none);
    let uniform = |bp: &BuildParams| gpu.uniform_buffer("bccoo build", bytemuck::bytes_of(bp));
    let stats = words("bccoo build stats", STATS_WORDS)?;
    let read_stats = || gpu.read_buffer::<u32>(&stats, STATS_WORDS as usize);
    // Arrays not sized yet (or not used by a pass) are bound as small stand-ins.
    let stand_in = || words("stand-in", 4);
    // Bound whole (the caller's), beside the plan's buffers bound at their asked-for sizes.
    let (rp, ci, va): (&dyn Bind, &dyn Bind, &dyn Bind) = (a.row_ptr, a.col_idx, a.values);

    // 1. Blocks of every size, the largest column, stored zeros.
    let mut bp = BuildParams {
        nrows: nrows as u32,
        ncols: ncols as u32,
        nnz: nnz as u32,
        ..Default::default()
    };
    let (x0, x1, no_zeros) = (stand_in()?, stand_in()?, stand_in()?);
    let u = uniform(&bp);
    let stats_kernel = kernels::BCCOO_BUILD_STATS;
    submit(gpu, &[], |r| {
        let b = [rp, ci, va, &stats, &x0, &x1, &no_zeros, &u];
        pass(r, stats_kernel, 0, vw, &b, nnz as u64)
    })?;
    let st = read_stats()?;
    mark("block statistics read");
    // Stored zeros: listed for their pass, their entries read back for the update guard.
    let zeros = st[STAT_ZEROS];
    let (zero_stage, guard) = if zeros == 0 {
        (None, ZeroGuard::of_entries(Vec::new()))
    } else {
        let n = zeros as u64;
        let list = Arc::new(words("stored zeros", 1 + 3 * n)?);
        let u = uniform(&BuildParams {
            zero_count: zeros,
            ..bp
        });
        submit(gpu, &[], |r| {
            let b = [rp, ci, va, &stats, &x0, &x1, &list, &u];
            pass(r, stats_kernel, 2, vw, &b, nnz as u64)
        })?;
        // Only the entries, after the count and the (row, column) pairs.
        let entries = gpu.read_ranges(&[RangeRead {
            buffer: &list,
            ranges: std::iter::once(4 * (1 + 2 * n)..4 * (1 + 3 * n)).collect(),
            in_place: false,
        }])?;
        let guard = ZeroGuard::of_entries(bytemuck::pod_collect_to_vec(&entries[0][0]));
        let stage = crate::methods::passes::stored_zeros::stage_of_list::<T>(
            gpu,
            Binding::Owned(list),
            zeros,
        )?;
        (Some(stage), guard)
    };
    mark("stored zeros listed");
    let counts: Vec<[u64; 3]> = (0..4)
        .map(|h| [0, 1, 2].map(|i| st[h * 3 + i] as u64))
        .collect();
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

    // 2. Which entries open a block, each block row's blocks, the empty block rows.
    bp.height = h as u32;
    bp.width = w as u32;
    bp.slices = slices as u32;
    bp.slice_width = slice_width as u32;
    bp.block_rows = block_rows as u32;
    bp.list_base = block_rows as u32 + 1;
    let owners = words("bccoo block openers", nnz as u64 + 1)?;
    let block_row = words("bccoo block rows", block_rows as u64 + 1)?;
    let nonempty = words("bccoo non-empty block rows", 2 * block_rows as u64 + 1)?;
    let scan_sums = words(
        "bccoo scan blocks",
        (nnz.max(block_rows) as u64 + 1).div_ceil(SCAN_BLOCK as u64),
    )?;
    let u = uniform(&bp);
    let x2 = stand_in()?;
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
    let group_blocks = layout.group_blocks();
    let padded = blocks.div_ceil(group_blocks).max(1) * group_blocks;
    check_u32("BCCOO blocks", (padded * (w * h) as u64) as usize)?;
    let slots = padded * (h * w) as u64;
    check_values_fit(gpu, opts, slots * s, padded as usize, p.h, p.w)?;
    let groups = padded / group_blocks;
    let threads = groups * p.wg as u64;
    phases.analysis();

    // 3. Every entry placed, row stops, zero blocks, per-thread and per-workgroup data.
    bp.blocks = blocks as u32;
    bp.padded_blocks = padded as u32;
    bp.tile = p.tile;
    bp.group_threads = p.wg;
    bp.groups = groups as u32;
    bp.threads = threads as u32;
    bp.compact = compact as u32;
    bp.coding = if maybe_delta { 2 } else { 0 };
    bp.group_info_base = threads as u32 + 1;
    bp.carry_base = (threads + 1 + groups) as u32;
    let cols = words("bccoo block columns", padded)?;
    let values = Arc::new(gpu.storage_zeroed("bccoo values", slots * s, none)?);
    let sources = Arc::new(words("gather sources", slots)?);
    let flag_words = padded.div_ceil(32);
    let flags = Arc::new(words("bccoo flags", flag_words)?);
    let row_map_words = if compact {
        2 * (block_rows as u64).div_ceil(32)
    } else {
        1
    };
    let row_map = Arc::new(words("bccoo+ row map", row_map_words)?);
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
        let (b, rw) = (kernels::BCCOO_BUILD_BLOCKS, kernels::BCCOO_BUILD_ROWS);
        let blocks_b = [
            rp, ci, va, &owners, &block_row, &cols, &values, &sources, &u,
        ];
        let rows_b = [
            rp, ci, &owners, &block_row, &nonempty, &cols, &flags, &stats, &u,
        ];
        pass(r, b, 1, vw, &blocks_b, block_rows as u64)?;
        r.scan(&block_row, &scan_sums, block_rows as u32 + 1)?;
        r.scan(&nonempty, &scan_sums, block_rows as u32 + 1)?;
        pass(r, rw, 1, vw, &rows_b, block_rows as u64)?;
        pass(r, b, 2, vw, &blocks_b, slots)?;
        pass(r, b, 3, vw, &blocks_b, nnz as u64)?;
        pass(r, rw, 2, vw, &rows_b, flag_words)?;
        pass(r, rw, 3, vw, &rows_b, block_rows as u64)?;
        pass(r, rw, 4, vw, &rows_b, padded - blocks)?;
        if compact {
            let stats_b = [rp, ci, va, &stats, &nonempty, &row_map, &no_zeros, &u];
            let words = (block_rows as u64).div_ceil(32);
            pass(r, kernels::BCCOO_BUILD_STATS, 1, vw, &stats_b, words)?;
        }
        let t = kernels::BCCOO_BUILD_TILES;
        let tiles_b: [&dyn Bind; 8] = [
            &*flags,
            &cols,
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
    let st = read_stats()?;
    mark("entries placed, tiles read");
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
            &cols,
            &aux,
            &thread_escapes,
            &carried,
            &stats,
            &columns,
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
    let footprint = Footprint {
        flags: flag_words * 4,
        columns: (col_word_count + escape_words) * 4,
        values: slots * s,
        auxiliary: (aux_words + if compact { row_map_words } else { 0 }) * 4,
        empty_row_blocks: if compact { 0 } else { empty },
        // The blocks' zeros: their fill and the stored zeros.
        stored_zeros: blocks * hw - (nnz as u64 - zeros as u64) + (padded - blocks) * hw,
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
        flags: Binding::Owned(flags),
        columns: Binding::Owned(columns),
        escape_base: col_word_count as u32,
        values: values.clone(),
        aux: Binding::Owned(aux),
        group_info_base: threads as u32 + 1,
        carry_base: (threads + 1 + groups) as u32,
        thread_escape_base: head as u32,
        row_map: Binding::Owned(row_map),
    };
    let gather = GatherPart::on_gpu(values, sources, slots as usize, 0..nnz as u64);
    let value_layout = ValueLayout::Guarded(vec![gather], guard);
    let plan = assemble(
        gpu,
        (nrows, ncols, nnz),
        format,
        &p,
        method,
        value_layout,
        zero_stage,
    )?;
    mark("plan assembled");
    Ok(Some(finish(plan, phases)))
}
