//! Plan-building pieces every GPU method shares: row chunking under the binding limit, the lane
//! mode and workgroup size choices, uploads.

use crate::gpu::{DeviceBuffer, Gpu};
use crate::kernel::LaneMode;
use crate::methods::{LanePolicy, PlanOptions};
use crate::plan::Binding;
use crate::{Error, Result};
use std::ops::Range;
use std::sync::Arc;

/// Mirrors `struct Chunk` in shaders/shared/common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ChunkUniform {
    pub row_begin: u32,
    pub nrows: u32,
}

impl ChunkUniform {
    /// The uniform buffer of a chunk of `rows`, the rows a stage writes.
    pub(crate) fn buffer(gpu: &Gpu, rows: Range<usize>) -> Arc<DeviceBuffer> {
        let params = Self {
            row_begin: rows.start as u32,
            nrows: rows.len() as u32,
        };
        Arc::new(gpu.uniform_buffer("chunk", bytemuck::bytes_of(&params)))
    }
}

/// Bindings 0-6 of a kernel over one row chunk (shaders/shared/csr_bindings.wgsl and
/// csr_chunk.wgsl): the chunk's three arrays, `x`, `y`, α and β, and the rows it writes.
pub(crate) fn chunk_bindings(
    gpu: &Gpu,
    [ptr, cols, values]: [Binding; 3],
    rows: Range<usize>,
) -> Vec<Binding> {
    vec![
        ptr,
        cols,
        values,
        Binding::X,
        Binding::Y,
        Binding::Coeffs,
        Binding::Owned(ChunkUniform::buffer(gpu, rows)),
    ]
}

/// Splits rows (or strips: any pointer array) into consecutive ranges whose entries take at most
/// `max_bytes` per array (`entry_bytes` per stored entry) and whose pointers fit too. A single row
/// that cannot fit is an error: these methods never split a row.
pub(crate) fn ptr_chunks(
    row_ptr: &[u32],
    entry_bytes: u64,
    max_bytes: u64,
    unit: &str,
) -> Result<Vec<Range<usize>>> {
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
                what: format!("{unit} {start} with {len} entries"),
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

/// The pointers of `range` (its units' starts, and the last one's end) made relative to its first
/// entry: a chunk's own pointer array.
pub(crate) fn rebased_ptr(ptr: &[u32], range: &Range<usize>) -> Vec<u32> {
    let base = ptr[range.start];
    ptr[range.start..=range.end]
        .iter()
        .map(|p| p - base)
        .collect()
}

/// A deterministic vector of values in [-1, 1) for timing candidates: varied, so that no value
/// pattern favours one kernel, and the same on every run.
pub(crate) fn probe_vector<T: crate::Scalar>(n: usize) -> Vec<T> {
    (0..n as u64)
        .map(|i| {
            // SplitMix64 of the index: cheap and well spread.
            let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            T::from_f64((z >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        })
        .collect()
}

pub(crate) fn bad(name: &'static str, value: impl ToString, reason: impl Into<String>) -> Error {
    Error::InvalidParameter {
        name,
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Chooses the lane mode for a kernel with teams.
pub(crate) fn lane_mode(gpu: &Gpu, policy: LanePolicy) -> Result<LaneMode> {
    let info = gpu.info();
    let has = info.has(wgpu::Features::SUBGROUP)
        && crate::kernel::LANE_WIDTHS.contains(&info.subgroup_min_size);
    match policy {
        LanePolicy::Workgroup => Ok(LaneMode::Workgroup),
        LanePolicy::Subgroup if !has => Err(Error::MissingFeature {
            adapter: info.name.clone(),
            feature: "SUBGROUP",
            needed_for: "the subgroup lane path".into(),
            hint: " (use LanePolicy::Auto or Workgroup)",
        }),
        LanePolicy::Subgroup => Ok(LaneMode::Subgroup),
        LanePolicy::Auto => Ok(if has {
            LaneMode::Subgroup
        } else {
            LaneMode::Workgroup
        }),
    }
}

/// The team width for a lane mode, and the smallest workgroup that holds one team: the subgroup
/// path takes the adapter's subgroup size (teams may be as wide as its largest subgroup); the
/// workgroup-memory path takes `lanes_per_row`, 32 by default.
pub(crate) fn team_width(
    gpu: &Gpu,
    lanes: LaneMode,
    lanes_per_row: Option<u32>,
) -> Result<(u32, u32)> {
    let info = gpu.info();
    match lanes {
        LaneMode::Subgroup => {
            if let Some(l) = lanes_per_row.filter(|&l| l != info.subgroup_min_size) {
                return Err(bad(
                    "lanes_per_row",
                    l,
                    "the subgroup path uses the adapter's subgroup size",
                ));
            }
            Ok((info.subgroup_min_size, info.subgroup_max_size))
        }
        LaneMode::Workgroup => {
            let team = lanes_per_row.unwrap_or(32);
            if !crate::kernel::LANE_WIDTHS.contains(&team) {
                return Err(bad(
                    "lanes_per_row",
                    team,
                    format!("must be one of {:?}", crate::kernel::LANE_WIDTHS),
                ));
            }
            Ok((team, team))
        }
    }
}

/// Validates the requested workgroup size or chooses `default` (raised to `at_least`).
pub(crate) fn workgroup_size(
    gpu: &Gpu,
    requested: Option<u32>,
    default: u32,
    at_least: u32,
) -> Result<u32> {
    let max = gpu
        .info()
        .limits
        .max_compute_invocations_per_workgroup
        .min(gpu.info().limits.max_compute_workgroup_size_x);
    let wg = requested.unwrap_or(default.max(at_least).min(max));
    if !crate::kernel::WORKGROUP_SIZES.contains(&wg) {
        return Err(bad(
            "workgroup_size",
            wg,
            format!("must be one of {:?}", crate::kernel::WORKGROUP_SIZES),
        ));
    }
    if wg > max {
        return Err(bad(
            "workgroup_size",
            wg,
            format!("this adapter allows at most {max} invocations per workgroup"),
        ));
    }
    if wg < at_least {
        return Err(bad(
            "workgroup_size",
            wg,
            format!("must be at least {at_least} (the largest subgroup)"),
        ));
    }
    Ok(wg)
}

/// The largest array one chunk may hold on this adapter (or the caller's lower limit).
pub(crate) fn chunk_limit(gpu: &Gpu, opts: &PlanOptions) -> u64 {
    let limit = gpu.info().max_binding_bytes();
    opts.max_chunk_bytes.unwrap_or(limit).min(limit)
}

/// Refuses a workgroup buffer the adapter cannot hold.
pub(crate) fn check_workgroup_memory(
    gpu: &Gpu,
    name: &'static str,
    value: u32,
    bytes: u64,
) -> Result<()> {
    let have = gpu.info().limits.max_compute_workgroup_storage_size as u64;
    if bytes > have {
        return Err(bad(
            name,
            value,
            format!("needs {bytes} bytes of workgroup memory, the adapter has {have}"),
        ));
    }
    Ok(())
}

/// Uploads a plan-owned storage array, as a buffer the plan may also keep elsewhere (e.g. to
/// update the values in it).
pub(crate) fn upload_buffer<P: bytemuck::Pod>(
    gpu: &Gpu,
    label: &str,
    data: &[P],
) -> Result<Arc<DeviceBuffer>> {
    // (COPY_SRC: a plan's arrays can be read back, e.g. to compare builds.)
    Ok(Arc::new(gpu.storage_buffer(
        label,
        bytemuck::cast_slice(data),
        wgpu::BufferUsages::COPY_SRC,
    )?))
}

/// Uploads a plan-owned storage array.
pub(crate) fn upload<P: bytemuck::Pod>(gpu: &Gpu, label: &str, data: &[P]) -> Result<Binding> {
    upload_buffer(gpu, label, data).map(Binding::Owned)
}

/// Uploads values that are CSR entries `first..first + len` in order (`data` may be padded),
/// noting the run for `SpmvPlan::update_values`.
pub(crate) fn upload_values<P: bytemuck::Pod>(
    gpu: &Gpu,
    label: &str,
    data: &[P],
    first: usize,
    len: usize,
    runs: &mut Vec<crate::plan::values::ValueRun>,
) -> Result<Binding> {
    let buffer = upload_buffer(gpu, label, data)?;
    runs.push(crate::plan::values::ValueRun {
        buffer: buffer.clone(),
        dst: 0,
        src: first as u64,
        len: len as u64,
    });
    Ok(Binding::Owned(buffer))
}

/// Copies the first `bytes` of each of the caller's buffers into a new plan-owned storage
/// buffer, on the GPU (one submission, not waited for).
pub(crate) fn copy_from_caller<const N: usize>(
    gpu: &Gpu,
    from: &[(&'static str, &wgpu::Buffer); N],
    bytes: &[u64; N],
) -> Result<[Arc<DeviceBuffer>; N]> {
    let mut owned = Vec::with_capacity(N);
    for ((label, _), &n) in from.iter().zip(bytes) {
        // Overwritten by the copy below: no clear.
        owned.push(Arc::new(gpu.storage_overwritten(
            label,
            n,
            wgpu::BufferUsages::empty(),
        )?));
    }
    gpu.scoped("copying the caller's CSR arrays", || -> Result<()> {
        let mut enc = gpu
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("copy from the caller"),
            });
        for (((_, src), dst), &n) in from.iter().zip(&owned).zip(bytes) {
            gpu.record_copy(&mut enc, src, 0, dst, 0, n)?;
        }
        gpu.submit([enc.finish()]);
        Ok(())
    })??;
    Ok(owned.try_into().expect("one buffer per array"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_rows_and_respect_budget() {
        let row_ptr = [0u32, 3, 3, 10, 11, 20, 20];
        let c = ptr_chunks(&row_ptr, 4, 40, "row").unwrap();
        assert_eq!(c, vec![0..3, 3..6]); // 10 entries each: exactly the budget
        assert_eq!(
            ptr_chunks(&row_ptr, 4, 36, "row").unwrap(),
            vec![0..2, 2..4, 4..6]
        );
        assert_eq!(ptr_chunks(&row_ptr, 4, 1 << 20, "row").unwrap(), vec![0..6]);
        assert!(matches!(
            ptr_chunks(&row_ptr, 4, 16, "row"),
            Err(Error::TooLargeForAdapter { .. })
        ));
        assert!(ptr_chunks(&[0], 4, 16, "row").unwrap().is_empty());
    }
}

#[cfg(test)]
mod struct_size_tests {
    use crate::kernel::LaneMode;
    use crate::methods::csr::kernels::CSR_SCALAR;

    /// Size in bytes of the WGSL struct `name` in an assembled kernel.
    fn wgsl_struct_size(src: &str, name: &str) -> u32 {
        let module = naga::front::wgsl::parse_str(src).unwrap();
        let ty = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no struct {name}"));
        ty.1.inner.size(module.to_ctx())
    }

    #[test]
    fn host_mirrors_match_wgsl_struct_sizes() {
        for (scalar, size) in [("f32", 4), ("f64", 8)] {
            let src = CSR_SCALAR.source(scalar, LaneMode::Workgroup);
            // `Coeffs` is uploaded as `[alpha, beta]` of the scalar type (plan/mod.rs).
            assert_eq!(wgsl_struct_size(&src, "Coeffs"), 2 * size);
            assert_eq!(
                wgsl_struct_size(&src, "Chunk") as usize,
                std::mem::size_of::<super::ChunkUniform>()
            );
        }
    }
}
