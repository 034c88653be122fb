//! `cmrs` and `cmrs-padded`: compressed multirow storage (Koza et al.). The format is built on
//! the host (`format.rs`); the plan uploads it in strip chunks and runs one team per strip.

pub(crate) mod format;
pub(crate) mod gpu_build;

pub(crate) use format::{CmrsLayout, CmrsMatrix, RowLayout};

pub(crate) mod kernels;
pub(crate) use kernels::KERNELS;

use crate::gpu::{Gpu, GpuInfo, StagePipeline};
use crate::kernel::{LaneMode, Variant};
use crate::methods::common::{
    bad, check_workgroup_memory, chunk_bindings, chunk_limit, lane_mode, ptr_chunks, rebased_ptr,
    team_width, upload, upload_buffer, workgroup_size,
};
use crate::methods::{passes::long_rows, LanePolicy, Method, PlanOptions};
use crate::plan::values::{GatherPart, ValueLayout};
use crate::plan::{Binding, Grid, Phases, SpmvPlan, Stage};
use crate::{CsrMatrix, Result, Scalar};
use std::ops::Range;

/// CMRS parameters; `None` means "choose for this adapter and matrix".
#[derive(Clone, Debug, Default)]
pub struct CmrsOptions {
    /// Rows per strip, 1..=16. Default for `cmrs`: the smallest height at which the paper's traffic
    /// model (eq. 5.1) wastes at most 10% of the bytes moved, capped by the workgroup memory one
    /// invocation can use at full occupancy; 16 for `cmrs-padded`.
    pub height: Option<u32>,
    /// Buffer columns M of `cmrs-padded` (a power of two up to the team width; default 8).
    pub buffer_columns: Option<u32>,
    /// Keep CSR order inside strips instead of sorting items by column.
    pub keep_csr_order: bool,
    /// Store row-in-strip numbers in a separate array even when they would fit the column word.
    pub force_separate_rows: bool,
}

/// Memory segment size λ of the traffic model (the paper's value for 4-byte streams).
pub(crate) const SEGMENT_BYTES: f64 = 128.0;

/// Workgroup memory one resident invocation can use at full occupancy, by vendor: the paper's
/// section 6.3 reasoning (strip height is capped by the shared memory per thread) applied to
/// the hardware generations wgpu reaches. NVIDIA Turing..Hopper: 64..228 KiB per SM for 1024..2048
/// threads; AMD GCN/RDNA: 64 KiB LDS per CU for up to 2560; Intel Xe: 64 KiB SLM per Xe-core for
/// 512..1024; Apple: 32 KiB threadgroup memory for about 1024. Software adapters: no occupancy to
/// lose, the cap is the workgroup limit alone.
fn workgroup_bytes_per_invocation(info: &GpuInfo) -> u64 {
    match (info.device_type, info.vendor) {
        (wgpu::DeviceType::Cpu, _) => u64::MAX,
        (_, 0x10de) => 64,
        (_, 0x1002) => 24,
        (_, 0x8086) => 64,
        (_, 0x106b) => 32,
        _ => 32,
    }
}

/// The default strip height: the smallest height at which the paper's traffic model (eq. 5.1)
/// wastes at most 10% of the bytes moved, capped by the occupancy bound.
pub(crate) fn default_height(info: &GpuInfo, mean_row_len: f64, value_bytes: usize) -> u32 {
    let b = value_bytes as f64;
    let occupancy_cap =
        (workgroup_bytes_per_invocation(info) / value_bytes as u64).clamp(1, 16) as u32;
    let model = (10.0 * (SEGMENT_BYTES - b) / (mean_row_len.max(1e-3) * b))
        .ceil()
        .clamp(1.0, 16.0) as u32;
    model.min(occupancy_cap)
}

/// What a CMRS plan runs: its lane teams, strip height and buffer.
struct Choice {
    padded: bool,
    lanes: LaneMode,
    team: u32,
    wg: u32,
    height: u32,
    buf_cols: u32,
    layout: CmrsLayout,
    cells: u32,
}

impl Choice {
    fn new<T: Scalar>(
        gpu: &Gpu,
        method: Method,
        opts: &PlanOptions,
        mean_row: f64,
    ) -> Result<Self> {
        let info = gpu.info();
        let padded = method == Method::CmrsPadded;
        let mut lanes = lane_mode(gpu, opts.lanes)?;
        // The padded layout is arranged for one team width; a subgroup size that varies between
        // dispatches would break it, so such adapters use the workgroup-memory teams.
        if padded && lanes == LaneMode::Subgroup && info.subgroup_min_size != info.subgroup_max_size
        {
            if opts.lanes == LanePolicy::Subgroup {
                return Err(bad(
                    "lanes",
                    "subgroup",
                    "cmrs-padded needs a fixed subgroup size; this adapter's varies",
                ));
            }
            lanes = LaneMode::Workgroup;
        }
        let (team, at_least) = team_width(gpu, lanes, opts.lanes_per_row)?;
        let wg = workgroup_size(gpu, opts.workgroup_size, 128, at_least)?;
        let elem = std::mem::size_of::<T>();
        let height = match opts.cmrs.height {
            Some(h) => h,
            None if padded => 16,
            None => default_height(info, mean_row, elem),
        };
        let buf_cols = if padded {
            opts.cmrs.buffer_columns.unwrap_or(8.min(team))
        } else {
            0
        };
        let layout = CmrsLayout {
            height,
            sort_by_column: !opts.cmrs.keep_csr_order,
            force_separate: opts.cmrs.force_separate_rows,
            small_buffer: padded.then_some((team, buf_cols)),
        };
        layout.validate()?;
        let cells = kernels::cmrs_cells(wg, team, height, buf_cols);
        let choice = Self {
            padded,
            lanes,
            team,
            wg,
            height,
            buf_cols,
            layout,
            cells,
        };
        if !choice.as_csr_vector() {
            check_workgroup_memory(gpu, "height", height, cells as u64 * elem as u64)?;
        }
        Ok(choice)
    }

    /// With one row per strip CMRS is CSR and Algorithm 1 is the vector kernel (paper, section
    /// 3): that runs, without the strip buffer and its reduction.
    fn as_csr_vector(&self) -> bool {
        self.height == 1 && !self.padded && !self.layout.force_separate
    }

    /// Entries one lane may loop over in a strip (padded: the passes of its busiest group of
    /// `buf_cols` lanes); strips beyond that hand their longest rows to the long-row passes.
    fn strip_budget(&self) -> u64 {
        let per_pass = if self.padded {
            self.buf_cols
        } else {
            self.team
        } as u64;
        long_rows::LANE_ITERATIONS as u64 * per_pass
    }

    fn pipeline<T: Scalar>(&self, gpu: &Gpu, rows: RowLayout) -> Result<StagePipeline> {
        let overrides = vec![
            ("WG_SIZE", self.wg),
            ("LANES", self.team),
            ("HEIGHT", self.height),
            ("BUF_COLS", self.buf_cols),
            ("PACKED", (rows == RowLayout::Packed) as u32),
            ("CELLS", self.cells),
        ];
        gpu.stage_pipeline(&Variant::new(kernels::CMRS, T::WGSL, self.lanes, overrides))
    }

    /// The stage over `strips` of a matrix with `nrows` rows, whose strip pointers (rebased),
    /// column words, values and row-in-strip words are `arrays`.
    fn stage(
        &self,
        gpu: &Gpu,
        pipeline: &StagePipeline,
        strips: &Range<usize>,
        nrows: usize,
        [strip_ptr, col_words, values, row_in_strip]: [Binding; 4],
    ) -> Stage {
        let h = self.height as usize;
        let row_begin = strips.start * h;
        let rows = row_begin..(strips.end * h).min(nrows);
        Stage {
            pipeline: pipeline.clone(),
            bindings: [
                chunk_bindings(gpu, [strip_ptr, col_words, values], rows),
                vec![row_in_strip],
            ]
            .concat(),
            grid: Grid::Direct(gpu.grid((strips.len() as u32).div_ceil(self.wg / self.team))),
        }
    }

    /// The plan's parameters, as its report gives them.
    fn details(
        &self,
        method: Method,
        rows: RowLayout,
        padding: usize,
        overhead: i64,
        chunks: usize,
        long: usize,
    ) -> String {
        format!(
            "{}: height {}, {} lanes per strip ({} teams), {}, workgroup {}, {} row-in-strip, {padding} padding zeros ({overhead:+} bytes vs CSR), {chunks} chunk(s), {long} long row(s)",
            method.name(),
            self.height,
            self.team,
            self.lanes.name(),
            if self.padded { format!("buffer {} columns", self.buf_cols) } else { "buffer column per lane".into() },
            self.wg,
            if rows == RowLayout::Packed { "packed" } else { "separate" },
        )
    }
}

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    let mut phases = Phases::start(gpu);
    let choice = Choice::new::<T>(gpu, method, opts, a.row_stats().mean)?;
    let elem = std::mem::size_of::<T>();
    if choice.as_csr_vector() {
        let mut runs = Vec::new();
        let (stages, csr) =
            crate::methods::csr::stages(gpu, a, Method::CsrVector, opts, &mut runs, &mut phases)?;
        let details = format!("cmrs: height 1, run as the CSR vector kernel ({csr})");
        let mut plan = SpmvPlan::new(gpu, a.shape(), stages, method.name(), details)
            .with_values(crate::plan::values::ValueLayout::Runs(runs));
        plan.report_mut().split = phases.split;
        return Ok(plan);
    }
    let long = long_rows::rows_to_split(a.row_ptr(), choice.height as usize, choice.strip_budget());
    phases.analysis();
    let m = CmrsMatrix::from_csr_without(a, &choice.layout, &long)?;
    phases.build();
    let pipeline = choice.pipeline::<T>(gpu, m.rows)?;
    let chunks = ptr_chunks(
        &m.strip_ptr,
        elem.max(4) as u64,
        chunk_limit(gpu, opts),
        "strip",
    )?;
    phases.analysis();
    let mut stages = Vec::with_capacity(chunks.len());
    // Where update_values puts new values: gathered into each chunk's strips, copied into the
    // long-row pass.
    let (mut gathers, mut runs) = (Vec::new(), Vec::new());
    for strips in &chunks {
        let (s, e) = (
            m.strip_ptr[strips.start] as usize,
            m.strip_ptr[strips.end] as usize,
        );
        // Row-in-strip nibbles re-packed from the chunk's first item (a dummy word when packed).
        let rows: Vec<u32> = match m.rows {
            RowLayout::Packed => vec![0],
            RowLayout::Separate => {
                let nib: Vec<u32> = (s..e).map(|j| m.item(j).map_or(0, |(r, _)| r)).collect();
                nib.chunks(8)
                    .map(|c| c.iter().enumerate().fold(0, |w, (i, &r)| w | r << (4 * i)))
                    .collect()
            }
        };
        let values = upload_buffer(gpu, "values", &m.values[s..e])?;
        gathers.push(GatherPart::new(values.clone(), m.sources[s..e].to_vec()));
        let arrays = [
            upload(gpu, "strip_ptr", &rebased_ptr(&m.strip_ptr, strips))?,
            upload(gpu, "col_words", &m.col_words[s..e])?,
            Binding::Owned(values),
            upload(gpu, "row_in_strip", &rows)?,
        ];
        stages.push(choice.stage(gpu, &pipeline, strips, a.nrows(), arrays));
    }
    stages.extend(long_rows::stages(
        gpu,
        a,
        &long,
        chunk_limit(gpu, opts),
        &mut runs,
    )?);
    phases.upload();
    let details = choice.details(
        method,
        m.rows,
        m.padding,
        m.overhead_bytes_vs_csr(),
        chunks.len(),
        long.len(),
    );
    let mut plan = SpmvPlan::new(gpu, a.shape(), stages, method.name(), details)
        .with_values(ValueLayout::Gather(gathers, runs));
    plan.report_mut().split = phases.split;
    Ok(plan)
}
