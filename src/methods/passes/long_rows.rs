//! Rows too long for one invocation. Some drivers stop a loop after a fixed number of iterations
//! (Mesa's llvmpipe: 65 535 back edges per invocation, all loops together), and one invocation
//! walking a whole long row is slow everywhere. So the row kernels (`csr-scalar`, `csr-vector`,
//! `cmrs`) bound what one invocation loops over by construction: a row, or a strip, longer than
//! [`LANE_ITERATIONS`] per lane is treated as empty there, and two passes of their own add the
//! long rows: workgroups over pieces of a fixed size, then one workgroup per long row
//! (shaders/passes/long_rows.wgsl). From a CSR on the GPU, their description is built there too
//! ([`gpu_stages`]), over the plan's copies of the whole arrays.

use crate::gpu::recorder::submit_pass;
use crate::gpu::{Gpu, StagePipeline};
use crate::kernel::{LaneMode, Variant};
use crate::methods::common::{upload, upload_buffer, workgroup_size};
use crate::plan::{Binding, Grid, Stage};
use crate::{CsrMatrix, Error, Result, Scalar};
use std::sync::Arc;

/// Loop iterations one invocation may spend on a row (or a strip) in the row kernels: well under
/// llvmpipe's 65 535, leaving room for the kernels' other loops. Mirrors `LONG_ROW_ITERATIONS` in
/// shaders/shared/common.wgsl.
pub(crate) const LANE_ITERATIONS: u32 = 16_384;

/// Entries per invocation and piece in the long-row passes (`PER_LANE` in shaders/passes/long_rows.wgsl).
const PER_LANE: u32 = 64;

/// The rows to take out of groups of `group_rows` consecutive rows (strips; 1 for CSR) so that
/// what is left of each group has at most `max_entries` entries: the longest rows first.
pub(crate) fn rows_to_split(row_ptr: &[u32], group_rows: usize, max_entries: u64) -> Vec<u32> {
    let nrows = row_ptr.len() - 1;
    let mut out = Vec::new();
    for first in (0..nrows).step_by(group_rows.max(1)) {
        let rows = first..(first + group_rows.max(1)).min(nrows);
        out.extend(split_group(row_ptr, rows, max_entries).0);
    }
    out
}

/// The rows `rows_to_split` takes out of one group of rows (ascending), and the entries left:
/// the longest rows first (ties: the lower row) until at most `max_entries` are left. The GPU
/// builds of strips choose the same (`long_rows_of` in shaders/cmrs/build_common.wgsl).
pub(crate) fn split_group(
    row_ptr: &[u32],
    rows: std::ops::Range<usize>,
    max_entries: u64,
) -> (Vec<u32>, u64) {
    let len = |r: usize| (row_ptr[r + 1] - row_ptr[r]) as u64;
    let mut total = (row_ptr[rows.end] - row_ptr[rows.start]) as u64;
    if total <= max_entries {
        return (Vec::new(), total);
    }
    let mut by_len: Vec<usize> = rows.collect();
    by_len.sort_by_key(|&r| std::cmp::Reverse(len(r)));
    let mut out = Vec::new();
    for r in by_len {
        if total <= max_entries {
            break;
        }
        total -= len(r);
        out.push(r as u32);
    }
    out.sort_unstable();
    (out, total)
}

/// Mirrors `BuildParams` in shaders/passes/long_rows_build.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BuildParams {
    nrows: u32,
    long_row: u32,
    piece: u32,
    max_dim: u32,
}

/// The pipelines of the two passes and the entries of one piece.
fn pass_pipelines<T: Scalar>(gpu: &Gpu) -> Result<(StagePipeline, StagePipeline, u32)> {
    let wg = workgroup_size(gpu, None, 256, 1)?;
    let pipeline = |finish: u32| {
        gpu.stage_pipeline(&Variant::new(
            super::kernels::LONG_ROWS,
            T::WGSL,
            LaneMode::Workgroup,
            vec![("WG_SIZE", wg), ("FINISH", finish)],
        ))
    };
    Ok((pipeline(0)?, pipeline(1)?, wg * PER_LANE))
}

/// The most rows of more than `long_row` entries `nnz` entries over `nrows` rows can hold.
pub(crate) fn most_long_rows((nrows, nnz): (usize, usize), long_row: u64) -> u64 {
    (nnz as u64 / (long_row + 1)).min(nrows as u64)
}

/// The two passes for every row of more than `long_row` entries of a CSR matrix on the GPU,
/// reading `col_idx` and `values` (each within one binding). Their description is built on the
/// GPU from `row_ptr` (submitted here, nothing read back): sized for `max_longs` long rows (at
/// least those there are; [`most_long_rows`] where unknown) and the pieces `nnz` entries can
/// make, dispatched over the counts found.
pub(crate) fn gpu_stages<T: Scalar>(
    gpu: &Gpu,
    (nrows, nnz): (usize, usize),
    row_ptr: &wgpu::Buffer,
    [col_idx, values]: [Arc<crate::gpu::DeviceBuffer>; 2],
    long_row: u64,
    max_longs: u64,
) -> Result<Vec<Stage>> {
    let (pieces_pipeline, finish_pipeline, piece) = pass_pipelines::<T>(gpu)?;
    if max_longs == 0 {
        return Ok(Vec::new());
    }
    let max_pieces = nnz as u64 / piece as u64 + max_longs;
    let none = wgpu::BufferUsages::empty();
    let words = |label, n: u64| gpu.storage_zeroed(label, n * 4, none);
    let longs_before = words("long rows before", nrows as u64 + 1)?;
    let pieces_before = words("long-row pieces before", nrows as u64 + 1)?;
    let block_sums = words(
        "long-row scan blocks",
        (nrows as u64 + 1).div_ceil(crate::gpu::recorder::SCAN_BLOCK as u64),
    )?;
    let desc = Arc::new(words(
        "long-row pieces",
        2 + 2 * max_pieces + 3 * max_longs,
    )?);
    let indirect =
        Arc::new(gpu.storage_zeroed("long-row grids", 24, wgpu::BufferUsages::INDIRECT)?);
    let params = BuildParams {
        nrows: nrows as u32,
        long_row: long_row.min(u32::MAX as u64) as u32,
        piece,
        max_dim: gpu
            .info()
            .limits
            .max_compute_workgroups_per_dimension
            .max(1),
    };
    let params = gpu.uniform_buffer("long-row build", bytemuck::bytes_of(&params));
    let buffers: [&dyn crate::gpu::Bind; 6] = [
        row_ptr,
        &longs_before,
        &pieces_before,
        &*desc,
        &*indirect,
        &params,
    ];
    let kernel = super::kernels::LONG_ROWS_BUILD;
    let per_pointer = (nrows as u32 + 1).div_ceil(256);
    submit_pass(
        gpu,
        "long-row build",
        "building the long-row passes on the GPU",
        |r| {
            r.dispatch(kernel, vec![("PASS", 0)], &buffers, per_pointer)?;
            r.scan(&longs_before, &block_sums, nrows as u32 + 1)?;
            r.scan(&pieces_before, &block_sums, nrows as u32 + 1)?;
            r.passes(
                kernel,
                &buffers,
                &[(1, per_pointer), (2, (max_pieces as u32).div_ceil(256))],
            )
        },
    )?;
    let partials = Binding::Owned(Arc::new(gpu.storage_zeroed(
        "long-row partials",
        max_pieces * std::mem::size_of::<T>() as u64,
        none,
    )?));
    let bindings = vec![
        Binding::Owned(desc),
        Binding::Owned(col_idx),
        Binding::Owned(values),
        Binding::X,
        Binding::Y,
        Binding::Coeffs,
        partials,
    ];
    Ok(vec![
        Stage {
            pipeline: pieces_pipeline,
            bindings: bindings.clone(),
            grid: Grid::Indirect(indirect.clone(), 0),
        },
        Stage {
            pipeline: finish_pipeline,
            bindings,
            grid: Grid::Indirect(indirect, 12),
        },
    ])
}

/// The two passes that add `rows` (ascending) of `a` into `y`, after a main kernel that treated
/// them as empty (leaving `β·y` there). Long rows are grouped into batches whose entries fit one
/// storage binding of `max_bytes`; each batch is a pair of stages.
pub(crate) fn stages<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    rows: &[u32],
    max_bytes: u64,
    runs: &mut Vec<crate::plan::values::ValueRun>,
) -> Result<Vec<Stage>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let (pieces_pipeline, finish_pipeline, piece) = pass_pipelines::<T>(gpu)?;
    let piece = piece as usize;
    let max_entries = (max_bytes / std::mem::size_of::<T>().max(4) as u64) as usize;
    let mut stages = Vec::new();
    let mut batch_start = 0;
    while batch_start < rows.len() {
        // The longest run of rows whose entries fit one binding (at least one row, checked below).
        let mut entries = 0usize;
        let mut batch_end = batch_start;
        while batch_end < rows.len() {
            let len = a.row_len(rows[batch_end] as usize);
            if entries + len > max_entries {
                break;
            }
            entries += len;
            batch_end += 1;
        }
        if batch_end == batch_start {
            let r = rows[batch_start] as usize;
            return Err(Error::TooLargeForAdapter {
                what: format!("row {r} with {} entries", a.row_len(r)),
                bytes: (a.row_len(r) * std::mem::size_of::<T>()) as u64,
                limit_name: "max_storage_buffer_binding_size",
                limit: max_bytes,
            });
        }
        let batch = &rows[batch_start..batch_end];
        let (mut cols, mut vals) = (Vec::with_capacity(entries), Vec::with_capacity(entries));
        let mut piece_bounds = Vec::new();
        let mut row_desc = Vec::with_capacity(3 * batch.len());
        // Where each row's values go in the batch's buffer, for update_values.
        let mut row_runs = Vec::with_capacity(batch.len());
        for &r in batch {
            let (c, v) = a.row(r as usize);
            row_runs.push((
                vals.len() as u64,
                a.row_ptr()[r as usize] as u64,
                v.len() as u64,
            ));
            let first_piece = piece_bounds.len() / 2;
            for start in (0..c.len()).step_by(piece) {
                piece_bounds.push((cols.len() + start) as u32);
                piece_bounds.push((cols.len() + (start + piece).min(c.len())) as u32);
            }
            cols.extend_from_slice(c);
            vals.extend_from_slice(v);
            row_desc.extend([r, first_piece as u32, (piece_bounds.len() / 2) as u32]);
        }
        let npieces = piece_bounds.len() / 2;
        let mut desc = vec![npieces as u32, batch.len() as u32];
        desc.extend(piece_bounds);
        desc.extend(row_desc);
        let partials = Binding::Owned(Arc::new(gpu.storage_zeroed(
            "long-row partials",
            (npieces * std::mem::size_of::<T>()) as u64,
            wgpu::BufferUsages::empty(),
        )?));
        let values = upload_buffer(gpu, "long-row values", &vals)?;
        runs.extend(
            row_runs
                .iter()
                .map(|&(dst, src, len)| crate::plan::values::ValueRun {
                    buffer: values.clone(),
                    dst,
                    src,
                    len,
                }),
        );
        let bindings = vec![
            upload(gpu, "long-row pieces", &desc)?,
            upload(gpu, "long-row columns", &cols)?,
            Binding::Owned(values.clone()),
            Binding::X,
            Binding::Y,
            Binding::Coeffs,
            partials,
        ];
        stages.push(Stage {
            pipeline: pieces_pipeline.clone(),
            bindings: bindings.clone(),
            grid: Grid::Direct(gpu.grid(npieces as u32)),
        });
        stages.push(Stage {
            pipeline: finish_pipeline.clone(),
            bindings,
            grid: Grid::Direct(gpu.grid(batch.len() as u32)),
        });
        batch_start = batch_end;
    }
    Ok(stages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_the_longest_rows_of_each_group() {
        // Rows of lengths 5, 1, 9, 0 | 2, 2.
        let row_ptr = [0u32, 5, 6, 15, 15, 17, 19];
        assert_eq!(rows_to_split(&row_ptr, 1, 4), vec![0, 2]);
        assert_eq!(rows_to_split(&row_ptr, 4, 6), vec![2]);
        assert_eq!(rows_to_split(&row_ptr, 4, 5), vec![0, 2]);
        assert_eq!(rows_to_split(&row_ptr, 4, 10), vec![2]);
        assert_eq!(rows_to_split(&row_ptr, 4, 15), Vec::<u32>::new());
        assert_eq!(rows_to_split(&row_ptr, 2, 3), vec![0, 2, 4]);
    }

    #[test]
    fn wgsl_constants_match() {
        let common = include_str!("../../../shaders/shared/common.wgsl");
        assert!(common.contains(&format!(
            "const LONG_ROW_ITERATIONS: u32 = {LANE_ITERATIONS}u;"
        )));
        let pass = include_str!("../../../shaders/passes/long_rows.wgsl");
        assert!(pass.contains(&format!("const PER_LANE: u32 = {PER_LANE}u;")));
    }
}
