//! `csr-stream`: CSR-Stream (Greathouse & Daga, SC14) with each tile's gathers in column
//! order. Rows are packed into tiles of fewer than [`format::tile_entries`] entries; one
//! workgroup multiplies a tile's entries in column order (neighbouring invocations read
//! neighbouring parts of `x`), puts each product at its place in the tile's CSR order in
//! workgroup memory, and sums each row from there. A long row is a tile of its own, summed by
//! its workgroup up to [`format::summed_in_tile`] entries and by the long-row passes beyond.

pub(crate) mod format;
pub(crate) mod kernels;
pub(crate) use kernels::KERNELS;

use crate::gpu::recorder::submit_pass;
use crate::gpu::{DeviceBuffer, Gpu};
use crate::kernel::{LaneMode, Variant};
use crate::methods::common::{
    bad, chunk_bindings, chunk_limit, copy_from_caller, ptr_chunks, rebased_ptr, upload,
    upload_buffer,
};
use crate::methods::{passes::long_rows, Method, PlanOptions};
use crate::plan::values::{GatherPart, ValueLayout};
use crate::plan::{Binding, Grid, Phases, SpmvPlan, Stage};
use crate::{CsrMatrix, Result, Scalar};
use std::sync::Arc;

/// The workgroup size of every csr-stream kernel (a tile's entries are shared out among it).
const WG_SIZE: u32 = 256;

fn check_options(opts: &PlanOptions) -> Result<()> {
    match opts.workgroup_size {
        Some(wg) if wg != WG_SIZE => Err(bad(
            "workgroup_size",
            wg,
            "csr-stream runs workgroups of 256 (a tile's entries are shared out among them)",
        )),
        _ => Ok(()),
    }
}

/// The product's stage over one row chunk's format.
fn stage<T: Scalar>(
    gpu: &Gpu,
    rows: std::ops::Range<usize>,
    [row_ptr, col_idx, values, tile_rows, places]: [Binding; 5],
    grid: Grid,
) -> Result<Stage> {
    let pipeline = gpu.stage_pipeline(&Variant::new(
        kernels::CSR_STREAM,
        T::WGSL,
        LaneMode::Workgroup,
        vec![("WG_SIZE", WG_SIZE)],
    ))?;
    Ok(Stage {
        pipeline,
        bindings: [
            chunk_bindings(gpu, [row_ptr, col_idx, values], rows),
            vec![tile_rows, places],
        ]
        .concat(),
        grid,
    })
}

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    check_options(opts)?;
    let mut phases = Phases::start(gpu);
    let tile = format::tile_entries::<T>();
    let long = long_rows::rows_to_split(a.row_ptr(), 1, format::summed_in_tile(WG_SIZE));
    let max_bytes = chunk_limit(gpu, opts);
    let entry_bytes = std::mem::size_of::<T>().max(4) as u64;
    let chunks = ptr_chunks(a.row_ptr(), entry_bytes, max_bytes, "row")?;
    phases.analysis();
    let mut stages = Vec::with_capacity(chunks.len() + 2);
    let mut parts = Vec::with_capacity(chunks.len());
    let mut tiles = 0;
    for rows in &chunks {
        let (s, e) = (
            a.row_ptr()[rows.start] as usize,
            a.row_ptr()[rows.end] as usize,
        );
        let row_ptr = rebased_ptr(a.row_ptr(), rows);
        let f = format::StreamFormat::build(&row_ptr, &a.col_idx()[s..e], &a.values()[s..e]);
        phases.build();
        let values = upload_buffer(gpu, "csr-stream values", &f.values)?;
        let sources = f.sources.iter().map(|&i| i + s as u32).collect();
        parts.push(GatherPart::new(values.clone(), sources));
        let chunk_tiles = f.tile_rows.len() as u32 - 1;
        tiles += chunk_tiles;
        let tile_rows = tile_words(&f, &row_ptr, most_tiles(rows.len(), e - s, tile));
        let arrays = [
            upload(gpu, "row_ptr", &row_ptr)?,
            upload(gpu, "csr-stream columns", &f.col_idx)?,
            Binding::Owned(values),
            upload(gpu, "csr-stream tile rows", &tile_rows)?,
            upload(gpu, "csr-stream places", f.places_read())?,
        ];
        let grid = Grid::Direct(gpu.grid(chunk_tiles));
        stages.push(stage::<T>(gpu, rows.clone(), arrays, grid)?);
        phases.upload();
    }
    let mut runs = Vec::new();
    stages.extend(long_rows::stages(gpu, a, &long, max_bytes, &mut runs)?);
    phases.upload();
    let details = details(method, tiles, chunks.len(), long.len());
    let mut plan = SpmvPlan::new(gpu, a.shape(), stages, method.name(), details)
        .with_values(ValueLayout::Gather(parts, runs));
    plan.report_mut().split = phases.split;
    Ok(plan)
}

fn details(
    method: Method,
    tiles: impl std::fmt::Display,
    chunks: usize,
    long: impl std::fmt::Display,
) -> String {
    format!(
        "{}: {tiles} tile(s), gathers in column order, {chunks} row chunk(s), {long} row(s) for the long-row passes",
        method.name()
    )
}

/// Mirrors `TileParams` in shaders/csr_stream/build_tiles.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct TileParams {
    nrows: u32,
    tile: u32,
    max_dim: u32,
    bases_at: u32,
}

/// Where the chunk words start in the tile array: after the tile count, that start, and the
/// first row and entry of up to `max_tiles` tiles and of the end (shaders/csr_stream/tiles.wgsl).
fn bases_at(max_tiles: u64) -> u64 {
    2 * max_tiles + 4
}

/// The tile array as the GPU build writes it (its tiles bounded by `max_tiles`; words it does
/// not use are 0).
fn tile_words<T>(f: &format::StreamFormat<T>, row_ptr: &[u32], max_tiles: u64) -> Vec<u32> {
    let at = bases_at(max_tiles) as usize;
    let mut words = vec![0; at + f.chunk_bases.len()];
    words[0] = f.tile_rows.len() as u32 - 1;
    words[1] = at as u32;
    for (pair, &r) in words[2..].chunks_exact_mut(2).zip(&f.tile_rows) {
        pair.copy_from_slice(&[r, row_ptr[r as usize]]);
    }
    words[at..].copy_from_slice(&f.chunk_bases);
    words
}

/// The most tiles the rule of [`format::starts_tile`] can cut `nnz` entries over `nrows` rows
/// into: one per window of entries and of rows, and two per long row.
fn most_tiles(nrows: usize, nnz: usize, tile: u32) -> u64 {
    let long = format::long_row(tile) as u64;
    let bound = nnz as u64 / (tile as u64 - long)
        + nrows as u64 / tile as u64
        + 2 * (nnz as u64 / (long + 1))
        + 2;
    bound.min(nrows as u64)
}

/// `csr-stream` built on the GPU from a CSR in GPU buffers (validated as `checked` says): the
/// tiles cut and each tile's entries sorted there, nothing read back. `None` where the host has
/// to build it (row chunks, no rows).
pub(crate) fn prepare_gpu<T: Scalar>(
    gpu: &Gpu,
    a: &crate::GpuCsr,
    checked: crate::matrix::Checked,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<SpmvPlan<T>>> {
    check_options(opts)?;
    let bytes = a.bytes::<T>();
    let max_bytes = chunk_limit(gpu, opts);
    if a.nrows == 0 || a.nnz == 0 || bytes.iter().any(|&b| b > max_bytes) {
        return Ok(None);
    }
    let mut phases = Phases::start(gpu);
    let tile = format::tile_entries::<T>();
    let (nrows, nnz) = (a.nrows, a.nnz);
    let max_tiles = most_tiles(nrows, nnz, tile);
    phases.analysis();
    let none = wgpu::BufferUsages::empty();
    let [row_ptr] = copy_from_caller(gpu, &[a.buffers()[0]], &[bytes[0]])?;
    let words = |label, n: u64| -> Result<Arc<DeviceBuffer>> {
        Ok(Arc::new(gpu.storage_overwritten(label, n * 4, none)?))
    };
    let col_idx = words("csr-stream columns", nnz as u64)?;
    let values = Arc::new(gpu.storage_overwritten("csr-stream values", bytes[2], none)?);
    let sources = words("csr-stream sources", nnz as u64)?;
    // Zeroed: words no tile or chunk takes are then the host build's.
    let tile_rows = Arc::new(gpu.storage_zeroed(
        "csr-stream tile rows",
        (bases_at(max_tiles) + format::chunk_words(nnz as u64, max_tiles)) * 4,
        none,
    )?);
    let places =
        Arc::new(gpu.storage_zeroed("csr-stream places", nnz.div_ceil(2) as u64 * 4, none)?);
    let starts = gpu.storage_zeroed("csr-stream tile starts", (nrows as u64 + 1) * 4, none)?;
    let block_sums = gpu.storage_zeroed(
        "csr-stream scan blocks",
        (nrows as u64 + 1).div_ceil(crate::gpu::recorder::SCAN_BLOCK as u64) * 4,
        none,
    )?;
    let indirect =
        Arc::new(gpu.storage_zeroed("csr-stream grid", 12, wgpu::BufferUsages::INDIRECT)?);
    let params = TileParams {
        nrows: nrows as u32,
        tile,
        max_dim: gpu
            .info()
            .limits
            .max_compute_workgroups_per_dimension
            .max(1),
        bases_at: u32::try_from(bases_at(max_tiles)).map_err(|_| {
            bad(
                "rows",
                nrows,
                "csr-stream's tile array needs more than 2^32 words",
            )
        })?,
    };
    let params = gpu.uniform_buffer("csr-stream tiles", bytemuck::bytes_of(&params));
    let tile_buffers: [&dyn crate::gpu::Bind; 5] =
        [&*row_ptr, &starts, &*tile_rows, &*indirect, &params];
    let [_, (_, col_in), (_, val_in)] = a.buffers();
    let sort_buffers: [&dyn crate::gpu::Bind; 7] = [
        col_in,
        val_in,
        &*tile_rows,
        &*col_idx,
        &*values,
        &*places,
        &*sources,
    ];
    let val_words = (std::mem::size_of::<T>() / 4) as u32;
    let sort = |pass| vec![("PASS", pass), ("VAL_WORDS", val_words), ("TILE", tile)];
    let per_pointer = (nrows as u32 + 1).div_ceil(256);
    submit_pass(
        gpu,
        "csr-stream build",
        "building csr-stream on the GPU",
        |r| {
            r.passes(
                kernels::CSR_STREAM_BUILD_TILES,
                &tile_buffers,
                &[(0, per_pointer)],
            )?;
            r.scan(&starts, &block_sums, nrows as u32 + 1)?;
            r.passes(
                kernels::CSR_STREAM_BUILD_TILES,
                &tile_buffers,
                &[(1, per_pointer)],
            )?;
            let sort_kernel = kernels::CSR_STREAM_BUILD_SORT;
            r.dispatch(
                sort_kernel,
                sort(0),
                &sort_buffers,
                (nnz as u32).div_ceil(256),
            )?;
            // One workgroup per tile cut, from the grid the cut wrote (not one per possible tile).
            r.dispatch_indirect(sort_kernel, sort(1), &sort_buffers, &indirect)
        },
    )?;
    phases.build();
    let long_row = format::summed_in_tile(WG_SIZE);
    let long_stages = if checked.longest_row as u64 > long_row {
        long_rows::gpu_stages::<T>(
            gpu,
            (nrows, nnz),
            &row_ptr,
            [col_idx.clone(), values.clone()],
            long_row,
            long_rows::most_long_rows((nrows, nnz), long_row),
        )?
    } else {
        Vec::new()
    };
    let arrays = [
        Binding::Owned(row_ptr),
        Binding::Owned(col_idx),
        Binding::Owned(values.clone()),
        Binding::Owned(tile_rows),
        Binding::Owned(places),
    ];
    let long_text = if long_stages.is_empty() {
        "0"
    } else {
        "found on the GPU"
    };
    let mut stages = vec![stage::<T>(
        gpu,
        0..nrows,
        arrays,
        Grid::Indirect(indirect, 0),
    )?];
    stages.extend(long_stages);
    phases.build();
    let details = details(method, "GPU-cut", 1, long_text);
    let part = GatherPart::on_gpu(values, sources, nnz, 0..nnz as u64);
    let mut plan = SpmvPlan::new(gpu, (nrows, a.ncols, nnz), stages, method.name(), details)
        .with_values(ValueLayout::Gather(vec![part], Vec::new()));
    plan.report_mut().split = phases.split;
    Ok(Some(plan))
}

/// Whether a host CSR `a` is better uploaded as it is and built on the GPU: whenever
/// [`prepare_gpu`] can build it (no row chunks).
pub(crate) fn builds_from_host<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    opts: &PlanOptions,
) -> Result<bool> {
    check_options(opts)?;
    let bytes = crate::matrix::csr_bytes::<T>(a.nrows(), a.nnz());
    let max_bytes = chunk_limit(gpu, opts);
    Ok(a.nrows() > 0 && bytes.iter().all(|&b| b <= max_bytes))
}
