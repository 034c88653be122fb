//! `speculative` from a CSR matrix in the caller's GPU buffers, with no host round trip for the
//! matrix: the arrays are copied into the plan's (columns and values padded to whole quads), and
//! the structure analysis of [`super::tiles`] (its CPU twin) runs on the GPU
//! (shaders/speculative/analyse.wgsl); only its five counts are read back, to size the check
//! stage.

use super::{
    chunk_stages, setup, shared, Built, ChunkArrays, FinishRuns, PlanParts, Setup, Speculation,
    LONG_RUN,
};
use crate::gpu::recorder::Recorder;
use crate::gpu::Gpu;
use crate::matrix::GpuCsr;
use crate::methods::common::chunk_limit;
use crate::methods::{Method, PlanOptions};
use crate::plan::values::ValueRun;
use crate::plan::{Binding, Phases, SpmvPlan};
use crate::{Result, Scalar};
use std::sync::Arc;

/// Mirrors `AnalyseParams` in shaders/speculative/analyse.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct AnalyseParams {
    nrows: u32,
    nnz: u32,
    tile_len: u32,
    tiles_per_team: u32,
    boundaries: u32,
    long_run: u32,
    capacity: u32,
    pad: u32,
}

/// Mirrors the `counts` array of shaders/speculative/analyse.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Counts {
    dirty_tiles: u32,
    synchronized: u32,
    short_runs: u32,
    long_runs: u32,
    leading_empty_rows: u32,
    pad: [u32; 3],
}

/// The parameters, or `None` where the host has to build the plan: a check stage on the host (it
/// reads the row pointers there), row chunks, an empty matrix, or tiles per team chosen from the
/// columns.
fn gpu_setup<T: Scalar>(
    gpu: &Gpu,
    shape @ (nrows, _, nnz): (usize, usize, usize),
    opts: &PlanOptions,
) -> Result<Option<Setup>> {
    let from_columns = std::cell::Cell::new(false);
    let st = setup::<T>(gpu, shape, opts, &|| {
        from_columns.set(true);
        false
    })?;
    let s = std::mem::size_of::<T>() as u64;
    let geom = st.geom;
    let teams = geom.teams(nnz as u64);
    // Every array in one binding: no row chunks here.
    let largest = [
        padded_len(nnz) * s.max(4),
        (nrows as u64 + 1 + boundaries(&st, teams) as u64) * 4,
        nrows as u64 * s,
        teams * 2 * s,
    ];
    let fits = largest.iter().all(|&b| b <= chunk_limit(gpu, opts));
    Ok((!st.on_host && !from_columns.get() && nnz != 0 && fits).then_some(st))
}

/// Columns and values are padded to whole quads.
fn padded_len(nnz: usize) -> u64 {
    (nnz as u64).next_multiple_of(4).max(4)
}

/// Tile-row boundaries stored after the row pointers (none when the kernel searches for them).
fn boundaries(st: &Setup, teams: u64) -> u32 {
    if st.given_rows {
        (teams * st.geom.tiles_per_team as u64 + 1) as u32
    } else {
        0
    }
}

/// Whether a host CSR of this shape is better uploaded as it is and built on the GPU: whenever
/// the GPU build can make the plan (its host analysis and quad padding are then not needed).
pub(crate) fn builds_from_host<T: Scalar>(
    gpu: &Gpu,
    shape: (usize, usize, usize),
    opts: &PlanOptions,
) -> Result<bool> {
    Ok(gpu_setup::<T>(gpu, shape, opts)?.is_some())
}

/// The plan, or `None` where the host has to build it (see [`gpu_setup`]). With `validate`,
/// the matrix is validated in the analysis's submission and its findings read back with the
/// counts (one round trip for both; the analysis is bounded on any arrays, and nothing it
/// computed is used unless the matrix is valid); the time spent recording the validation is
/// written there.
pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    method: Method,
    opts: &PlanOptions,
    validate: Option<&mut f64>,
) -> Result<Option<SpmvPlan<T>>> {
    let shape @ (nrows, _, nnz) = (a.nrows, a.ncols, a.nnz);
    let Some(st) = gpu_setup::<T>(gpu, shape, opts)? else {
        return Ok(None);
    };
    let s = std::mem::size_of::<T>() as u64;
    let geom = st.geom;
    let teams = geom.teams(nnz as u64);
    let boundaries = boundaries(&st, teams);
    let padded = padded_len(nnz);
    let mut phases = Phases::start(gpu);
    let none = wgpu::BufferUsages::empty();
    // The copies below and the analysis's first pass (the tile rows) write these but for the
    // quads' padding: only that is cleared in a reused buffer.
    let [ptr_bytes, col_bytes, val_bytes] = a.bytes::<T>();
    let ptr_and_tiles = Arc::new(gpu.storage_overwritten(
        "row_ptr and tile rows",
        (nrows as u64 + 1 + boundaries as u64) * 4,
        none,
    )?);
    let cols = Arc::new(gpu.storage_zeroed_after("col_idx", padded * 4, col_bytes, none)?);
    let values = Arc::new(gpu.storage_zeroed_after("values", padded * s, val_bytes, none)?);
    let tiles = geom.tiles(nnz as u64);
    let dirty = gpu.storage_zeroed("speculative dirty tiles", tiles.div_ceil(32) * 4, none)?;
    let counts = gpu.storage_zeroed("speculative counts", 32, none)?;
    let capacity = teams.max(1);
    let runs = gpu.storage_zeroed("speculative runs (unsorted)", capacity * 8, none)?;
    let params = AnalyseParams {
        nrows: nrows as u32,
        nnz: nnz as u32,
        tile_len: geom.tile_len() as u32,
        tiles_per_team: geom.tiles_per_team,
        boundaries,
        long_run: LONG_RUN,
        capacity: capacity as u32,
        pad: 0,
    };
    let params = gpu.uniform_buffer("speculative analyse", bytemuck::bytes_of(&params));
    let mut enc = gpu
        .device()
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("speculative from GPU buffers"),
        });
    let check = a.record_check_if::<T>(gpu, &mut enc, validate)?;
    gpu.scoped(
        "analysing a GPU matrix for speculative",
        || -> Result<()> {
            gpu.record_copy(&mut enc, a.row_ptr, 0, &ptr_and_tiles, 0, ptr_bytes)?;
            gpu.record_copy(&mut enc, a.col_idx, 0, &cols, 0, col_bytes)?;
            gpu.record_copy(&mut enc, a.values, 0, &values, 0, val_bytes)?;
            {
                let mut r = Recorder::new(gpu, &mut enc, "speculative analyse");
                let buffers: [&dyn crate::gpu::Bind; 5] =
                    [&*ptr_and_tiles, &dirty, &counts, &runs, &params];
                let groups = |n: u64| n.div_ceil(256) as u32;
                r.passes(
                    super::kernels::SPECULATIVE_ANALYSE,
                    &buffers,
                    &[
                        (0, groups(boundaries as u64)),
                        (1, groups(nrows as u64)),
                        (2, groups(teams)),
                    ],
                )?;
            }
            Ok(())
        },
    )??;
    let counts_read = crate::gpu::RangeRead::first(&counts, std::mem::size_of::<Counts>() as u64);
    let c: Counts =
        bytemuck::pod_read_unaligned(&a.read_checked(gpu, enc, check.as_ref(), counts_read)?);
    let total = Speculation {
        tiles,
        dirty_tiles: c.dirty_tiles as u64,
        leading_empty_rows: c.leading_empty_rows,
        synchronized: c.synchronized as u64,
    };
    let shared = shared::<T>(gpu, &st, &opts.speculative, &total)?;
    phases.analysis();
    // The long runs were appended from the back: move them after the short ones.
    let finish_runs = || -> Result<FinishRuns> {
        let (short, long) = (c.short_runs as u64, c.long_runs as u64);
        let sorted = gpu.storage_zeroed_after(
            "speculative runs",
            (short + long).max(1) * 8,
            (short + long) * 8,
            none,
        )?;
        gpu.scoped("sorting speculative's runs", || -> Result<()> {
            let mut enc = gpu
                .device()
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("speculative runs"),
                });
            gpu.record_copy(&mut enc, &runs, 0, &sorted, 0, short * 8)?;
            gpu.record_copy(
                &mut enc,
                &runs,
                (capacity - long) * 8,
                &sorted,
                short * 8,
                long * 8,
            )?;
            gpu.submit([enc.finish()]);
            Ok(())
        })??;
        Ok(FinishRuns {
            runs: Binding::Owned(Arc::new(sorted)),
            short: short as u32,
            long: long as u32,
        })
    };
    let value_runs = vec![ValueRun {
        buffer: values.clone(),
        dst: 0,
        src: 0,
        len: nnz as u64,
    }];
    let arrays = ChunkArrays {
        row_ptr: Binding::Owned(ptr_and_tiles),
        cols: Binding::Owned(cols),
        values: Binding::Owned(values),
    };
    let mut built = Built::default();
    built.add(chunk_stages::<T>(
        gpu,
        &shared,
        &(0..nrows),
        nnz as u64,
        arrays,
        Vec::new(),
        &total,
        finish_runs,
    )?);
    phases.upload();
    let parts = PlanParts {
        shape,
        method,
        chunks: 1,
        resolve: shared.resolve,
        total,
        runs: value_runs,
        split: phases.split,
    };
    Ok(Some(built.plan(gpu, &st, parts)))
}
