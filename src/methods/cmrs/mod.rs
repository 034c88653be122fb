//! `cmrs` and `cmrs-padded`: compressed multirow storage (Koza et al.). The format is built on
//! the host ([`format`](mod@format)); the plan uploads it in strip chunks and runs one team per strip.

pub mod format;

pub use format::{predicted_speedup, traffic_ratio, CmrsLayout, CmrsMatrix, RowLayout};

pub mod kernels;
pub use kernels::KERNELS;

use crate::gpu::{Gpu, GpuInfo};
use crate::kernel::{LaneMode, Variant};
use crate::methods::common::{
    bad, check_workgroup_memory, chunk_limit, lane_mode, ptr_chunks, rebased_ptr, team_width,
    upload, upload_buffer, workgroup_size, ChunkUniform,
};
use crate::methods::{passes::long_rows, LanePolicy, Method, PlanOptions};
use crate::plan::values::{GatherPart, ValueLayout};
use crate::plan::{Binding, Grid, SpmvPlan, Stage};
use crate::{CsrMatrix, Result, Scalar};
use std::sync::Arc;

/// CMRS parameters; `None` means "choose for this adapter and matrix".
#[derive(Clone, Debug, Default)]
pub struct CmrsOptions {
    /// Rows per strip, 1..=16. Default: [`default_height`] (`cmrs`), 16 (`cmrs-padded`).
    pub height: Option<u32>,
    /// Buffer columns M of `cmrs-padded` (a power of two up to the team width; default 8).
    pub buffer_columns: Option<u32>,
    /// Keep CSR order inside strips instead of sorting items by column.
    pub keep_csr_order: bool,
    /// Store row-in-strip numbers in a separate array even when they would fit the column word.
    pub force_separate_rows: bool,
}

/// Memory segment size λ of the traffic model (the paper's value for 4-byte streams).
pub const SEGMENT_BYTES: f64 = 128.0;

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
pub fn default_height(info: &GpuInfo, mean_row_len: f64, value_bytes: usize) -> u32 {
    let b = value_bytes as f64;
    let occupancy_cap =
        (workgroup_bytes_per_invocation(info) / value_bytes as u64).clamp(1, 16) as u32;
    let model = (10.0 * (SEGMENT_BYTES - b) / (mean_row_len.max(1e-3) * b))
        .ceil()
        .clamp(1.0, 16.0) as u32;
    model.min(occupancy_cap)
}

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    let info = gpu.info();
    let padded = method == Method::CmrsPadded;
    let mut lanes = lane_mode(gpu, opts.lanes)?;
    // The padded layout is arranged for one team width; a subgroup size that varies between
    // dispatches would break it, so such adapters use the workgroup-memory teams.
    if padded && lanes == LaneMode::Subgroup && info.subgroup_min_size != info.subgroup_max_size {
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
        None => default_height(info, a.row_stats().mean, elem),
    };
    if height == 1 && !padded && !opts.cmrs.force_separate_rows {
        // With one row per strip CMRS is CSR and Algorithm 1 is the vector kernel (paper,
        // section 3): run that, without the strip buffer and its reduction.
        CmrsLayout {
            height,
            ..Default::default()
        }
        .validate()?;
        let mut runs = Vec::new();
        let (stages, csr) =
            crate::methods::csr::stages(gpu, a, Method::CsrVector, opts, &mut runs)?;
        let details = format!("cmrs: height 1, run as the CSR vector kernel ({csr})");
        return Ok(
            SpmvPlan::new(gpu, a.shape(), stages, method.name(), details)
                .with_values(crate::plan::values::ValueLayout::Runs(runs)),
        );
    }
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
    check_workgroup_memory(gpu, "height", height, cells as u64 * elem as u64)?;
    // A lane loops over about a strip's items / team (padded: the passes of its busiest group of
    // `buf_cols` lanes); strips beyond the loop budget hand their longest rows to the long-row
    // passes.
    let per_pass = if padded { buf_cols } else { team } as u64;
    let long = long_rows::rows_to_split(
        a.row_ptr(),
        height as usize,
        long_rows::LANE_ITERATIONS as u64 * per_pass,
    );
    let m = CmrsMatrix::from_csr_without(a, &layout, &long)?;

    let kernel = kernels::CMRS;
    let packed = (m.rows == RowLayout::Packed) as u32;
    let overrides = vec![
        ("WG_SIZE", wg),
        ("LANES", team),
        ("HEIGHT", height),
        ("BUF_COLS", buf_cols),
        ("PACKED", packed),
        ("CELLS", cells),
    ];
    let pipeline = gpu.pipeline(&Variant::new(kernel, T::WGSL, lanes, overrides))?;

    let h = height as usize;
    let strips_per_group = wg / team;
    let chunks = ptr_chunks(
        &m.strip_ptr,
        elem.max(4) as u64,
        chunk_limit(gpu, opts),
        "strip",
    )?;
    let mut stages = Vec::with_capacity(chunks.len());
    // Where update_values puts new values: gathered into each chunk's strips, copied into the
    // long-row pass.
    let (mut gathers, mut runs) = (Vec::new(), Vec::new());
    for strips in &chunks {
        let (s, e) = (
            m.strip_ptr[strips.start] as usize,
            m.strip_ptr[strips.end] as usize,
        );
        let strip_ptr = rebased_ptr(&m.strip_ptr, strips);
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
        let row_begin = strips.start * h;
        let params = ChunkUniform {
            row_begin: row_begin as u32,
            nrows: ((strips.end * h).min(a.nrows()) - row_begin) as u32,
        };
        stages.push(Stage {
            pipeline: pipeline.clone(),
            bindings: vec![
                upload(gpu, "strip_ptr", &strip_ptr)?,
                upload(gpu, "col_words", &m.col_words[s..e])?,
                {
                    let values = upload_buffer(gpu, "values", &m.values[s..e])?;
                    gathers.push(GatherPart::new(values.clone(), m.sources[s..e].to_vec()));
                    Binding::Owned(values)
                },
                Binding::X,
                Binding::Y,
                Binding::Coeffs,
                Binding::Owned(Arc::new(
                    gpu.uniform_buffer("chunk", bytemuck::bytes_of(&params)),
                )),
                upload(gpu, "row_in_strip", &rows)?,
            ],
            grid: Grid::Direct(gpu.grid((strips.len() as u32).div_ceil(strips_per_group))),
        });
    }
    stages.extend(long_rows::stages(
        gpu,
        a,
        &long,
        chunk_limit(gpu, opts),
        &mut runs,
    )?);
    let details = format!(
        "{}: height {height}, {} lanes per strip ({} teams), {}, workgroup {wg}, {} row-in-strip, {} padding zeros ({:+} bytes vs CSR), {} chunk(s), {} long row(s)",
        method.name(),
        team,
        lanes.name(),
        if padded { format!("buffer {buf_cols} columns") } else { "buffer column per lane".into() },
        if packed == 1 { "packed" } else { "separate" },
        m.padding,
        m.overhead_bytes_vs_csr(),
        chunks.len(),
        long.len()
    );
    Ok(
        SpmvPlan::new(gpu, a.shape(), stages, method.name(), details)
            .with_values(ValueLayout::Gather(gathers, runs)),
    )
}
