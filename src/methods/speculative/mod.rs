//! `speculative`: the speculative segmented sum CSR SpMV of Liu & Vinter. Plain CSR (no format
//! conversion), nonzeros cut evenly into tiles so no row length unbalances the GPU; a GPU stage
//! does the segmented sums assuming no empty rows, marks the tiles where that was wrong, and a
//! check stage adds the cross-team carries and re-arranges the dirty tiles.
//!
//! The check stage runs on the host with rayon over the plan's buffers (the paper's design, for
//! chips where CPU and GPU share memory: there the buffers are mapped in place, no copy), or on
//! the GPU in a small second kernel (discrete GPUs, where the round trip costs more than the
//! kernel, and plans recorded into a caller's encoder, where no round trip is possible). The
//! geometry and the CPU twin of the GPU stage are in `tiles.rs`.

pub(crate) mod gpu_build;
pub(crate) mod tiles;

pub use tiles::{Speculation, TileGeometry};

pub(crate) mod kernels;
pub(crate) use kernels::KERNELS;

use crate::gpu::{DeviceBuffer, Gpu, GpuVector, RangeRead, StagePipeline};
use crate::kernel::{LaneMode, Variant};
use crate::methods::common::{
    bad, check_workgroup_memory, chunk_limit, lane_mode, ptr_chunks, rebased_ptr, team_width,
    upload, upload_values, workgroup_size, ChunkUniform,
};
use crate::methods::{Method, PlanOptions};
use crate::plan::{Binding, Grid, HostPath, HostStage, Phases, SpmvPlan, Stage};
use crate::{CsrMatrix, Error, Result, Scalar};
use rayon::prelude::*;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the check stage runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Finish {
    /// On the host where CPU and GPU share memory (integrated GPUs, software adapters), on the
    /// GPU elsewhere.
    #[default]
    Auto,
    /// On the host, with rayon (`run` returns when it is done).
    Host,
    /// In a second GPU kernel.
    Gpu,
}

/// How the host check stage reaches the GPU's buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostTransfer {
    /// Map in place where memory is shared and the device maps storage buffers
    /// (`MAPPABLE_PRIMARY_BUFFERS`), copy otherwise.
    #[default]
    Auto,
    /// Map the working buffers themselves (zero copy); an error without `MAPPABLE_PRIMARY_BUFFERS`.
    Map,
    /// Copy just the counters, synchronizer, records and the rows concerned to a staging buffer,
    /// and write back just the rows changed.
    Copy,
}

/// Largest W with products loaded per lane (`MAX_LANE_WORK` in shaders/speculative/speculative.wgsl).
pub(crate) const MAX_LANE_WORK: u32 = 16;

/// Parameters of `speculative`; `None` means "choose for this adapter".
#[derive(Clone, Debug, Default)]
pub struct SpeculativeOptions {
    /// W: nonzeros per lane and tile (1, 2, 4, 8, 16, or 32 with staged products). Default 4 with
    /// products loaded per lane (docs/speculative.md); staged, the paper's values: 8
    /// for f32, 4 for f64.
    pub work_per_lane: Option<u32>,
    /// S: tiles per team (1 to 8, 10, 12 or 16). Default with products loaded per lane and
    /// precomputed tile rows: 4. With the paper's search
    /// for tile rows, whose cost longer teams amortise: 4 when rows average under 8 nonzeros, or
    /// when x exceeds 2 MiB and the columns within rows are scattered (most steps between
    /// consecutive columns of a row skip more than 64 columns), 16 otherwise. Staged, 7 (the
    /// paper's).
    pub tiles_per_team: Option<u32>,
    /// Stage each tile's products in workgroup memory after coalesced loads (the paper's way), or
    /// let each lane load its W consecutive nonzeros itself (the default for f32: almost no
    /// workgroup memory, so more workgroups per core, and one barrier per tile instead of two).
    /// f64 stages by default (a lane's f64 product array leaves registers). With products per
    /// lane the default workgroup is 128 invocations, staged 256.
    pub staged_products: Option<bool>,
    /// Resolve dirty tiles (those holding an empty row) in the GPU stage: the lanes building a
    /// tile's descriptor note in workgroup memory where each row ends and write the empty rows
    /// they meet, so each segment of a dirty tile finds its row and the check stage only adds
    /// the synchronizer. `false` is the paper's speculation (dirty tiles go to the shadow and the
    /// check stage re-arranges them). Default: resolved when the check stage runs on the GPU,
    /// at least a quarter of the tiles are dirty and the extra 8·W bytes per
    /// invocation fit; otherwise speculated.
    pub resolve_dirty_tiles: Option<bool>,
    /// Read each team's tile boundaries from an array of every tile's first row that the plan
    /// computes once (4 bytes per tile, under 1% of the matrix), instead of the paper's binary
    /// search over the row pointers at the start of every team (Algorithm 1, lines 4-7). Default
    /// true (faster than the search; docs/speculative.md).
    pub precomputed_tile_rows: Option<bool>,
    /// Where the check stage runs; default [`Finish::Auto`].
    pub finish: Finish,
    /// How a host check stage reaches the GPU's buffers; default [`HostTransfer::Auto`].
    pub transfer: HostTransfer,
}

/// Mirrors `struct FinishParams` in shaders/speculative/finish.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct FinishParams {
    short_runs: u32,
    long_runs: u32,
    short_groups: u32,
    record_groups: u32,
}

/// Below this many nonzeros per row on average, the default tiles per team is 4 rather than 16.
pub(crate) const SHORT_ROWS: f64 = 8.0;

/// With x larger than this and scattered columns, the default tiles per team is 4 rather than 16.
pub(crate) const LARGE_X_BYTES: u64 = 2 << 20;

/// Whether most steps between consecutive columns of a row skip more than 64 columns (256 bytes
/// of an f32 x, beyond a couple of memory sectors), judged on about 64k nonzeros spread evenly
/// over the matrix: gathers from x then rarely share a sector.
pub(crate) fn scattered_columns<T: Scalar>(a: &CsrMatrix<T>) -> bool {
    const SAMPLE_ROWS: usize = 4096;
    const PER_ROW: usize = 16;
    let step = a.nrows().div_ceil(SAMPLE_ROWS).max(1);
    let (mut far, mut steps) = (0u64, 0u64);
    for r in (0..a.nrows()).step_by(step) {
        let (b, e) = (a.row_ptr()[r] as usize, a.row_ptr()[r + 1] as usize);
        for w in a.col_idx()[b..e.min(b + PER_ROW + 1)].windows(2) {
            steps += 1;
            far += (w[1] - w[0] > 64) as u64;
        }
    }
    2 * far > steps
}

/// With at least this fraction of tiles dirty, and the check stage on the GPU, dirty tiles are
/// resolved in the GPU stage by default: resolving pays on mostly dirty matrices and costs on
/// clean ones (docs/speculative.md).
pub(crate) const RESOLVE_DIRTY_FRACTION: f64 = 0.25;

/// Bytes of one row of workgroup-memory banks (32 banks of 4 bytes): staged products get one
/// padding cell per this many bytes (`PAD_RUN` in shaders/speculative/speculative.wgsl).
const PAD_BYTES: u64 = 128;

/// Synchronizer runs longer than this get a workgroup of the finishing pass each.
const LONG_RUN: u32 = 16;

/// Invocations per workgroup of the GPU finishing pass: records are short row ranges.
const FINISH_WG: u32 = 64;

/// What one host-finished product saw and cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostRun {
    /// Speculator records the GPU stage wrote (dirty tiles, plus one for leading empty rows).
    pub dirty_records: u64,
    /// Rows the synchronizer added to.
    pub synchronized_rows: u64,
    /// Time of the host stage, after the GPU stage finished.
    pub host_stage: Duration,
    /// Bytes read from the GPU's buffers (through mappings or copies).
    pub bytes_read: u64,
    /// Bytes written back to the GPU's buffers (through mappings or copies).
    pub bytes_written: u64,
}

/// How a speculative plan runs and what its last host-finished product did.
#[derive(Clone, Debug)]
pub struct SpeculationReport {
    /// How the nonzeros are cut into tiles and teams.
    pub geometry: TileGeometry,
    /// Over all row chunks of the matrix.
    pub speculation: Speculation,
    /// Whether the check stage runs on the host (else in a second GPU kernel).
    pub finish_on_host: bool,
    /// Whether the GPU stage resolves dirty tiles itself ([`SpeculativeOptions::resolve_dirty_tiles`]).
    pub dirty_tiles_resolved: bool,
    /// "map" or "copy" when finishing on the host.
    pub transfer: Option<&'static str>,
    /// What the most recent host-finished product did; `None` before one has run.
    pub last_host_run: Option<HostRun>,
}

pub(crate) struct Report {
    geometry: TileGeometry,
    speculation: Speculation,
    finish_on_host: bool,
    dirty_tiles_resolved: bool,
    transfer: Option<&'static str>,
    last: Mutex<Option<HostRun>>,
}

impl Report {
    pub(crate) fn snapshot(&self) -> SpeculationReport {
        SpeculationReport {
            geometry: self.geometry,
            speculation: self.speculation.clone(),
            finish_on_host: self.finish_on_host,
            dirty_tiles_resolved: self.dirty_tiles_resolved,
            transfer: self.transfer,
            last_host_run: *crate::lock(&self.last),
        }
    }
}

/// One row chunk's buffers, as the host stage needs them.
struct Part {
    row_begin: usize,
    row_ptr: Vec<u32>,
    teams: u64,
    needs_check: bool,
    sync: Arc<DeviceBuffer>,
    spec: Arc<DeviceBuffer>,
    shadow: Arc<DeviceBuffer>,
}

/// The kernel's parameters, from the options or chosen for the scalar type and matrix, and
/// where the check stage runs.
struct Setup {
    lanes: LaneMode,
    staged: bool,
    wg: u32,
    work: u32,
    tiles_per_team: u32,
    given_rows: bool,
    geom: TileGeometry,
    /// Workgroup memory of the main kernel without resolving dirty tiles.
    wg_bytes: u64,
    on_host: bool,
    map: bool,
    aux_usage: wgpu::BufferUsages,
}

/// The parameters for a `(nrows, ncols, nnz)` matrix; `scattered` is asked only where the default
/// tiles per team depends on it (the paper's search for tile rows).
fn setup<T: Scalar>(
    gpu: &Gpu,
    (nrows, ncols, nnz): (usize, usize, usize),
    opts: &PlanOptions,
    scattered: &dyn Fn() -> bool,
) -> Result<Setup> {
    let so = &opts.speculative;
    let lanes = lane_mode(gpu, opts.lanes)?;
    let (team, at_least) = team_width(gpu, lanes, opts.lanes_per_row)?;
    // f64 stages by default: a lane's f64 array leaves registers (see MAX_LANE_WORK in the
    // shader); in f32 per-lane loads win.
    let staged = so.staged_products.unwrap_or(T::NEEDS_F64);
    let wg = workgroup_size(
        gpu,
        opts.workgroup_size,
        if staged { 256 } else { 128 },
        at_least,
    )?;
    let work = so
        .work_per_lane
        .unwrap_or(if T::NEEDS_F64 || !staged { 4 } else { 8 });
    if !kernels::SPECULATIVE_WORK.contains(&work) {
        return Err(bad(
            "work_per_lane",
            work,
            format!("must be one of {:?}", kernels::SPECULATIVE_WORK),
        ));
    }
    if !staged && work > MAX_LANE_WORK {
        return Err(bad("work_per_lane", work, format!("at most {MAX_LANE_WORK} with products loaded per lane (more needs staged_products)")));
    }
    let mean_row = nnz as f64 / nrows.max(1) as f64;
    let given_rows = so.precomputed_tile_rows.unwrap_or(true);
    let tiles_per_team = so.tiles_per_team.unwrap_or_else(|| {
        let large_x = ncols as u64 * std::mem::size_of::<T>() as u64 > LARGE_X_BYTES;
        match (staged, given_rows) {
            (true, _) => 7,
            (false, true) => 4,
            (false, false) if mean_row < SHORT_ROWS || (large_x && scattered()) => 4,
            (false, false) => 16,
        }
    });
    if !kernels::SPECULATIVE_TILES.contains(&tiles_per_team) {
        return Err(bad(
            "tiles_per_team",
            tiles_per_team,
            format!("must be one of {:?}", kernels::SPECULATIVE_TILES),
        ));
    }
    let geom = TileGeometry {
        lanes: team,
        work,
        tiles_per_team,
        teams_per_group: wg / team,
    };
    let s = std::mem::size_of::<T>() as u64;
    let (w, teams) = (wg as u64, geom.teams_per_group as u64);
    let tile = geom.tile_len();
    // Descriptor and transmitter are double-buffered, products staged once.
    let pad_run = PAD_BYTES / s;
    let products = if staged {
        teams * (tile + tile.div_ceil(pad_run)) * s
    } else {
        s
    };
    // Bounds, then the per-team dirty masks and record offsets.
    let mut wg_bytes = products
        + 2 * (w * 4 + teams * s)
        + teams * (tiles_per_team as u64 + 1) * 4
        + teams * 8
        + 8;
    if lanes == LaneMode::Workgroup {
        // Team scans, and the lane module's reduction buffer.
        wg_bytes += w * (8 + s) + w * s;
    }
    check_workgroup_memory(gpu, "work_per_lane", work, wg_bytes)?;
    let (on_host, map) = finish_path(gpu.info(), so)?;
    let aux_usage = match (on_host, map) {
        (false, _) => wgpu::BufferUsages::empty(),
        (true, true) => wgpu::BufferUsages::MAP_READ,
        (true, false) => wgpu::BufferUsages::COPY_SRC,
    };
    Ok(Setup {
        lanes,
        staged,
        wg,
        work,
        tiles_per_team,
        given_rows,
        geom,
        wg_bytes,
        on_host,
        map,
        aux_usage,
    })
}

/// Where the check stage runs (`on_host`) and whether it maps the working buffers (`map`).
fn finish_path(info: &crate::GpuInfo, so: &SpeculativeOptions) -> Result<(bool, bool)> {
    let on_host = match so.finish {
        Finish::Host => true,
        Finish::Gpu => false,
        Finish::Auto => info.shares_memory_with_host(),
    };
    let mappable = info.has(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
    let map = match so.transfer {
        HostTransfer::Map if !mappable => {
            return Err(Error::MissingFeature {
                adapter: info.name.clone(),
                feature: "MAPPABLE_PRIMARY_BUFFERS",
                needed_for: "mapping the speculative method's working buffers".into(),
                hint: " (use HostTransfer::Auto or Copy)",
            })
        }
        HostTransfer::Map => true,
        HostTransfer::Copy => false,
        HostTransfer::Auto => mappable && info.shares_memory_with_host(),
    };
    Ok((on_host, map))
}

/// Each chunk's rebased row pointers and what its structure makes the GPU stage do, and the
/// totals over all chunks.
fn analyse_chunks<T: Scalar>(
    a: &CsrMatrix<T>,
    chunks: &[Range<usize>],
    geom: &TileGeometry,
) -> (Vec<(Vec<u32>, Speculation)>, Speculation) {
    let analysed: Vec<(Vec<u32>, Speculation)> = chunks
        .iter()
        .map(|rows| {
            let row_ptr = rebased_ptr(a.row_ptr(), rows);
            let spec_info = tiles::analyse(&row_ptr, geom);
            (row_ptr, spec_info)
        })
        .collect();
    let mut total = Speculation {
        tiles: 0,
        dirty_tiles: 0,
        leading_empty_rows: 0,
        synchronized: 0,
    };
    for (_, i) in &analysed {
        total.tiles += i.tiles;
        total.dirty_tiles += i.dirty_tiles;
        total.leading_empty_rows += i.leading_empty_rows;
        total.synchronized += i.synchronized;
    }
    (analysed, total)
}

/// The working buffers one product's stages write and its check reads.
#[derive(Clone)]
struct Scratch {
    sync: Arc<DeviceBuffer>,
    spec: Arc<DeviceBuffer>,
    shadow: Arc<DeviceBuffer>,
}

/// What every row chunk's stages share.
struct ChunkShared<'a> {
    geom: &'a TileGeometry,
    /// `run` finishes on the host (with scratch of its own).
    on_host: bool,
    main: StagePipeline,
    finish: StagePipeline,
    resolve: bool,
    aux_usage: wgpu::BufferUsages,
}

/// Whether to resolve dirty tiles in the GPU stage, and the two pipelines.
fn shared<'a, T: Scalar>(
    gpu: &Gpu,
    st: &'a Setup,
    so: &SpeculativeOptions,
    total: &Speculation,
) -> Result<ChunkShared<'a>> {
    let info = gpu.info();
    let (wg, work) = (st.wg, st.work);
    // Resolving keeps a row index per position of the tile, double-buffered.
    let row_ends = 2 * wg as u64 * work as u64 * 4;
    let fits = st.wg_bytes + row_ends <= info.limits.max_compute_workgroup_storage_size as u64;
    let many_dirty = total.dirty_tiles as f64 >= RESOLVE_DIRTY_FRACTION * total.tiles as f64;
    let resolve = so
        .resolve_dirty_tiles
        .unwrap_or(!st.on_host && fits && many_dirty);
    if resolve && !fits {
        let have = info.limits.max_compute_workgroup_storage_size;
        return Err(bad("resolve_dirty_tiles", true, format!("needs {} bytes of workgroup memory with W = {work} and {wg} invocations, the adapter has {have}", st.wg_bytes + row_ends)));
    }
    let pad_run = PAD_BYTES / std::mem::size_of::<T>() as u64;
    let main = gpu.stage_pipeline(&Variant::new(
        kernels::SPECULATIVE,
        T::WGSL,
        st.lanes,
        vec![
            ("WG_SIZE", wg),
            ("LANES", st.geom.lanes),
            ("WORK", work),
            ("TILES", st.tiles_per_team),
            ("STAGED", st.staged as u32),
            ("RESOLVE", resolve as u32),
            ("TILE_ROWS", st.given_rows as u32),
            ("PAD_RUN", pad_run as u32),
        ],
    ))?;
    let finish = gpu.stage_pipeline(&Variant::new(
        kernels::SPECULATIVE_FINISH,
        T::WGSL,
        LaneMode::Workgroup,
        vec![("WG_SIZE", FINISH_WG)],
    ))?;
    Ok(ChunkShared {
        geom: &st.geom,
        on_host: st.on_host,
        main,
        finish,
        resolve,
        aux_usage: st.aux_usage,
    })
}

/// A chunk's stages on the GPU path, its stages on the host path, and what its check reads.
type ChunkStages = (Vec<Stage>, Vec<Stage>, Part);

/// A chunk's matrix on the GPU: row pointers (with the tile rows after them where the kernel
/// reads them), columns and values padded to whole quads.
struct ChunkArrays {
    row_ptr: Binding,
    cols: Binding,
    values: Binding,
}

/// The synchronizer runs of the GPU check stage: a buffer of `(first team, teams)`, the short
/// runs (at most [`LONG_RUN`] teams) first.
struct FinishRuns {
    runs: Binding,
    short: u32,
    long: u32,
}

/// One row chunk's stages over `arrays`: the GPU stage, then (where its structure needs a check)
/// the GPU finishing pass, whose runs `runs` makes; `run` on the host path submits only the GPU
/// stage.
#[allow(clippy::too_many_arguments)]
fn chunk_stages<T: Scalar>(
    gpu: &Gpu,
    c: &ChunkShared,
    rows: &Range<usize>,
    nnz: u64,
    arrays: ChunkArrays,
    row_ptr: Vec<u32>,
    spec_info: &Speculation,
    runs: impl FnOnce() -> Result<FinishRuns>,
) -> Result<ChunkStages> {
    let (geom, resolve, aux_usage) = (c.geom, c.resolve, c.aux_usage);
    let s = std::mem::size_of::<T>() as u64;
    let team_count = geom.teams(nnz);
    let leading = (spec_info.leading_empty_rows > 0) as u64;
    let (records, max_records) = if resolve {
        (leading, 1)
    } else {
        (spec_info.dirty_tiles + leading, geom.max_records(nnz))
    };
    // Resolving, only the leading empty rows are recorded (and read no shadow sums).
    let shadow_rows = if resolve {
        spec_info.leading_empty_rows as usize
    } else {
        rows.len()
    };
    let scratch = || -> Result<Scratch> {
        // Zeroed by wgpu on the GPU, not uploaded from a host array of zeros.
        let zeroed =
            |label: &str, bytes: u64| gpu.storage_zeroed(label, bytes, aux_usage).map(Arc::new);
        Ok(Scratch {
            // A SyncEntry is (u32 row, scalar): 2 scalars' room either way (WGSL alignment).
            sync: zeroed("speculative synchronizer", team_count * 2 * s)?,
            spec: zeroed("speculative speculator", (2 + 2 * max_records) * 4)?,
            shadow: zeroed("speculative shadow", shadow_rows.max(1) as u64 * s)?,
        })
    };
    let chunk = ChunkUniform::buffer(gpu, rows.clone());
    let main_stage = |sc: &Scratch| Stage {
        pipeline: c.main.clone(),
        bindings: vec![
            arrays.row_ptr.clone(),
            arrays.cols.clone(),
            arrays.values.clone(),
            Binding::X,
            Binding::Y,
            Binding::Coeffs,
            Binding::Owned(chunk.clone()),
            Binding::Owned(sc.sync.clone()),
            Binding::Owned(sc.spec.clone()),
            Binding::Owned(sc.shadow.clone()),
        ],
        grid: Grid::Direct(gpu.grid(geom.groups(nnz) as u32)),
    };
    let gpu_scratch = scratch()?;
    let mut gpu_stages = vec![main_stage(&gpu_scratch)];
    // A plan that finishes on the host keeps a second set of scratch buffers for `run`: products
    // recorded or submitted by other threads meanwhile (which finish on the GPU) must not write
    // the buffers its host stage is about to read.
    let host_scratch = if c.on_host {
        scratch()?
    } else {
        gpu_scratch.clone()
    };
    let host_stages = vec![main_stage(&host_scratch)];
    // No check at all where the structure allows none (no empty row, no row across teams).
    let needs_check = spec_info.needs_check(resolve);
    if needs_check {
        let FinishRuns { runs, short, long } = runs()?;
        let params = FinishParams {
            short_runs: short,
            long_runs: long,
            short_groups: short.div_ceil(FINISH_WG),
            record_groups: (records as u32).div_ceil(FINISH_WG),
        };
        let groups = params.short_groups + params.long_runs + params.record_groups;
        gpu_stages.push(Stage {
            pipeline: c.finish.clone(),
            bindings: vec![
                arrays.row_ptr,
                Binding::Y,
                Binding::Coeffs,
                Binding::Owned(chunk),
                Binding::Owned(gpu_scratch.sync),
                Binding::Owned(gpu_scratch.spec),
                Binding::Owned(gpu_scratch.shadow),
                runs,
                Binding::Owned(Arc::new(
                    gpu.uniform_buffer("speculative finish", bytemuck::bytes_of(&params)),
                )),
            ],
            grid: Grid::Direct(gpu.grid(groups)),
        });
    }
    let part = Part {
        row_begin: rows.start,
        row_ptr,
        teams: team_count,
        needs_check,
        sync: host_scratch.sync,
        spec: host_scratch.spec,
        shadow: host_scratch.shadow,
    };
    Ok((gpu_stages, host_stages, part))
}

/// A host chunk's arrays, built and uploaded.
fn upload_chunk<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    st: &Setup,
    rows: &Range<usize>,
    row_ptr: &[u32],
    runs: &mut Vec<crate::plan::values::ValueRun>,
    phases: &mut Phases,
) -> Result<ChunkArrays> {
    let (begin, end) = (
        a.row_ptr()[rows.start] as usize,
        a.row_ptr()[rows.end] as usize,
    );
    // The kernel finds the tile rows after the row pointers (8 storage buffers at most).
    let mut ptr_and_tiles = row_ptr.to_vec();
    if st.given_rows {
        ptr_and_tiles.extend(tiles::tile_rows(row_ptr, &st.geom));
    }
    let (cols, values) = (
        quad_padded(&a.col_idx()[begin..end]),
        quad_padded(&a.values()[begin..end]),
    );
    phases.build();
    let arrays = ChunkArrays {
        row_ptr: upload(gpu, "row_ptr and tile rows", &ptr_and_tiles)?,
        cols: upload(gpu, "col_idx", &cols)?,
        values: upload_values(gpu, "values", &values, begin, end - begin, runs)?,
    };
    phases.upload();
    Ok(arrays)
}

/// The finishing pass's runs of a host chunk, uploaded.
fn upload_runs(gpu: &Gpu, row_ptr: &[u32], geom: &TileGeometry) -> Result<FinishRuns> {
    let mut runs = tiles::sync_run_bounds(row_ptr, geom);
    runs.sort_by_key(|r| r.1 > LONG_RUN);
    let short = runs.iter().filter(|r| r.1 <= LONG_RUN).count() as u32;
    let long = runs.len() as u32 - short;
    let runs: Vec<[u32; 2]> = runs.into_iter().map(|r| [r.0, r.1]).collect();
    Ok(FinishRuns {
        runs: upload(gpu, "speculative runs", &runs)?,
        short,
        long,
    })
}

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    let mut phases = Phases::start(gpu);
    let st = setup::<T>(gpu, a.shape(), opts, &|| scattered_columns(a))?;
    let s = std::mem::size_of::<T>() as u64;
    // The shadow holds one scalar per row of a chunk: chunk rows by the larger of the two.
    let max_bytes = chunk_limit(gpu, opts);
    let entry_bytes = s.max(4);
    // Less one quad: values and columns are padded to whole quads of 4 (see `quad_padded`).
    let chunks = ptr_chunks(
        a.row_ptr(),
        entry_bytes,
        max_bytes.saturating_sub(4 * entry_bytes) / (s / 4).max(1),
        "row",
    )?;
    // An empty matrix still gets one (empty) chunk, so the plan has a stage.
    let chunks = if chunks.is_empty() {
        std::iter::once(0..0).collect()
    } else {
        chunks
    };
    let (analysed, total) = analyse_chunks(a, &chunks, &st.geom);
    let shared = shared::<T>(gpu, &st, &opts.speculative, &total)?;
    phases.analysis();
    let mut built = Built::default();
    let mut runs = Vec::new();
    for (rows, (row_ptr, spec_info)) in chunks.iter().zip(analysed) {
        let arrays = upload_chunk(gpu, a, &st, rows, &row_ptr, &mut runs, &mut phases)?;
        let nnz = (a.row_ptr()[rows.end] - a.row_ptr()[rows.start]) as u64;
        let finish_runs = || upload_runs(gpu, &row_ptr, &st.geom);
        built.add(chunk_stages::<T>(
            gpu,
            &shared,
            rows,
            nnz,
            arrays,
            row_ptr.clone(),
            &spec_info,
            finish_runs,
        )?);
        phases.upload();
    }
    let ctx = PlanParts {
        shape: a.shape(),
        method,
        chunks: chunks.len(),
        resolve: shared.resolve,
        total,
        runs,
        split: phases.split,
    };
    Ok(built.plan(gpu, &st, ctx))
}

/// The stages and check parts of every chunk.
#[derive(Default)]
struct Built {
    gpu_stages: Vec<Stage>,
    host_stages: Vec<Stage>,
    parts: Vec<Part>,
}

/// What the plan says of itself besides its stages.
struct PlanParts {
    shape: (usize, usize, usize),
    method: Method,
    chunks: usize,
    resolve: bool,
    total: Speculation,
    runs: Vec<crate::plan::values::ValueRun>,
    split: crate::plan::SetupSplit,
}

impl Built {
    fn add(&mut self, (gpu_part, host_part, part): ChunkStages) {
        self.gpu_stages.extend(gpu_part);
        self.host_stages.extend(host_part);
        self.parts.push(part);
    }

    /// The plan, its report, and (finishing on the host) its host path.
    fn plan<T: Scalar>(self, gpu: &Gpu, st: &Setup, p: PlanParts) -> SpmvPlan<T> {
        let (geom, total) = (st.geom, p.total);
        let transfer = st.on_host.then_some(if st.map { "map" } else { "copy" });
        let report = Arc::new(Report {
            geometry: geom,
            speculation: total.clone(),
            finish_on_host: st.on_host,
            dirty_tiles_resolved: p.resolve,
            transfer,
            last: Mutex::new(None),
        });
        let details = format!(
            "speculative: tiles of {}x{} (T x W), {} tiles per team, {} teams per workgroup ({} lanes via {}), products {}, {} row chunk(s), hit rate {:.1}% ({} of {} tiles dirty, {}), check on the {}",
            geom.lanes,
            geom.work,
            geom.tiles_per_team,
            geom.teams_per_group,
            st.wg,
            st.lanes.name(),
            if st.staged { "staged" } else { "loaded per lane" },
            p.chunks,
            100.0 * total.hit_rate(),
            total.dirty_tiles,
            total.tiles,
            if p.resolve { "resolved in the kernel" } else { "re-arranged by the check" },
            match transfer {
                Some(t) => format!("host ({t})"),
                None => "GPU".into(),
            }
        );
        let mut plan = SpmvPlan::new(gpu, p.shape, self.gpu_stages, p.method.name(), details)
            .with_values(crate::plan::values::ValueLayout::Runs(p.runs));
        plan.report_mut().detail = Some(report.clone());
        plan.report_mut().split = p.split;
        if st.on_host {
            plan.with_host_path(HostPath {
                stages: self.host_stages,
                stage: Box::new(HostCheck::<T> {
                    parts: self.parts,
                    map: st.map,
                    report,
                    _t: PhantomData,
                }),
                turn: Default::default(),
            })
        } else {
            plan
        }
    }
}

/// `data` padded with zeros to a whole number of quads (4 entries), so that the kernel can also
/// read it as an array of 4-vectors: a lane loading its W consecutive nonzeros itself then
/// loads W / 4 vectors, each memory sector once, instead of W scattered scalars.
fn quad_padded<P: bytemuck::Pod + bytemuck::Zeroable>(data: &[P]) -> std::borrow::Cow<'_, [P]> {
    if data.len().is_multiple_of(4) && !data.is_empty() {
        return std::borrow::Cow::Borrowed(data);
    }
    let mut v = Vec::with_capacity(data.len().next_multiple_of(4).max(4));
    v.extend_from_slice(data);
    v.resize(v.capacity(), P::zeroed());
    std::borrow::Cow::Owned(v)
}

/// The host check stage (lines 62-68 and section 3.2's checking stage), with rayon.
struct HostCheck<T> {
    parts: Vec<Part>,
    /// Map buffers in place rather than copy.
    map: bool,
    report: Arc<Report>,
    _t: PhantomData<T>,
}

/// Byte ranges of one buffer to read.
/// Byte ranges of one buffer the check stage reads.
struct Fetch<'a> {
    buffer: &'a wgpu::Buffer,
    ranges: Vec<Range<u64>>,
}

impl<T: Scalar> HostCheck<T> {
    /// Whether `b` is mapped in place (the plan maps working buffers and `b` allows `usage`).
    fn in_place(&self, b: &wgpu::Buffer, usage: wgpu::BufferUsages) -> bool {
        self.map && b.usage().contains(usage)
    }

    /// Reads the ranges of several buffers in one round trip, counting the bytes.
    fn fetch(&self, gpu: &Gpu, reqs: &[Fetch], bytes_read: &mut u64) -> Result<Vec<Vec<Vec<u8>>>> {
        let reads: Vec<RangeRead> = reqs
            .iter()
            .map(|r| RangeRead {
                buffer: r.buffer,
                ranges: r.ranges.clone(),
                in_place: self.in_place(r.buffer, wgpu::BufferUsages::MAP_READ),
            })
            .collect();
        *bytes_read += reqs
            .iter()
            .flat_map(|r| &r.ranges)
            .map(|g| g.end - g.start)
            .sum::<u64>();
        gpu.read_ranges(&reads)
    }

    /// Writes byte ranges into `buffer`, counting the bytes.
    fn store(
        &self,
        gpu: &Gpu,
        buffer: &wgpu::Buffer,
        writes: &[(u64, Vec<u8>)],
        bytes_written: &mut u64,
    ) -> Result<()> {
        *bytes_written += writes.iter().map(|w| w.1.len() as u64).sum::<u64>();
        let in_place = self.in_place(buffer, wgpu::BufferUsages::MAP_WRITE);
        gpu.write_ranges(buffer, writes, in_place)
    }
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytemuck::pod_collect_to_vec(bytes)
}

fn scalars<T: Scalar>(bytes: &[u8]) -> Vec<T> {
    bytemuck::pod_collect_to_vec(bytes)
}

/// Merges sorted row ranges closer than `gap` rows (fewer copies for scattered rows).
fn merge(mut ranges: Vec<Range<u32>>, gap: u32) -> Vec<Range<u32>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u32>> = Vec::new();
    for r in ranges.into_iter().filter(|r| !r.is_empty()) {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Joins row runs that touch into one run each, in row order.
fn coalesce<T: Copy>(mut runs: Vec<(u32, Vec<T>)>) -> Vec<(u32, Vec<T>)> {
    runs.sort_by_key(|r| r.0);
    let mut out: Vec<(u32, Vec<T>)> = Vec::new();
    for (start, v) in runs {
        match out.last_mut() {
            Some(last) if last.0 + last.1.len() as u32 == start => last.1.extend(v),
            _ => out.push((start, v)),
        }
    }
    out
}

impl<T: Scalar> HostStage<T> for HostCheck<T> {
    fn serves(&self, y: &wgpu::Buffer) -> bool {
        use wgpu::BufferUsages as U;
        let reads = self.in_place(y, U::MAP_READ) || y.usage().contains(U::COPY_SRC);
        let writes = self.in_place(y, U::MAP_WRITE) || y.usage().contains(U::COPY_DST);
        reads && writes
    }

    fn finish(&self, gpu: &Gpu, alpha: T, beta: T, y: &mut GpuVector<T>) -> Result<()> {
        let out = self.check(gpu, alpha, beta, y);
        if out.is_err() {
            // The next product must not inherit this one's dirty records.
            for p in self.parts.iter().filter(|p| p.needs_check) {
                gpu.write_buffer(&p.spec, 0, bytemuck::bytes_of(&0u32));
            }
        }
        out
    }
}

impl<T: Scalar> HostCheck<T> {
    /// The check stage proper (the paper's host part): carries between teams, dirty tiles.
    fn check(&self, gpu: &Gpu, alpha: T, beta: T, y: &mut GpuVector<T>) -> Result<()> {
        if !self.parts.iter().any(|p| p.needs_check) {
            *crate::lock(&self.report.last) = Some(HostRun {
                dirty_records: 0,
                synchronized_rows: 0,
                host_stage: Duration::ZERO,
                bytes_read: 0,
                bytes_written: 0,
            });
            return Ok(());
        }
        gpu.wait()?;
        let start = Instant::now();
        let s = std::mem::size_of::<T>() as u64;
        let (mut bytes_read, mut bytes_written) = (0, 0);
        let parts: Vec<&Part> = self.parts.iter().filter(|p| p.needs_check).collect();

        // Round 1: each part's dirty counter and synchronizer.
        let reqs: Vec<Fetch> = parts
            .iter()
            .flat_map(|p| {
                [
                    Fetch {
                        buffer: &p.spec,
                        ranges: std::iter::once(0..4).collect(),
                    },
                    Fetch {
                        buffer: &p.sync,
                        ranges: std::iter::once(0..p.teams * 2 * s).collect(),
                    },
                ]
            })
            .collect();
        let got = self.fetch(gpu, &reqs, &mut bytes_read)?;
        let mut counts = Vec::new();
        let mut syncs = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            counts.push(u32s(&got[2 * i][0])[0]);
            // SyncEntry: the row's u32, then the value at the scalar's alignment.
            let entries: Vec<(u32, T)> = got[2 * i + 1][0]
                .chunks_exact(2 * s as usize)
                .map(|e| {
                    (
                        u32::from_le_bytes(e[..4].try_into().unwrap()),
                        scalars::<T>(&e[s as usize..])[0],
                    )
                })
                .collect();
            debug_assert_eq!(entries.len() as u64, p.teams);
            syncs.push(tiles::sync_runs(&entries));
        }

        // Round 2: the records of the parts with dirty tiles.
        let reqs: Vec<Fetch> = parts
            .iter()
            .zip(&counts)
            .map(|(p, &c)| Fetch {
                buffer: &p.spec,
                ranges: if c > 0 {
                    std::iter::once(8..8 + 8 * c as u64).collect()
                } else {
                    vec![]
                },
            })
            .collect();
        let got = self.fetch(gpu, &reqs, &mut bytes_read)?;
        let records: Vec<Vec<Range<u32>>> = got
            .iter()
            .map(|g| {
                g.first()
                    .map(|b| u32s(b).chunks_exact(2).map(|r| r[0]..r[1]).collect())
                    .unwrap_or_default()
            })
            .collect();

        // Round 3: the rows of y read (synchronized rows; dirty rows when β·y counts) and the
        // shadow of the dirty rows.
        let read_old = beta.to_f64() != 0.0;
        let mut y_rows = Vec::new();
        let mut shadow_reqs = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let base = p.row_begin as u32;
            y_rows.extend(syncs[i].iter().map(|&(r, _)| base + r..base + r + 1));
            if read_old {
                y_rows.extend(records[i].iter().map(|r| base + r.start..base + r.end));
            }
            let shadow_rows = merge(records[i].clone(), 0);
            shadow_reqs.push(Fetch {
                buffer: &p.shadow,
                ranges: shadow_rows
                    .iter()
                    .map(|r| r.start as u64 * s..r.end as u64 * s)
                    .collect(),
            });
        }
        let y_rows = merge(y_rows, 64);
        let mut reqs = vec![Fetch {
            buffer: &y.buffer,
            ranges: y_rows
                .iter()
                .map(|r| r.start as u64 * s..r.end as u64 * s)
                .collect(),
        }];
        reqs.extend(shadow_reqs);
        let got = self.fetch(gpu, &reqs, &mut bytes_read)?;
        let y_read: Vec<(u32, Vec<T>)> = y_rows
            .iter()
            .zip(&got[0])
            .map(|(r, b)| (r.start, scalars::<T>(b)))
            .collect();
        let y_old = |row: u32| -> T {
            let k = y_read.partition_point(|(start, _)| *start <= row) - 1;
            y_read[k].1[(row - y_read[k].0) as usize]
        };
        let mut out: Vec<(u32, Vec<T>)> = Vec::new();
        let mut synchronized_rows = 0;
        for (i, p) in parts.iter().enumerate() {
            let base = p.row_begin as u32;
            for &(r, sum) in &syncs[i] {
                out.push((
                    base + r,
                    vec![T::from_f64(y_old(base + r).to_f64() + alpha.to_f64() * sum)],
                ));
            }
            synchronized_rows += syncs[i].len() as u64;
            let shadow: Vec<(u32, Vec<T>)> = merge(records[i].clone(), 0)
                .iter()
                .zip(&got[1 + i])
                .map(|(r, b)| (r.start, scalars::<T>(b)))
                .collect();
            let rearranged: Vec<(u32, Vec<T>)> = records[i]
                .par_iter()
                .filter(|r| !r.is_empty())
                .map(|r| {
                    let k = shadow.partition_point(|(start, _)| *start <= r.start) - 1;
                    let sh = &shadow[k].1[(r.start - shadow[k].0) as usize..];
                    let mut ys: Vec<T> = if read_old {
                        (r.start..r.end).map(|row| y_old(base + row)).collect()
                    } else {
                        vec![T::from_f64(0.0); r.len()]
                    };
                    tiles::rearrange(&p.row_ptr, r.clone(), sh, alpha, beta, &mut ys);
                    (base + r.start, ys)
                })
                .collect();
            out.extend(rearranged);
        }

        // Write back only the rows changed, and reset the dirty counters.
        let writes: Vec<(u64, Vec<u8>)> = coalesce(out)
            .into_iter()
            .map(|(r, v)| (r as u64 * s, bytemuck::cast_slice(&v).to_vec()))
            .collect();
        self.store(gpu, &y.buffer, &writes, &mut bytes_written)?;
        for (p, &c) in parts.iter().zip(&counts) {
            if c > 0 {
                gpu.write_buffer(&p.spec, 0, bytemuck::bytes_of(&0u32));
                bytes_written += 4;
            }
        }
        let dirty_records = counts.iter().map(|&c| c as u64).sum();
        *crate::lock(&self.report.last) = Some(HostRun {
            dirty_records,
            synchronized_rows,
            host_stage: start.elapsed(),
            bytes_read,
            bytes_written,
        });
        Ok(())
    }
}

impl<T: Scalar> SpmvPlan<T> {
    /// For `speculative` plans: the speculation hit rate, how products finish, and what the
    /// last host-finished product saw and cost.
    pub fn speculation(&self) -> Option<SpeculationReport> {
        self.report().detail::<Report>().map(|r| r.snapshot())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SuiteClass;

    #[test]
    fn scattered_columns_tell_random_gathers_from_local_ones() {
        for (class, scattered) in [
            (SuiteClass::Wide, true),
            (SuiteClass::Tall, true),
            (SuiteClass::PowerLaw, true),
            (SuiteClass::Banded, false),
            (SuiteClass::Dense, false),
        ] {
            assert_eq!(
                scattered_columns(&class.generate(200_000, 3)),
                scattered,
                "{}",
                class.name()
            );
        }
        assert!(!scattered_columns(&CsrMatrix::<f32>::zeros(0, 0).unwrap()));
    }
}
