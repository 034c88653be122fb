//! The CSR baselines `csr-scalar` and `csr-vector`: plain CSR arrays, split into row chunks when
//! one array would exceed the adapter's storage-binding limit.

pub(crate) mod kernels;
pub(crate) use kernels::KERNELS;

use crate::gpu::{Gpu, StagePipeline};
use crate::kernel::{LaneMode, Variant};
use crate::matrix::Checked;
use crate::methods::common::{
    check_workgroup_memory, chunk_bindings, copy_from_caller, lane_mode, ptr_chunks, rebased_ptr,
    team_width, upload, upload_buffer, upload_values, workgroup_size,
};
use crate::methods::{passes::long_rows, CallerBuffers, Method, PlanOptions};
use crate::plan::values::{ValueLayout, ValueRun};
use crate::plan::{Binding, Grid, Phases, SpmvPlan, Stage};
use crate::{CsrMatrix, GpuCsr, Result, Scalar};
use std::sync::Arc;

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    let mut runs = Vec::new();
    let mut phases = Phases::start(gpu);
    let (stages, details) = stages(gpu, a, method, opts, &mut runs, &mut phases)?;
    let spmm = Spmm::of(&stages, a.nrows(), LongRows::of(a.row_ptr()), opts);
    let mut plan = SpmvPlan::new(gpu, a.shape(), stages, method.name(), details)
        .with_values(ValueLayout::Runs(runs));
    if let Some(spmm) = spmm {
        plan = plan.with_spmm(spmm);
    }
    plan.report_mut().split = phases.split;
    Ok(plan)
}

/// SpMM on a plan's CSR arrays (one row chunk): `COLS` invocations per row, the least power of
/// two that covers k columns up to 32 (beyond, each invocation takes several columns).
struct Spmm {
    arrays: [Arc<crate::gpu::DeviceBuffer>; 3],
    nrows: usize,
    wg: Option<u32>,
    /// The rows [`kernels::CSR_SPMM`] leaves, their pieces on the GPU (made at the first use).
    long: LongRows,
    long_desc: std::sync::OnceLock<Arc<crate::gpu::DeviceBuffer>>,
}

/// Entries beyond which SpMM shares a row out among workgroups (`SPMM_LONG` in
/// shaders/csr/spmm.wgsl).
const SPMM_LONG: u32 = 512;
/// Entries of one piece of such a row (one workgroup's share).
const SPMM_PIECE: u32 = 2048;

/// SpMM's long rows: `(row, first entry, end entry)` each.
#[derive(Clone, Default)]
pub(crate) struct LongRows(Vec<[u32; 3]>);

impl LongRows {
    /// The rows of more than [`SPMM_LONG`] entries (a parallel scan of the row pointers).
    fn of(row_ptr: &[u32]) -> Self {
        use rayon::prelude::*;
        let rows = row_ptr.len().saturating_sub(1);
        Self(
            (0..rows)
                .into_par_iter()
                .with_min_len(1 << 16)
                .filter(|&r| row_ptr[r + 1] - row_ptr[r] > SPMM_LONG)
                .map(|r| [r as u32, row_ptr[r], row_ptr[r + 1]])
                .collect(),
        )
    }

    /// `[pieces, long rows, (begin, end) per piece, (row, first piece, end piece) per row]`
    /// (the `desc` of shaders/csr/spmm_long.wgsl) and the piece count.
    fn desc(&self) -> (Vec<u32>, u32) {
        let mut pieces = Vec::new();
        let mut rows = Vec::new();
        for &[row, begin, end] in &self.0 {
            let first = pieces.len() as u32 / 2;
            let mut b = begin;
            while b < end {
                pieces.extend([b, end.min(b.saturating_add(SPMM_PIECE))]);
                b = b.saturating_add(SPMM_PIECE);
            }
            rows.extend([row, first, pieces.len() as u32 / 2]);
        }
        let count = pieces.len() as u32 / 2;
        let mut desc = vec![count, self.0.len() as u32];
        desc.extend(pieces);
        desc.extend(rows);
        (desc, count)
    }
}

impl Spmm {
    /// The program over the arrays of `stages`' first stage, where the plan has one row chunk
    /// (its first stage binds the whole matrix's row pointers, columns and values).
    fn of<T: Scalar>(
        stages: &[Stage],
        nrows: usize,
        long: LongRows,
        opts: &PlanOptions,
    ) -> Option<Arc<dyn crate::plan::SpmmProgram<T>>> {
        let first = stages.first()?;
        // Row chunks are stages of the first one's pipeline (the long-row passes have others).
        let chunks = stages
            .iter()
            .filter(|s| s.pipeline.same_as(&first.pipeline))
            .count();
        if chunks != 1 {
            return None;
        }
        let mut arrays = Vec::new();
        for b in &first.bindings[..3] {
            match b {
                Binding::Owned(buf) => arrays.push(buf.clone()),
                _ => return None,
            }
        }
        let arrays: [Arc<crate::gpu::DeviceBuffer>; 3] = arrays.try_into().ok()?;
        Some(Arc::new(Self {
            arrays,
            nrows,
            wg: opts.workgroup_size,
            long,
            long_desc: Default::default(),
        }))
    }
}

impl<T: Scalar> crate::plan::SpmmProgram<T> for Spmm {
    fn stages(&self, gpu: &Gpu, shape: crate::plan::DenseShape) -> Result<Vec<Stage>> {
        let cols = kernels::SPMM_COLS
            .iter()
            .copied()
            .find(|&c| c as usize >= shape.k)
            .unwrap_or(32);
        let wg = workgroup_size(gpu, self.wg, 256, cols)?;
        // A column-major X is read by rows (each lane its own row, as csr-scalar), a row-major
        // one by COLS lanes per row reading a row of X together.
        let by_row = shape.x_steps.0 == 1 && shape.k > 1;
        let (main, overrides, invocations) = if by_row {
            let blocks = shape.k.div_ceil(4) as u64;
            (
                kernels::CSR_SPMM_BY_ROW,
                vec![("WG_SIZE", wg)],
                self.nrows as u64 * blocks,
            )
        } else {
            let invocations = self.nrows as u64 * cols as u64;
            (
                kernels::CSR_SPMM,
                vec![("WG_SIZE", wg), ("COLS", cols)],
                invocations,
            )
        };
        let pipeline =
            gpu.stage_pipeline(&Variant::new(main, T::WGSL, LaneMode::Workgroup, overrides))?;
        let groups = u32::try_from(invocations.div_ceil(wg as u64)).map_err(|_| {
            crate::Error::InvalidParameter {
                name: "k",
                value: shape.k.to_string(),
                reason: "more row-and-column blocks than one dispatch takes".into(),
            }
        })?;
        // Mirrors `struct Dense` in shaders/csr/spmm.wgsl.
        let dense: [u32; 6] = [
            self.nrows as u32,
            shape.k as u32,
            shape.x_steps.0 as u32,
            shape.x_steps.1 as u32,
            shape.y_steps.0 as u32,
            shape.y_steps.1 as u32,
        ];
        let dense = gpu.uniform_buffer("wgspmv spmm shape", bytemuck::cast_slice(&dense));
        let dense = Arc::new(dense);
        let [row_ptr, col_idx, values] = self.arrays.clone().map(Binding::Owned);
        let mut stages = vec![Stage {
            pipeline,
            bindings: vec![
                row_ptr,
                col_idx.clone(),
                values.clone(),
                Binding::X,
                Binding::Y,
                Binding::Coeffs,
                Binding::Owned(dense.clone()),
            ],
            grid: Grid::Direct(gpu.grid(groups)),
        }];
        if self.long.0.is_empty() {
            return Ok(stages);
        }
        let (desc_words, pieces) = self.long.desc();
        let desc = match self.long_desc.get() {
            Some(d) => d.clone(),
            None => {
                let d = upload_buffer(gpu, "spmm long rows", &desc_words)?;
                self.long_desc.get_or_init(|| d).clone()
            }
        };
        let s = std::mem::size_of::<T>() as u64;
        let partials = Arc::new(gpu.storage_overwritten(
            "spmm long-row partials",
            pieces as u64 * shape.k as u64 * s,
            wgpu::BufferUsages::empty(),
        )?);
        let long_rows = self.long.0.len() as u32;
        for (finish, groups) in [(0, pieces), (1, long_rows)] {
            let pipeline = gpu.stage_pipeline(&Variant::new(
                kernels::CSR_SPMM_LONG,
                T::WGSL,
                LaneMode::Workgroup,
                vec![("WG_SIZE", 256), ("COLS", cols), ("FINISH", finish)],
            ))?;
            stages.push(Stage {
                pipeline,
                bindings: vec![
                    Binding::Owned(desc.clone()),
                    col_idx.clone(),
                    values.clone(),
                    Binding::X,
                    Binding::Y,
                    Binding::Coeffs,
                    Binding::Owned(dense.clone()),
                    Binding::Owned(partials.clone()),
                ],
                grid: Grid::Direct(gpu.grid(groups)),
            });
        }
        Ok(stages)
    }
}

/// What a CSR baseline runs: its pipeline, the lane team and the rows one workgroup covers.
struct Choice {
    pipeline: StagePipeline,
    lanes: LaneMode,
    wg: u32,
    team: u32,
    rows_per_group: u32,
}

impl Choice {
    fn new<T: Scalar>(gpu: &Gpu, method: Method, opts: &PlanOptions) -> Result<Self> {
        let (kernel, lanes, wg, team, rows_per_group) = match method {
            Method::CsrScalar => {
                let wg = workgroup_size(gpu, opts.workgroup_size, 256, 1)?;
                (kernels::CSR_SCALAR, LaneMode::Workgroup, wg, 1, wg)
            }
            Method::CsrVector => {
                let lanes = lane_mode(gpu, opts.lanes)?;
                let (team, at_least) = team_width(gpu, lanes, opts.lanes_per_row)?;
                let wg = workgroup_size(gpu, opts.workgroup_size, 256, at_least)?;
                if lanes == LaneMode::Workgroup {
                    check_workgroup_memory(
                        gpu,
                        "workgroup_size",
                        wg,
                        wg as u64 * std::mem::size_of::<T>() as u64,
                    )?;
                }
                (kernels::CSR_VECTOR, lanes, wg, team, wg / team)
            }
            _ => unreachable!("csr::prepare only builds the CSR baselines"),
        };
        let overrides = if kernel.name == kernels::CSR_VECTOR.name {
            vec![("WG_SIZE", wg), ("LANES", team)]
        } else {
            vec![("WG_SIZE", wg)]
        };
        let pipeline = gpu.stage_pipeline(&Variant::new(kernel, T::WGSL, lanes, overrides))?;
        Ok(Self {
            pipeline,
            lanes,
            wg,
            team,
            rows_per_group,
        })
    }

    /// Entries beyond which a row goes to the long-row passes.
    fn long_row(&self) -> u64 {
        long_rows::LANE_ITERATIONS as u64 * self.team as u64
    }

    /// The stage over rows `row_begin..row_begin + nrows` held in `arrays` (row pointers rebased
    /// to the chunk, its columns, its values).
    fn stage(&self, gpu: &Gpu, row_begin: usize, nrows: usize, arrays: [Binding; 3]) -> Stage {
        Stage {
            pipeline: self.pipeline.clone(),
            bindings: chunk_bindings(gpu, arrays, row_begin..row_begin + nrows),
            grid: Grid::Direct(gpu.grid((nrows as u32).div_ceil(self.rows_per_group))),
        }
    }

    fn details(&self, method: Method, chunks: usize, long: impl std::fmt::Display) -> String {
        let lanes_text = match method {
            Method::CsrScalar => "one invocation per row".to_owned(),
            _ => format!(
                "{} lanes per row via {} reduction",
                self.team,
                self.lanes.name()
            ),
        };
        format!(
            "{}: {lanes_text}, workgroup {}, {chunks} row chunk(s), {long}",
            method.name(),
            self.wg,
        )
    }
}

/// The stages of `csr-scalar` or `csr-vector` (which CMRS with one row per strip also runs) and
/// the parameters they were built with.
pub(crate) fn stages<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
    runs: &mut Vec<ValueRun>,
    phases: &mut Phases,
) -> Result<(Vec<Stage>, String)> {
    let choice = Choice::new::<T>(gpu, method, opts)?;
    let max_bytes = crate::methods::common::chunk_limit(gpu, opts);
    let entry_bytes = std::mem::size_of::<T>().max(4) as u64;
    let chunks = ptr_chunks(a.row_ptr(), entry_bytes, max_bytes, "row")?;
    // Rows longer than one invocation may loop over are skipped by the kernel and added here.
    let long = long_rows::rows_to_split(a.row_ptr(), 1, choice.long_row());
    phases.analysis();
    let mut stages = Vec::with_capacity(chunks.len());
    for rows in &chunks {
        let (s, e) = (
            a.row_ptr()[rows.start] as usize,
            a.row_ptr()[rows.end] as usize,
        );
        let arrays = [
            upload(gpu, "row_ptr", &rebased_ptr(a.row_ptr(), rows))?,
            upload(gpu, "col_idx", &a.col_idx()[s..e])?,
            upload_values(gpu, "values", &a.values()[s..e], s, e - s, runs)?,
        ];
        stages.push(choice.stage(gpu, rows.start, rows.len(), arrays));
    }
    stages.extend(long_rows::stages(gpu, a, &long, max_bytes, runs)?);
    phases.upload();
    let details = choice.details(method, chunks.len(), format!("{} long row(s)", long.len()));
    Ok((stages, details))
}

/// `csr-scalar` or `csr-vector` from the caller's GPU buffers: the arrays are copied on the GPU
/// into the plan's own, and the long-row passes described there. `None` where the host has to
/// build it (row chunks).
/// `host_row_ptr`: the row pointers on the host where the caller has them (a host CSR uploaded
/// as it is), else SpMM's long rows are looked for only where `checked` says there are some.
pub(crate) fn prepare_gpu<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    checked: Checked,
    method: Method,
    opts: &PlanOptions,
    host_row_ptr: Option<&[u32]>,
) -> Result<Option<SpmvPlan<T>>> {
    let Some(g) = gpu_stages::<T>(gpu, a, checked, method, opts)? else {
        return Ok(None);
    };
    let details = g.details.clone();
    // SpMM's long rows: none where no row is that long; else from the host's row pointers, or
    // (a CSR only on the GPU) SpMM runs one product per column.
    let long = if checked.longest_row as u64 <= SPMM_LONG as u64 {
        Some(LongRows::default())
    } else {
        host_row_ptr.map(LongRows::of)
    };
    Ok(Some(g.plan(gpu, a, method, details, long)))
}

/// Whether a host CSR `a` is better uploaded as it is and copied on the GPU into the plan's
/// arrays: whenever [`prepare_gpu`] can make the plan (no row chunks).
/// Uploading into buffers dropped once the plan is built lets the next upload reuse their memory.
pub(crate) fn builds_from_host<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<bool> {
    Choice::new::<T>(gpu, method, opts)?;
    let bytes = crate::matrix::csr_bytes::<T>(a.nrows(), a.nnz());
    Ok(copies_fit(gpu, opts, bytes))
}

/// Whether the plan can be copies of the arrays: each within one binding (no row chunks).
fn copies_fit(gpu: &Gpu, opts: &PlanOptions, bytes: [u64; 3]) -> bool {
    let max_bytes = crate::methods::common::chunk_limit(gpu, opts);
    bytes.iter().all(|&b| b <= max_bytes)
}

/// A CSR plan's stages from GPU buffers, their parameters, the runs that hold the values, and
/// where the setup's time went.
pub(crate) struct GpuStages {
    stages: Vec<Stage>,
    pub details: String,
    values: ValueLayout,
    /// Bytes of the caller's buffers the plan reads in place (not its own).
    shared_bytes: u64,
    split: crate::plan::SetupSplit,
    opts: PlanOptions,
}

impl GpuStages {
    /// The plan, reported as `method` with `details`.
    pub(crate) fn plan<T: Scalar>(
        self,
        gpu: &Gpu,
        a: &GpuCsr,
        method: Method,
        details: String,
        spmm_long: Option<LongRows>,
    ) -> SpmvPlan<T> {
        let shape = (a.nrows, a.ncols, a.nnz);
        let spmm = spmm_long.and_then(|long| Spmm::of(&self.stages, a.nrows, long, &self.opts));
        let mut plan =
            SpmvPlan::new(gpu, shape, self.stages, method.name(), details).with_values(self.values);
        if let Some(spmm) = spmm {
            plan = plan.with_spmm(spmm);
        }
        plan.report_mut().split = self.split;
        plan.report_mut().device_bytes -= self.shared_bytes;
        plan
    }
}

/// The stages of [`prepare_gpu`], their parameters and where the values are (for CMRS of height
/// 1 too).
pub(crate) fn gpu_stages<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    checked: Checked,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<GpuStages>> {
    let mut phases = Phases::start(gpu);
    let choice = Choice::new::<T>(gpu, method, opts)?;
    let bytes = a.bytes::<T>();
    if !copies_fit(gpu, opts, bytes) {
        return Ok(None);
    }
    phases.analysis();
    let share = opts.caller_buffers == CallerBuffers::Share;
    let [row_ptr, col_idx, values] = if share {
        a.buffers()
            .map(|(_, b)| Arc::new(crate::gpu::DeviceBuffer::plain(b.clone())))
    } else {
        copy_from_caller(gpu, &a.buffers(), &bytes)?
    };
    let run = ValueRun {
        buffer: values.clone(),
        dst: 0,
        src: 0,
        len: a.nnz as u64,
    };
    let writable = values.usage().contains(wgpu::BufferUsages::COPY_DST);
    let value_layout = if share && !writable {
        ValueLayout::Fixed(
            "the plan reads the caller's value buffer, which lacks COPY_DST: write the new values into it",
        )
    } else {
        ValueLayout::Runs(vec![run])
    };
    phases.upload();
    // Rows the kernel skips: their passes are described on the GPU from the row pointers.
    let long = checked.longest_row as u64 > choice.long_row();
    let long_stages = if long {
        long_rows::gpu_stages::<T>(
            gpu,
            (a.nrows, a.nnz),
            &row_ptr,
            [col_idx.clone(), values.clone()],
            choice.long_row(),
            long_rows::most_long_rows((a.nrows, a.nnz), choice.long_row()),
        )?
    } else {
        Vec::new()
    };
    let arrays = [row_ptr, col_idx, values].map(Binding::Owned);
    let mut stages = if a.nrows == 0 {
        Vec::new()
    } else {
        vec![choice.stage(gpu, 0, a.nrows, arrays)]
    };
    stages.extend(long_stages);
    phases.build();
    let long_text = if long {
        "long rows found on the GPU"
    } else {
        "0 long row(s)"
    };
    let shared = if share { ", the caller's arrays" } else { "" };
    Ok(Some(GpuStages {
        stages,
        details: format!("{}{shared}", choice.details(method, 1, long_text)),
        values: value_layout,
        shared_bytes: if share {
            a.buffers().iter().map(|(_, b)| b.size()).sum()
        } else {
            0
        },
        split: phases.split,
        opts: opts.clone(),
    }))
}
