//! `suraa`: SURAA (rows sorted by length, cut into Freedman–Diaconis segments, segments grouped
//! by mean length and run by scalar, vector and "dynamic" kernels).
//!
//! The matrix stays plain CSR on the GPU; the setup adds a permutation (sorted position →
//! row) and a [`Schedule`]. Kernels read rows through the permutation and write `y` in the
//! original order. WGSL cannot launch kernels from the GPU, so the paper's dynamic parallelism
//! becomes a planning pass (workgroups per long row, `setup.rs` or `shaders/suraa/plan.wgsl`)
//! whose output sizes an indirect dispatch; a second small dispatch adds each long row's
//! per-workgroup partial sums in order (no float atomics).
//!
//! The setup runs on the GPU (a radix sort of the rows, then the plan, see `gpu_setup.rs`) or on
//! the host with rayon (`setup.rs`, also the GPU setup's CPU twin); [`SuraaOptions::setup`]
//! chooses.

pub(crate) mod gpu_setup;
pub(crate) mod setup;

use crate::matrix::Checked;
use crate::GpuCsr;
pub use setup::{Schedule, SetupParams};

pub(crate) mod kernels;
pub(crate) use kernels::KERNELS;

use crate::gpu::recorder::{submit_pass, SCAN_BLOCK};
use crate::gpu::Bind;
use crate::gpu::{DeviceBuffer, Gpu};
use crate::kernel::{Kernel, LaneMode, Variant};
use crate::methods::common::{bad, check_workgroup_memory, lane_mode, team_width, workgroup_size};
use crate::methods::{Method, PlanOptions};
use crate::plan::values::{GatherPart, GpuSourceMaker, ValueLayout};
use crate::plan::{Binding, Grid, Phases, SpmvPlan, Stage};
use crate::{CsrMatrix, Error, Result, Scalar};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the setup (sort, segments, groups, plan) runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetupOn {
    /// On the GPU, except for matrices so small that a dispatch costs more than the host work.
    #[default]
    Auto,
    /// On the host, with rayon; the results are uploaded.
    Host,
    /// On the GPU: nothing is read back.
    Gpu,
}

/// How the scalar kernel (G3) gets its sums into `y`, in the original row order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScalarWrites {
    /// Each invocation writes `y[perm[i]]` directly, as the paper does. Neighbouring rows of the
    /// sorted order land far apart in `y`, so every write is a partial memory sector of its own.
    Scatter,
    /// Sums are stored in sorted order (coalesced), then a last pass over the original rows
    /// gathers them through the inverse permutation, writing `y` in order: reads from scattered
    /// places instead of writes to them.
    #[default]
    Gather,
}

impl std::str::FromStr for ScalarWrites {
    type Err = Error;
    /// `gather` or `scatter`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "gather" => Ok(ScalarWrites::Gather),
            "scatter" => Ok(ScalarWrites::Scatter),
            other => Err(Error::UnknownName {
                what: "suraa scalar writes",
                name: other.into(),
                expected: "gather, scatter".into(),
            }),
        }
    }
}

impl ScalarWrites {
    /// Entries of the plan's sorted-order sum buffer.
    pub(crate) fn sorted_sums_len(self, nrows: u32) -> u64 {
        match self {
            ScalarWrites::Gather => nrows.max(1) as u64,
            ScalarWrites::Scatter => 1,
        }
    }
}

/// Parameters of `suraa`; `None` means the default.
#[derive(Clone, Debug, Default)]
pub struct SuraaOptions {
    /// Most rows the dynamic group G1 may take (the paper's `max_child_threads`; default 2048,
    /// 0 disables G1).
    pub max_child: Option<u32>,
    /// Segments whose mean row length is above this may enter G1. Default: twice the workgroup
    /// size, what the widest vector team covers at the paper's two nonzeros per lane. (The paper
    /// uses 32, but its child kernels are sized to their row, so a row of 40 gets 32 threads;
    /// here a dynamic row gets whole workgroups, which only pays for rows no vector team covers.)
    pub dynamic_min_mean: Option<u32>,
    /// Segments whose mean row length reaches this go to the vector kernel (G2), the rest to the
    /// scalar kernel (G3) (default 32, the paper's warp width).
    pub vector_min_mean: Option<u32>,
    /// Nonzeros per lane of one dynamic workgroup (1 to 64, a power of two; default 16).
    pub dynamic_items: Option<u32>,
    /// Products per lane the scalar kernel (G3) loads per round into workgroup memory, coalesced,
    /// before each invocation sums its own row from there (0, 1, 2, 4, 8 or 16; 0 reads every row
    /// directly, as the paper's scalar kernel does). Default: 8, or the most that fits the
    /// adapter's workgroup memory.
    pub scalar_stage: Option<u32>,
    /// How the scalar kernel (G3) writes its sums into `y`; default [`ScalarWrites::Gather`].
    pub scalar_writes: ScalarWrites,
    /// Where the setup runs; default [`SetupOn::Auto`].
    pub setup: SetupOn,
}

/// How a `suraa` plan is laid out and what its setup cost.
#[derive(Clone, Debug)]
pub struct SuraaReport {
    /// The setup's parameters, resolved for this adapter.
    pub params: SetupParams,
    /// Which sorted rows each dispatch covers.
    pub schedule: Schedule,
    /// "gpu" or "host".
    pub setup_on: &'static str,
    /// Wall-clock time of the setup beyond uploading the CSR arrays: sort, segments, groups,
    /// plan, and (host setup) uploading their results; waits for the GPU to finish.
    pub setup_time: Duration,
    /// The part of `setup_time` spent allocating the setup's GPU buffers (the rearranged copy
    /// of the matrix among them) before any GPU work: on discrete GPUs most of a small matrix's
    /// setup. Zero for a host setup, whose uploads allocate as they go.
    pub setup_alloc_time: Duration,
    pub(crate) buffers: Arc<Built>,
}

/// Default of [`SuraaOptions::max_child`] (the paper's value for 23 of its 26 matrices).
pub(crate) const DEFAULT_MAX_CHILD: u32 = 2048;
/// Below this many rows `SetupOn::Auto` sets up on the host.
const HOST_SETUP_ROWS: usize = 4096;

/// Mirrors the nine u32 of the three indirect dispatches (`main`, `combine`, then `scalar`).
pub(crate) const INDIRECT_BYTES: u64 = 36;

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    build(gpu, Source::Host(a), method, opts)
}

/// `suraa` from the caller's GPU buffers, set up on the GPU; `None` where the options ask for the
/// host setup.
pub(crate) fn prepare_gpu<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    checked: Checked,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<SpmvPlan<T>>> {
    if opts.suraa.setup == SetupOn::Host {
        return Ok(None);
    }
    build(gpu, Source::Gpu(a, checked), method, opts).map(Some)
}

/// Where the CSR arrays are (on the GPU, with what their validation found).
enum Source<'a, T> {
    Host(&'a CsrMatrix<T>),
    Gpu(&'a GpuCsr<'a>, Checked),
}

fn build<T: Scalar>(
    gpu: &Gpu,
    src: Source<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    let shape @ (nrows, _, nnz) = match &src {
        Source::Host(a) => a.shape(),
        Source::Gpu(a, _) => (a.nrows, a.ncols, a.nnz),
    };
    let o = &opts.suraa;
    let lanes = lane_mode(gpu, opts.lanes)?;
    let (team, at_least) = team_width(gpu, lanes, opts.lanes_per_row)?;
    let wg = workgroup_size(gpu, opts.workgroup_size, 256, at_least.max(team))?;
    let scalar_bytes = std::mem::size_of::<T>() as u64;
    let wg_arrays = if lanes == LaneMode::Workgroup { 2 } else { 1 };
    let lane_bytes = wg_arrays * wg as u64 * scalar_bytes;
    check_workgroup_memory(gpu, "workgroup_size", wg, lane_bytes)?;
    // The scalar kernel's only workgroup array.
    let stage_bytes = |items: u32| (wg * items).max(1) as u64 * scalar_bytes;
    let scalar_stage = match o.scalar_stage {
        Some(s) if !kernels::SURAA_SCALAR_STAGE.contains(&s) => {
            return Err(bad(
                "suraa.scalar_stage",
                s,
                format!("must be one of {:?}", kernels::SURAA_SCALAR_STAGE),
            ));
        }
        Some(s) => {
            check_workgroup_memory(gpu, "suraa.scalar_stage", s, stage_bytes(s))?;
            s
        }
        None => {
            let have = gpu.info().limits.max_compute_workgroup_storage_size as u64;
            [8, 4, 2, 1]
                .into_iter()
                .find(|&s| stage_bytes(s) <= have)
                .unwrap_or(0)
        }
    };
    let items = o.dynamic_items.unwrap_or(16);
    if !kernels::SURAA_DYNAMIC_ITEMS.contains(&items) {
        return Err(bad(
            "suraa.dynamic_items",
            items,
            format!("must be one of {:?}", kernels::SURAA_DYNAMIC_ITEMS),
        ));
    }
    let params = SetupParams {
        max_child: o.max_child.unwrap_or(DEFAULT_MAX_CHILD),
        dynamic_min_mean: o.dynamic_min_mean.unwrap_or(2 * wg),
        vector_min_mean: o.vector_min_mean.unwrap_or(32),
        lanes: team,
        workgroup_size: wg,
        dynamic_chunk: wg * items,
    };
    // Rows are read through the permutation, so the matrix is not split into row chunks: each
    // array must fit one storage binding.
    let limit = crate::methods::common::chunk_limit(gpu, opts);
    let widest = nnz as u64 * scalar_bytes.max(4);
    if widest > limit {
        return Err(Error::TooLargeForAdapter {
            what: format!("suraa's matrix arrays ({nnz} nonzeros; suraa does not split matrices into row chunks)"),
            bytes: widest,
            limit_name: "max_storage_buffer_binding_size",
            limit,
        });
    }

    // The setup's cost is timed from an idle GPU with the CSR arrays uploaded (every method
    // uploads them) and the setup kernels compiled (once per device) to its results on the GPU:
    // for the host setup that includes uploading the rearranged matrix in their place.
    // (`longest`: entries of the longest row, which bounds the sort keys' width.)
    let on_gpu = |csr: [&wgpu::Buffer; 3], longest: usize| -> Result<_> {
        gpu_setup::compile::<T>(gpu)?;
        gpu.wait()?;
        let start = Instant::now();
        let (b, alloc) = gpu_setup::run::<T>(gpu, shape, longest, &params, o.scalar_writes, csr)?;
        gpu.wait()?;
        Ok((b, start.elapsed(), alloc, true))
    };
    let mut phases = Phases::start(gpu);
    let gpu_setup = o.setup == SetupOn::Gpu || o.setup == SetupOn::Auto && nrows >= HOST_SETUP_ROWS;
    let (b, setup_time, setup_alloc_time, on_gpu) = match src {
        Source::Gpu(a, checked) => on_gpu(
            [a.row_ptr, a.col_idx, a.values],
            checked.longest_row as usize,
        )?,
        Source::Host(a) if gpu_setup => {
            let csr = upload_csr(gpu, a)?;
            phases.upload();
            on_gpu(csr.each_ref(), a.longest_row())?
        }
        Source::Host(a) => {
            gpu.wait()?;
            let start = Instant::now();
            let s = setup::setup(a.row_ptr(), a.col_idx(), &params);
            phases.analysis();
            let b = Built::upload(gpu, a, &s, o.scalar_writes, scalar_bytes)?;
            gpu.wait()?;
            phases.upload();
            (b, start.elapsed(), Duration::ZERO, false)
        }
    };
    if on_gpu {
        phases.build();
    }
    // Only for the report: the GPU setup's schedule lives on the GPU.
    let schedule = gpu_setup::read_schedule(gpu, &b)?;

    // Every kernel takes WG_SIZE; `more` are its own overrides.
    let pipeline = |k: Kernel, more: &[(&'static str, u32)]| {
        let overrides = [&[("WG_SIZE", wg)], more].concat();
        gpu.stage_pipeline(&Variant::new(k, T::WGSL, lanes, overrides))
    };
    let owned = |b: &Arc<DeviceBuffer>| Binding::Owned(b.clone());
    let main = Stage {
        pipeline: pipeline(kernels::SURAA, &[("LANES", team), ("DYNAMIC_ITEMS", items)])?,
        bindings: vec![
            owned(&b.row_ptr),
            owned(&b.col_idx),
            owned(&b.vals),
            Binding::X,
            Binding::Y,
            Binding::Coeffs,
            owned(&b.schedule),
            owned(&b.perm),
            owned(&b.dynamic_ptr),
            owned(&b.partials),
        ],
        grid: Grid::Indirect(b.indirect.clone(), 0),
    };
    let scalar = Stage {
        pipeline: pipeline(
            kernels::SURAA_SCALAR,
            &[
                ("SCALAR_STAGE", scalar_stage),
                ("GATHER", (o.scalar_writes == ScalarWrites::Gather) as u32),
            ],
        )?,
        bindings: vec![
            owned(&b.row_ptr),
            owned(&b.col_idx),
            owned(&b.vals),
            Binding::X,
            Binding::Y,
            Binding::Coeffs,
            owned(&b.schedule),
            owned(&b.perm),
            owned(&b.sorted_sums),
        ],
        grid: Grid::Indirect(b.indirect.clone(), 24),
    };
    let mut stages = vec![main, scalar];
    // (The schedule is known here, so a plan without G3 rows has no gather pass.)
    if o.scalar_writes == ScalarWrites::Gather && schedule.scalar_rows() > 0 {
        stages.push(Stage {
            pipeline: pipeline(kernels::SURAA_GATHER, &[])?,
            bindings: vec![
                Binding::Y,
                Binding::Coeffs,
                owned(&b.schedule),
                owned(&b.inv),
                owned(&b.sorted_sums),
            ],
            grid: Grid::Direct(gpu.grid(nrows.div_ceil(wg as usize) as u32)),
        });
    }
    let combine = Stage {
        pipeline: pipeline(kernels::SURAA_COMBINE, &[("LANES", team)])?,
        bindings: vec![
            Binding::Y,
            Binding::Coeffs,
            owned(&b.schedule),
            owned(&b.perm),
            owned(&b.dynamic_ptr),
            owned(&b.partials),
        ],
        grid: Grid::Indirect(b.indirect.clone(), 12),
    };
    // Value updates gather into the rearranged values; the map back to CSR order is made on
    // the GPU from the permutation at the first update, so plans that never update pay nothing
    // for it.
    let values = {
        let (gpu, perm, sorted_ptr) = (gpu.clone(), b.perm.clone(), b.row_ptr.clone());
        let make: GpuSourceMaker =
            Box::new(move || value_sources(&gpu, &perm, &sorted_ptr, (nrows, nnz)));
        let part = GatherPart::lazy_on_gpu(b.vals.clone(), nnz, 0..nnz as u64, make);
        ValueLayout::Gather(vec![part], Vec::new())
    };
    let report = SuraaReport {
        params,
        schedule,
        setup_on: if on_gpu { "gpu" } else { "host" },
        setup_time,
        setup_alloc_time,
        buffers: Arc::new(b),
    };
    let details = format!(
        "suraa: {} rows per segment ({} segments), G1 {} rows in {} workgroups, G2 {} rows, G3 {} rows ({}, {}); base width {team} via {}, workgroup {wg}, setup on the {}",
        schedule.segment_rows,
        schedule.segments,
        schedule.dynamic_rows,
        schedule.dynamic_groups,
        schedule.vector_rows(),
        schedule.scalar_rows(),
        if scalar_stage == 0 { "read directly".to_owned() } else { format!("staged {scalar_stage} per lane") },
        match o.scalar_writes {
            ScalarWrites::Gather => "gathered into y",
            ScalarWrites::Scatter => "scattered into y",
        },
        lanes.name(),
        report.setup_on,
    );
    stages.push(combine);
    let mut plan = SpmvPlan::new(gpu, shape, stages, method.name(), details).with_values(values);
    plan.report_mut().detail = Some(Arc::new(report));
    plan.report_mut().split = phases.split;
    Ok(plan)
}

/// The value-update map (for each rearranged entry, the CSR entry it holds), made on the GPU
/// from the permutation and the sorted row pointers (shaders/suraa/sources.wgsl; its CPU twin
/// is `setup::sources_from_sorted`); submitted, not waited for.
pub(crate) fn value_sources(
    gpu: &Gpu,
    perm: &wgpu::Buffer,
    sorted_ptr: &wgpu::Buffer,
    (nrows, nnz): (usize, usize),
) -> Result<DeviceBuffer> {
    let none = wgpu::BufferUsages::empty();
    let sources = gpu.storage_overwritten("suraa value sources", nnz as u64 * 4, none)?;
    let csr_ptr = gpu.storage_overwritten("suraa csr row_ptr", (nrows as u64 + 1) * 4, none)?;
    let sums = gpu.storage_overwritten(
        "suraa scan blocks",
        (nrows as u64 + 1).div_ceil(SCAN_BLOCK as u64) * 4,
        none,
    )?;
    // `EntryParams` in shaders/suraa/sorted_row.wgsl.
    let params = gpu.uniform_buffer(
        "suraa sources",
        bytemuck::cast_slice(&[nnz as u32, nrows as u32]),
    );
    submit_pass(
        gpu,
        "suraa sources",
        "making suraa's value-update map",
        |r| {
            let buffers: [&dyn Bind; 5] = [perm, sorted_ptr, &csr_ptr, &sources, &params];
            r.passes(
                kernels::SURAA_SOURCES,
                &buffers,
                &[(0, (nrows as u32 + 1).div_ceil(256))],
            )?;
            r.scan(&csr_ptr, &sums, nrows as u32 + 1)?;
            r.passes(
                kernels::SURAA_SOURCES,
                &buffers,
                &[(1, (nnz as u32).div_ceil(gpu_setup::REARRANGE_BLOCK))],
            )
        },
    )?;
    Ok(sources)
}

/// The CSR arrays uploaded as they are, for the GPU setup.
fn upload_csr<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>) -> Result<[wgpu::Buffer; 3]> {
    let none = wgpu::BufferUsages::empty();
    Ok([
        gpu.storage_buffer("row_ptr", bytemuck::cast_slice(a.row_ptr()), none)?
            .into_inner(),
        gpu.storage_buffer("col_idx", bytemuck::cast_slice(a.col_idx()), none)?
            .into_inner(),
        gpu.storage_buffer("values", bytemuck::cast_slice(a.values()), none)?
            .into_inner(),
    ])
}

/// The setup's results on the GPU: the matrix in sorted row order and the schedule.
pub(crate) struct Built {
    pub row_ptr: Arc<DeviceBuffer>,
    pub col_idx: Arc<DeviceBuffer>,
    pub vals: Arc<DeviceBuffer>,
    pub perm: Arc<DeviceBuffer>,
    /// Original row -> sorted position.
    pub inv: Arc<DeviceBuffer>,
    /// The scalar kernel's sums in sorted order ([`ScalarWrites::Gather`]; one entry otherwise).
    pub sorted_sums: Arc<DeviceBuffer>,
    pub dynamic_ptr: Arc<DeviceBuffer>,
    pub partials: Arc<DeviceBuffer>,
    pub schedule: Arc<DeviceBuffer>,
    pub indirect: Arc<DeviceBuffer>,
    /// Where the GPU setup wrote the schedule (the uniform `schedule` cannot be read back).
    pub schedule_storage: Option<Arc<DeviceBuffer>>,
    /// The schedule of a host setup.
    pub schedule_value: Schedule,
}

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("suraa buffers")
    }
}

impl Built {
    fn upload<T: Scalar>(
        gpu: &Gpu,
        a: &CsrMatrix<T>,
        s: &setup::Setup,
        writes: ScalarWrites,
        scalar_bytes: u64,
    ) -> Result<Self> {
        let sc = &s.schedule;
        let (cols, vals) = setup::rearrange(a.row_ptr(), a.col_idx(), a.values(), s);
        let none = wgpu::BufferUsages::empty();
        let storage =
            |label: &str, bytes: &[u8]| gpu.storage_buffer(label, bytes, none).map(Arc::new);
        let main = gpu.grid(sc.main_groups);
        let combine = gpu.grid(sc.dynamic_rows);
        let scalar = gpu.grid(sc.scalar_groups);
        let args = [
            main[0], main[1], 1, combine[0], combine[1], 1, scalar[0], scalar[1], 1,
        ];
        Ok(Self {
            // Read by the value-update map's kernel (COPY_SRC: `gpu_setup::read_back`).
            row_ptr: Arc::new(gpu.storage_buffer(
                "suraa row_ptr",
                bytemuck::cast_slice(&s.row_ptr),
                wgpu::BufferUsages::COPY_SRC,
            )?),
            col_idx: storage("suraa col_idx", bytemuck::cast_slice(&cols))?,
            vals: storage("suraa values", bytemuck::cast_slice(&vals))?,
            // Read by the value-update map's kernel (COPY_SRC: `gpu_setup::read_back`).
            perm: Arc::new(gpu.storage_buffer(
                "suraa perm",
                bytemuck::cast_slice(&s.perm),
                wgpu::BufferUsages::COPY_SRC,
            )?),
            inv: storage(
                "suraa inverse perm",
                bytemuck::cast_slice(&setup::inverse(&s.perm)),
            )?,
            sorted_sums: Arc::new(gpu.storage_zeroed(
                "suraa sorted sums",
                writes.sorted_sums_len(sc.nrows) * scalar_bytes,
                wgpu::BufferUsages::empty(),
            )?),
            dynamic_ptr: Arc::new(gpu.storage_buffer(
                "suraa dynamic_ptr",
                bytemuck::cast_slice(&s.dynamic_ptr),
                wgpu::BufferUsages::empty(),
            )?),
            partials: Arc::new(gpu.storage_zeroed(
                "suraa partials",
                sc.dynamic_groups as u64 * scalar_bytes,
                wgpu::BufferUsages::empty(),
            )?),
            schedule: Arc::new(gpu.uniform_buffer("suraa schedule", bytemuck::bytes_of(sc))),
            indirect: Arc::new(gpu.storage_buffer(
                "suraa indirect",
                bytemuck::cast_slice(&args),
                wgpu::BufferUsages::INDIRECT,
            )?),
            schedule_storage: None,
            schedule_value: *sc,
        })
    }
}

impl<T: Scalar> SpmvPlan<T> {
    /// For `suraa` plans: the groups, segments and what the setup cost.
    pub fn suraa(&self) -> Option<&SuraaReport> {
        self.report().detail()
    }
}
