//! The CSR baselines `csr-scalar` and `csr-vector`: plain CSR arrays, split into row chunks when
//! one array would exceed the adapter's storage-binding limit.

use crate::gpu::shader::{self, LaneMode};
use crate::gpu::{Gpu, PipelineKey};
use crate::methods::{LanePolicy, Method, PlanOptions};
use crate::plan::{Binding, SpmvPlan, Stage};
use crate::{CsrMatrix, Error, Result, Scalar};
use std::ops::Range;
use std::sync::Arc;

/// Mirrors `struct Chunk` in shaders/common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ChunkUniform {
    pub row_begin: u32,
    pub nrows: u32,
}

/// Splits rows into consecutive ranges whose entries take at most `max_bytes` per array
/// (`entry_bytes` per stored entry) and whose row pointers fit too. A single row that cannot fit
/// is an error: the CSR baselines never split a row.
pub fn row_chunks(row_ptr: &[u32], entry_bytes: u64, max_bytes: u64) -> Result<Vec<Range<usize>>> {
    let nrows = row_ptr.len() - 1;
    let max_entries = max_bytes / entry_bytes;
    let max_rows = (max_bytes / 4).saturating_sub(1).max(1) as usize;
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < nrows {
        let base = row_ptr[start] as u64;
        // Last row end within the entry budget.
        let fit = row_ptr[start + 1..].partition_point(|&p| p as u64 - base <= max_entries);
        let end = start + fit.min(max_rows);
        if end == start {
            let len = (row_ptr[start + 1] - row_ptr[start]) as u64;
            return Err(Error::TooLargeForAdapter {
                what: format!("row {start} with {len} entries"),
                bytes: len * entry_bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit: max_bytes,
            });
        }
        chunks.push(start..end);
        start = end;
    }
    Ok(chunks)
}

fn bad(name: &'static str, value: impl ToString, reason: impl Into<String>) -> Error {
    Error::InvalidParameter { name, value: value.to_string(), reason: reason.into() }
}

/// Chooses the lane mode for a kernel with teams.
pub(crate) fn lane_mode<T: Scalar>(gpu: &Gpu, policy: LanePolicy) -> Result<LaneMode> {
    let info = gpu.info();
    let has = info.has(wgpu::Features::SUBGROUP) && shader::LANE_WIDTHS.contains(&info.subgroup_min_size);
    match policy {
        LanePolicy::Workgroup => Ok(LaneMode::Workgroup),
        LanePolicy::Subgroup if !has => Err(Error::MissingFeature {
            adapter: info.name.clone(),
            feature: "SUBGROUP",
            needed_for: "the subgroup lane path".into(),
            hint: " (use LanePolicy::Auto or Workgroup)",
        }),
        LanePolicy::Subgroup => Ok(LaneMode::Subgroup),
        LanePolicy::Auto => Ok(if has { LaneMode::Subgroup } else { LaneMode::Workgroup }),
    }
}

/// Validates or chooses the workgroup size.
pub(crate) fn workgroup_size(gpu: &Gpu, requested: Option<u32>, at_least: u32) -> Result<u32> {
    let max = gpu.info().limits.max_compute_invocations_per_workgroup.min(gpu.info().limits.max_compute_workgroup_size_x);
    let wg = requested.unwrap_or(256.max(at_least).min(max));
    if !shader::WORKGROUP_SIZES.contains(&wg) {
        return Err(bad("workgroup_size", wg, format!("must be one of {:?}", shader::WORKGROUP_SIZES)));
    }
    if wg > max {
        return Err(bad("workgroup_size", wg, format!("this adapter allows at most {max} invocations per workgroup")));
    }
    if wg < at_least {
        return Err(bad("workgroup_size", wg, format!("must be at least {at_least} (the largest subgroup)")));
    }
    Ok(wg)
}

pub(crate) fn prepare<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>, method: Method, opts: &PlanOptions) -> Result<SpmvPlan<T>> {
    let info = gpu.info();
    let (kernel, lanes, wg, team, rows_per_group) = match method {
        Method::CsrScalar => {
            let wg = workgroup_size(gpu, opts.workgroup_size, 1)?;
            (shader::CSR_SCALAR, LaneMode::Workgroup, wg, 1, wg)
        }
        Method::CsrVector => {
            let lanes = lane_mode::<T>(gpu, opts.lanes)?;
            let (wg, team) = match lanes {
                LaneMode::Subgroup => {
                    if opts.lanes_per_row.is_some_and(|l| l != info.subgroup_min_size) {
                        return Err(bad("lanes_per_row", opts.lanes_per_row.unwrap(), "the subgroup path uses the adapter's subgroup size"));
                    }
                    (workgroup_size(gpu, opts.workgroup_size, info.subgroup_max_size)?, info.subgroup_min_size)
                }
                LaneMode::Workgroup => {
                    let team = opts.lanes_per_row.unwrap_or(32);
                    if !shader::LANE_WIDTHS.contains(&team) {
                        return Err(bad("lanes_per_row", team, format!("must be one of {:?}", shader::LANE_WIDTHS)));
                    }
                    let wg = workgroup_size(gpu, opts.workgroup_size, team)?;
                    let need = wg as u64 * std::mem::size_of::<T>() as u64;
                    let have = info.limits.max_compute_workgroup_storage_size as u64;
                    if need > have {
                        return Err(bad("workgroup_size", wg, format!("needs {need} bytes of workgroup memory, the adapter has {have}")));
                    }
                    (wg, team)
                }
            };
            (shader::CSR_VECTOR, lanes, wg, team, wg / team)
        }
        _ => unreachable!("csr::prepare only builds the CSR baselines"),
    };
    let overrides = if kernel.name == shader::CSR_VECTOR.name { vec![("WG_SIZE", wg), ("LANES", team)] } else { vec![("WG_SIZE", wg)] };
    let pipeline = gpu.pipeline(
        PipelineKey { kernel: kernel.name, variant: kernel.variant(T::WGSL, lanes), overrides },
        || kernel.source(T::WGSL, lanes),
    )?;

    let max_bytes = opts.max_chunk_bytes.unwrap_or(info.max_binding_bytes()).min(info.max_binding_bytes());
    let entry_bytes = std::mem::size_of::<T>().max(4) as u64;
    let chunks = row_chunks(a.row_ptr(), entry_bytes, max_bytes)?;
    let mut stages = Vec::with_capacity(chunks.len());
    for rows in &chunks {
        let (s, e) = (a.row_ptr()[rows.start] as usize, a.row_ptr()[rows.end] as usize);
        let base = a.row_ptr()[rows.start];
        let row_ptr: Vec<u32> = a.row_ptr()[rows.start..=rows.end].iter().map(|p| p - base).collect();
        let owned = |label: &str, bytes: &[u8]| -> Result<Binding> {
            Ok(Binding::Owned(Arc::new(gpu.storage_buffer(label, bytes, wgpu::BufferUsages::empty())?)))
        };
        let params = ChunkUniform { row_begin: rows.start as u32, nrows: rows.len() as u32 };
        stages.push(Stage {
            pipeline: pipeline.clone(),
            bindings: vec![
                owned("row_ptr", bytemuck::cast_slice(&row_ptr))?,
                owned("col_idx", bytemuck::cast_slice(&a.col_idx()[s..e]))?,
                owned("values", bytemuck::cast_slice(&a.values()[s..e]))?,
                Binding::X,
                Binding::Y,
                Binding::Coeffs,
                Binding::Owned(Arc::new(gpu.uniform_buffer("chunk", bytemuck::bytes_of(&params)))),
            ],
            grid: gpu.grid((rows.len() as u32).div_ceil(rows_per_group)),
        });
    }
    let lanes_text = match method {
        Method::CsrScalar => "one invocation per row".to_owned(),
        _ => format!("{} lanes per row via {} reduction", team, lanes.name()),
    };
    let details = format!("{}: {lanes_text}, workgroup {wg}, {} row chunk(s)", method.name(), chunks.len());
    Ok(SpmvPlan::new(gpu, method, a, stages, details))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_rows_and_respect_budget() {
        let row_ptr = [0u32, 3, 3, 10, 11, 20, 20];
        let c = row_chunks(&row_ptr, 4, 40).unwrap();
        assert_eq!(c, vec![0..3, 3..6]); // 10 entries each: exactly the budget
        assert_eq!(row_chunks(&row_ptr, 4, 36).unwrap(), vec![0..2, 2..4, 4..6]);
        assert_eq!(row_chunks(&row_ptr, 4, 1 << 20).unwrap(), vec![0..6]);
        assert!(matches!(row_chunks(&row_ptr, 4, 16), Err(Error::TooLargeForAdapter { .. })));
        assert!(row_chunks(&[0], 4, 16).unwrap().is_empty());
    }
}
