//! The CSR baselines `csr-scalar` and `csr-vector`: plain CSR arrays, split into row chunks when
//! one array would exceed the adapter's storage-binding limit.

pub mod kernels;
pub use kernels::KERNELS;

use crate::gpu::Gpu;
use crate::kernel::{LaneMode, Variant};
use crate::methods::common::{
    check_workgroup_memory, lane_mode, ptr_chunks, rebased_ptr, team_width, upload, upload_values,
    workgroup_size, ChunkUniform,
};
use crate::methods::{passes::long_rows, Method, PlanOptions};
use crate::plan::values::{ValueLayout, ValueRun};
use crate::plan::{Binding, Grid, SpmvPlan, Stage};
use crate::{CsrMatrix, Result, Scalar};
use std::sync::Arc;

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<SpmvPlan<T>> {
    let mut runs = Vec::new();
    let (stages, details) = stages(gpu, a, method, opts, &mut runs)?;
    Ok(
        SpmvPlan::new(gpu, a.shape(), stages, method.name(), details)
            .with_values(ValueLayout::Runs(runs)),
    )
}

/// The stages of `csr-scalar` or `csr-vector` (which CMRS with one row per strip also runs) and
/// the parameters they were built with.
pub(crate) fn stages<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
    runs: &mut Vec<ValueRun>,
) -> Result<(Vec<Stage>, String)> {
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
    let pipeline = gpu.pipeline(&Variant::new(kernel, T::WGSL, lanes, overrides))?;

    let max_bytes = crate::methods::common::chunk_limit(gpu, opts);
    let entry_bytes = std::mem::size_of::<T>().max(4) as u64;
    let chunks = ptr_chunks(a.row_ptr(), entry_bytes, max_bytes, "row")?;
    let mut stages = Vec::with_capacity(chunks.len());
    for rows in &chunks {
        let (s, e) = (
            a.row_ptr()[rows.start] as usize,
            a.row_ptr()[rows.end] as usize,
        );
        let row_ptr = rebased_ptr(a.row_ptr(), rows);
        let params = ChunkUniform {
            row_begin: rows.start as u32,
            nrows: rows.len() as u32,
        };
        stages.push(Stage {
            pipeline: pipeline.clone(),
            bindings: vec![
                upload(gpu, "row_ptr", &row_ptr)?,
                upload(gpu, "col_idx", &a.col_idx()[s..e])?,
                upload_values(gpu, "values", &a.values()[s..e], s, e - s, runs)?,
                Binding::X,
                Binding::Y,
                Binding::Coeffs,
                Binding::Owned(Arc::new(
                    gpu.uniform_buffer("chunk", bytemuck::bytes_of(&params)),
                )),
            ],
            grid: Grid::Direct(gpu.grid((rows.len() as u32).div_ceil(rows_per_group))),
        });
    }
    let lanes_text = match method {
        Method::CsrScalar => "one invocation per row".to_owned(),
        _ => format!("{} lanes per row via {} reduction", team, lanes.name()),
    };
    // Rows longer than one invocation may loop over are skipped by the kernel and added here.
    let long = long_rows::rows_to_split(
        a.row_ptr(),
        1,
        long_rows::LANE_ITERATIONS as u64 * team as u64,
    );
    stages.extend(long_rows::stages(gpu, a, &long, max_bytes, runs)?);
    let details = format!(
        "{}: {lanes_text}, workgroup {wg}, {} row chunk(s), {} long row(s)",
        method.name(),
        chunks.len(),
        long.len()
    );
    Ok((stages, details))
}
