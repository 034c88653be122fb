//! Aᵀ built on the GPU from a CSR in GPU buffers: a stable sort of the entries by column (a
//! counting sort per 8-bit digit, `Recorder::radix_sort`), then the transposed row pointers and
//! columns, and the values gathered. [`CsrMatrix::transpose_with_sources`](crate::CsrMatrix::transpose_with_sources)
//! is its host twin, word for word. One submission and one read back (the longest row, which
//! the plan of Aᵀ is built with).

use super::{Checked, GpuCsr};
use crate::gpu::recorder::{radix_scratch_len, Recorder, SortSide};
use crate::gpu::{DeviceBuffer, Gpu};
use crate::{Error, Result, Scalar};

/// Mirrors `struct TransposeParams` in shaders/shared/transpose_params.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct TransposeParams {
    nnz: u32,
    nrows: u32,
    ncols: u32,
    pad: u32,
}

/// Aᵀ in GPU buffers, and the map from its entries to A's.
pub(crate) struct GpuTranspose {
    /// (rows, columns, entries) of Aᵀ.
    shape: (usize, usize, usize),
    row_ptr: DeviceBuffer,
    col_idx: DeviceBuffer,
    values: DeviceBuffer,
    /// For each entry of Aᵀ, the entry of A it holds (what value updates gather by).
    pub sources: DeviceBuffer,
    /// What a GPU check of Aᵀ would learn.
    pub checked: Checked,
}

impl GpuTranspose {
    /// Aᵀ as a matrix given on the GPU.
    pub(crate) fn view(&self) -> GpuCsr<'_> {
        let (nrows, ncols, nnz) = self.shape;
        GpuCsr {
            nrows,
            ncols,
            nnz,
            row_ptr: &self.row_ptr,
            col_idx: &self.col_idx,
            values: &self.values,
        }
    }
}

/// Bits needed to hold `v`.
fn bits(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Transposes `a` (a valid CSR with at least one entry) on the GPU and waits for it.
pub(crate) fn transpose_on_gpu<T: Scalar>(gpu: &Gpu, a: &GpuCsr) -> Result<GpuTranspose> {
    let too_many = |what: &'static str, n: usize| Error::InvalidParameter {
        name: what,
        value: n.to_string(),
        reason: "a transposition on the GPU needs fewer than 2^32 - 1".into(),
    };
    let nnz = u32::try_from(a.nnz).map_err(|_| too_many("nnz", a.nnz))?;
    let ncols = u32::try_from(a.ncols)
        .ok()
        .filter(|&n| n < u32::MAX)
        .ok_or_else(|| too_many("ncols", a.ncols))?;
    let nrows = u32::try_from(a.nrows).map_err(|_| too_many("nrows", a.nrows))?;
    let none = wgpu::BufferUsages::empty();
    let words = |label: &str, n: u64| gpu.storage_zeroed(label, n * 4, none);
    let (keys_a, keys_b) = (
        words("transpose keys", nnz as u64)?,
        words("transpose keys'", nnz as u64)?,
    );
    let (entries_a, entries_b) = (
        words("transpose entries", nnz as u64)?,
        words("transpose entries'", nnz as u64)?,
    );
    // Columns fit in one word: the sort never reads or moves high words.
    let (hi_a, hi_b) = (
        words("transpose hi (unused)", 1)?,
        words("transpose hi' (unused)", 1)?,
    );
    let (counts_len, sums_len) = radix_scratch_len(nnz);
    let counts = words("transpose digit counts", counts_len)?;
    let block_sums = words("transpose block sums", sums_len)?;
    let row_ptr = words("transposed row_ptr", ncols as u64 + 1)?;
    let col_idx = words("transposed col_idx", nnz as u64)?;
    let s = std::mem::size_of::<T>() as u64;
    let values = gpu.storage_zeroed("transposed values", nnz as u64 * s, none)?;
    let longest = words("transposed longest row", 1)?;
    let params = gpu.uniform_buffer(
        "transpose params",
        bytemuck::bytes_of(&TransposeParams {
            nnz,
            nrows,
            ncols,
            pad: 0,
        }),
    );
    let gather_params = gpu.uniform_buffer(
        "transpose gather params",
        bytemuck::cast_slice(&[nnz, 0u32]),
    );
    let side_a = SortSide {
        lo: &keys_a,
        hi: &hi_a,
        payload: &entries_a,
    };
    let side_b = SortSide {
        lo: &keys_b,
        hi: &hi_b,
        payload: &entries_b,
    };
    let mut in_b = false;
    let mut enc = gpu
        .device()
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("transpose"),
        });
    gpu.scoped("recording a transposition", || -> Result<()> {
        let mut r = Recorder::new(gpu, &mut enc, "transpose");
        r.dispatch(
            crate::kernel::TRANSPOSE_KEYS,
            vec![],
            &[a.col_idx, &keys_a, &entries_a, &params],
            nnz.div_ceil(256),
        )?;
        in_b = r.radix_sort(
            [&side_a, &side_b],
            [&counts, &block_sums],
            nnz,
            bits(ncols.saturating_sub(1) as u64),
        )?;
        // The sort's other key buffer is free: it takes the row of each entry.
        let (cols, entries, rows) = if in_b {
            (&keys_b, &entries_b, &keys_a)
        } else {
            (&keys_a, &entries_a, &keys_b)
        };
        r.dispatch(
            crate::kernel::TRANSPOSE_ROWS,
            vec![],
            &[a.row_ptr, rows, &params],
            nnz.div_ceil(256),
        )?;
        r.dispatch(
            crate::kernel::TRANSPOSE_FINISH,
            vec![],
            &[rows, cols, entries, &params, &col_idx, &row_ptr, &longest],
            nnz.max(ncols + 1).div_ceil(256),
        )?;
        r.dispatch(
            crate::kernel::GATHER,
            vec![
                ("WG_SIZE", 256),
                ("VAL_WORDS", (s / 4) as u32),
                ("MARK_ZEROS", 0),
            ],
            &[entries, a.values, &values, &gather_params],
            nnz.div_ceil(256),
        )?;
        Ok(())
    })??;
    let longest_row = gpu.read_buffer_after::<u32>(Some(enc), &longest, 1)?[0];
    let sources = if in_b { entries_b } else { entries_a };
    Ok(GpuTranspose {
        shape: (a.ncols, a.nrows, a.nnz),
        row_ptr,
        col_idx,
        values,
        sources,
        checked: Checked { longest_row },
    })
}
