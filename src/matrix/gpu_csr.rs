//! A CSR matrix the caller already holds on the GPU (assembled by its own compute pass, say):
//! described by [`GpuCsr`], validated on the GPU, and prepared by [`Gpu::prepare_gpu_csr`]
//! without the host reading the matrix back where the method can build its format there.

use crate::gpu::recorder::Recorder;
use crate::gpu::Gpu;
use crate::{CsrMatrix, Error, Result, Scalar};
use std::rc::Rc;

/// A CSR matrix in the caller's GPU buffers: `row_ptr` (`nrows + 1` u32), `col_idx` (`nnz` u32)
/// and `values` (`nnz` scalars), each from offset 0, on the same device as the [`Gpu`] it is
/// prepared with.
///
/// The invariants are those of [`CsrMatrix::try_new`](crate::CsrMatrix::try_new): `row_ptr`
/// starts at 0, never decreases and ends at `nnz`; columns are below `ncols` and strictly
/// increasing within a row. They are checked on the GPU; a violation is the same [`Error`] the
/// host check gives. Each buffer needs `BufferUsages::STORAGE | BufferUsages::COPY_SRC`. The plan
/// copies what it needs: the buffers are only read while preparing, and stay the caller's
/// (unless [`CallerBuffers::Share`](crate::CallerBuffers::Share) lets the CSR kernels keep them).
///
/// ```
/// use wgspmv::{wgpu, wgpu::util::DeviceExt, Gpu, GpuCsr, GpuVector, Method, PlanOptions};
/// # fn main() -> wgspmv::Result<()> {
/// # let gpu = match Gpu::new() {
/// #     Err(_) if std::env::var_os("CI").is_none() => return Ok(()), // no adapter here
/// #     g => g?,
/// # };
/// // Arrays an app's compute pass would have written: [[2, 0], [1, 3]].
/// let buffer = |contents: &[u8]| {
///     gpu.device().create_buffer_init(&wgpu::util::BufferInitDescriptor {
///         label: None,
///         contents,
///         usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
///     })
/// };
/// let row_ptr = buffer(bytemuck::cast_slice(&[0u32, 1, 3]));
/// let col_idx = buffer(bytemuck::cast_slice(&[0u32, 0, 1]));
/// let values = buffer(bytemuck::cast_slice(&[2.0f32, 1.0, 3.0]));
/// let a = GpuCsr { nrows: 2, ncols: 2, nnz: 3, row_ptr: &row_ptr, col_idx: &col_idx, values: &values };
/// let plan = gpu.prepare_gpu_csr::<f32>(&a, Method::Speculative, &PlanOptions::default())?;
/// let x = GpuVector::from_slice(&gpu, &[1.0, 2.0])?;
/// let mut y = GpuVector::filled(&gpu, 2, 0.0)?;
/// plan.run(&x, &mut y)?;
/// assert_eq!(y.read()?, vec![2.0, 7.0]);
/// // A bad matrix is the error the host check gives, found on the GPU.
/// let bad = buffer(bytemuck::cast_slice(&[0u32, 2, 1]));
/// let e = gpu.prepare_gpu_csr::<f32>(&GpuCsr { row_ptr: &bad, ..a }, Method::Speculative, &PlanOptions::default());
/// assert!(matches!(e, Err(wgspmv::Error::RowPtrNotMonotone { index: 2, .. })));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct GpuCsr<'a> {
    /// Rows of the matrix.
    pub nrows: usize,
    /// Columns of the matrix.
    pub ncols: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Row pointers: `nrows + 1` u32.
    pub row_ptr: &'a wgpu::Buffer,
    /// Column indices: `nnz` u32.
    pub col_idx: &'a wgpu::Buffer,
    /// Values: `nnz` elements of the plan's scalar type.
    pub values: &'a wgpu::Buffer,
}

/// What the GPU check learnt besides validity.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checked {
    /// Entries of the longest row.
    pub longest_row: u32,
}

/// A host CSR uploaded as it is, for the methods whose format the GPU builds faster than the
/// host (see [`BuildOn`](crate::BuildOn)). Dropped once the plan is built: the plan keeps its
/// own copies (so the arrays go back to the buffer pool for the next upload).
pub(crate) struct UploadedCsr {
    shape: (usize, usize, usize),
    row_ptr: crate::gpu::DeviceBuffer,
    col_idx: crate::gpu::DeviceBuffer,
    values: crate::gpu::DeviceBuffer,
    /// What the GPU check would have learnt, from the host (the host CSR is valid by type).
    pub checked: Checked,
}

impl UploadedCsr {
    /// Uploads `a`'s three arrays; `None` when one of them exceeds a binding (such matrices
    /// need row chunks, which the host builds).
    pub(crate) fn new<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>) -> Result<Option<Self>> {
        let limit = gpu.info().max_binding_bytes();
        let bytes = [
            bytemuck::cast_slice::<u32, u8>(a.row_ptr()),
            bytemuck::cast_slice(a.col_idx()),
            bytemuck::cast_slice::<T, u8>(a.values()),
        ];
        if bytes.iter().any(|b| b.len() as u64 > limit) {
            return Ok(None);
        }
        let longest_row = a.longest_row() as u32;
        let usage = wgpu::BufferUsages::COPY_SRC;
        let [row_ptr, col_idx, values] = [0, 1, 2].map(|i| {
            let label = ["uploaded row_ptr", "uploaded col_idx", "uploaded values"][i];
            gpu.storage_buffer(label, bytes[i], usage)
        });
        Ok(Some(Self {
            shape: a.shape(),
            row_ptr: row_ptr?,
            col_idx: col_idx?,
            values: values?,
            checked: Checked { longest_row },
        }))
    }

    /// `a` uploaded: the upload [`SharedUpload`] keeps on this thread for `a` (made at the
    /// first call, then the same one), or a fresh one where none is kept for it.
    pub(crate) fn shared<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>) -> Result<Option<Rc<Self>>> {
        let key = UploadKey::of(gpu, a);
        let kept = SHARED_UPLOAD.with_borrow(|s| match s {
            Some((k, up)) if *k == key => Some(up.clone()),
            _ => None,
        });
        match kept {
            Some(Some(up)) => Ok(Some(up)),
            Some(None) => {
                let up = Self::new(gpu, a)?.map(Rc::new);
                SHARED_UPLOAD.with_borrow_mut(|s| {
                    if let Some((k, slot)) = s {
                        if *k == key {
                            *slot = up.clone();
                        }
                    }
                });
                Ok(up)
            }
            None => Ok(Self::new(gpu, a)?.map(Rc::new)),
        }
    }

    /// The arrays as a matrix given on the GPU.
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

/// Which host CSR an upload is of: the device, and the arrays' addresses, lengths and value
/// type (while the matrix is borrowed for a `prepare`, no other matrix has them).
#[derive(Clone, Copy, PartialEq, Eq)]
struct UploadKey {
    device: u64,
    arrays: [(usize, usize); 3],
    scalar: std::any::TypeId,
}

impl UploadKey {
    fn of<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>) -> Self {
        Self {
            device: gpu.inner.id,
            arrays: [
                (a.row_ptr().as_ptr() as usize, a.row_ptr().len()),
                (a.col_idx().as_ptr() as usize, a.col_idx().len()),
                (a.values().as_ptr() as usize, a.values().len()),
            ],
            scalar: std::any::TypeId::of::<T>(),
        }
    }
}

thread_local! {
    /// The upload a [`SharedUpload`] keeps: its matrix's key, and the upload once made.
    static SHARED_UPLOAD: std::cell::RefCell<Option<(UploadKey, Option<Rc<UploadedCsr>>)>> =
        const { std::cell::RefCell::new(None) };
}

/// While it lives, the builds on this thread that upload `a` as it is share one upload
/// ([`UploadedCsr::shared`]): a plan and its plan of Aᵀ read A's arrays from the GPU once.
/// Dropped, the upload goes (back to the buffer pool once no build holds it).
pub(crate) struct SharedUpload {
    previous: Option<(UploadKey, Option<Rc<UploadedCsr>>)>,
}

impl SharedUpload {
    pub(crate) fn of<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>) -> Self {
        let key = UploadKey::of(gpu, a);
        Self {
            previous: SHARED_UPLOAD.with_borrow_mut(|s| s.replace((key, None))),
        }
    }
}

impl Drop for SharedUpload {
    fn drop(&mut self) {
        let previous = self.previous.take();
        SHARED_UPLOAD.with_borrow_mut(|s| *s = previous);
    }
}

/// Mirrors the `found` array of shaders/shared/csr_check.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Findings {
    first_decrease: u32,
    first_col_out: u32,
    first_unsorted: u32,
    longest_row: u32,
    ptr_first: u32,
    ptr_last: u32,
    decrease_value: u32,
    decrease_prev: u32,
    bad_entry_row: u32,
    bad_entry_col: u32,
    bad_entry_prev: u32,
    pad: u32,
}

const NONE: u32 = u32::MAX;

/// A validation recorded into an encoder, its findings not read yet
/// ([`GpuCsr::record_check`]).
pub(crate) struct PendingCheck {
    found: crate::gpu::DeviceBuffer,
    /// The passes' pooled scratch (row-start bits, a column stand-in), held until the findings
    /// are read: dropped earlier, another thread's allocation could take them before the
    /// passes ran and mix its bits with theirs.
    _scratch: (crate::gpu::DeviceBuffer, Option<crate::gpu::DeviceBuffer>),
}

impl PendingCheck {
    /// The findings' read, to join a build's read back.
    pub(crate) fn read(&self) -> crate::gpu::RangeRead<'_> {
        crate::gpu::RangeRead::first(&self.found, std::mem::size_of::<Findings>() as u64)
    }

    /// The longest row, or the first violation as the host check would name it, from the bytes
    /// [`read`](Self::read) brought back.
    pub(crate) fn finish(&self, a: &GpuCsr, bytes: &[u8]) -> Result<Checked> {
        let f: Findings = bytemuck::pod_read_unaligned(bytes);
        a.first_violation(&f)?;
        Ok(Checked {
            longest_row: f.longest_row,
        })
    }
}

/// Bytes of a CSR matrix's row pointers, columns and values.
pub(crate) fn csr_bytes<T: Scalar>(nrows: usize, nnz: usize) -> [u64; 3] {
    [
        4 * (nrows as u64 + 1),
        4 * nnz as u64,
        std::mem::size_of::<T>() as u64 * nnz as u64,
    ]
}

impl GpuCsr<'_> {
    /// Bytes of the three arrays.
    pub(crate) fn bytes<T: Scalar>(&self) -> [u64; 3] {
        csr_bytes::<T>(self.nrows, self.nnz)
    }

    /// The three buffers, named.
    pub(crate) fn buffers(&self) -> [(&'static str, &wgpu::Buffer); 3] {
        [
            ("row_ptr", self.row_ptr),
            ("col_idx", self.col_idx),
            ("values", self.values),
        ]
    }

    /// The stated sizes fit the kernels' 32-bit indices: checked before anything is sized
    /// from them (a build that sizes its buffers before the validation runs).
    pub(crate) fn check_sizes(&self) -> Result<()> {
        super::csr::check_u32("nrows", self.nrows)?;
        super::csr::check_u32("ncols", self.ncols)?;
        super::csr::check_u32("nnz", self.nnz)
    }

    /// Checks what the host can: dimensions, buffer sizes and usages, binding limits.
    fn check_buffers<T: Scalar>(&self, gpu: &Gpu) -> Result<()> {
        self.check_sizes()?;
        let need = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let limit = gpu.info().max_binding_bytes();
        for ((array, buffer), bytes) in self.buffers().into_iter().zip(self.bytes::<T>()) {
            if !buffer.usage().contains(need) {
                return Err(Error::CallerBuffer {
                    array,
                    problem: format!(
                        "has usage {:?}; it needs STORAGE | COPY_SRC",
                        buffer.usage()
                    ),
                });
            }
            if buffer.size() < bytes {
                return Err(Error::CallerBuffer {
                    array,
                    problem: format!(
                        "has {} bytes; a {}x{} matrix with {} entries needs {bytes}",
                        buffer.size(),
                        self.nrows,
                        self.ncols,
                        self.nnz
                    ),
                });
            }
            if bytes > limit {
                return Err(Error::TooLargeForAdapter {
                    what: format!("the {array} buffer"),
                    bytes,
                    limit_name: "max_storage_buffer_binding_size",
                    limit,
                });
            }
            gpu.check_device(array, buffer)?;
        }
        Ok(())
    }

    /// The column buffer to bind: the caller's, or a small stand-in (kept in `stand_in`) where
    /// an empty array came in a buffer too small to bind.
    pub(crate) fn bindable_col_idx<'b>(
        &'b self,
        gpu: &Gpu,
        stand_in: &'b mut Option<crate::gpu::DeviceBuffer>,
    ) -> Result<&'b wgpu::Buffer> {
        if self.col_idx.size() >= 4 {
            return Ok(self.col_idx);
        }
        let b = gpu.storage_zeroed("no columns", 16, wgpu::BufferUsages::empty())?;
        Ok(stand_in.insert(b))
    }

    /// Validates the matrix on the GPU (three small passes and one 48-byte read back); returns
    /// the longest row's length, or the first violation as the host check would name it.
    pub(crate) fn check<T: Scalar>(&self, gpu: &Gpu) -> Result<Checked> {
        let start = std::time::Instant::now();
        let mut enc = gpu
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("csr check"),
            });
        let pending = self.record_check::<T>(gpu, &mut enc)?;
        let submitted = start.elapsed();
        let got = gpu.read_ranges_after(Some(enc), &[pending.read()])?;
        log::debug!(
            "GPU CSR check: recorded {:?}, read back {:?}",
            submitted,
            start.elapsed()
        );
        pending.finish(self, &got[0][0])
    }

    /// [`record_check`](Self::record_check) where `validate` asks for it, the time spent
    /// recording written there.
    pub(crate) fn record_check_if<T: Scalar>(
        &self,
        gpu: &Gpu,
        enc: &mut wgpu::CommandEncoder,
        validate: Option<&mut f64>,
    ) -> Result<Option<PendingCheck>> {
        let Some(ms) = validate else {
            return Ok(None);
        };
        let t = std::time::Instant::now();
        let check = self.record_check::<T>(gpu, enc)?;
        *ms = t.elapsed().as_secs_f64() * 1e3;
        Ok(Some(check))
    }

    /// Submits `enc` and reads `words` back, with `check`'s findings where there is one: the
    /// words once the matrix is known to be valid.
    pub(crate) fn read_checked(
        &self,
        gpu: &Gpu,
        enc: wgpu::CommandEncoder,
        check: Option<&PendingCheck>,
        words: crate::gpu::RangeRead,
    ) -> Result<Vec<u8>> {
        let reads: Vec<_> = check.iter().map(|c| c.read()).chain([words]).collect();
        let mut got = gpu.read_ranges_after(Some(enc), &reads)?;
        if let Some(check) = check {
            check.finish(self, &got[0][0])?;
        }
        Ok(got.pop().and_then(|mut w| w.pop()).unwrap_or_default())
    }

    /// Checks what the host can and records the GPU validation's passes into `enc`, for a build
    /// that reads the findings back with its own first read back ([`PendingCheck::read`]) and
    /// uses nothing it builds before [`PendingCheck::finish`] says the matrix is valid. Its
    /// passes must then be safe on any arrays: no loop longer than a binary search, every write
    /// into its own buffers.
    pub(crate) fn record_check<T: Scalar>(
        &self,
        gpu: &Gpu,
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<PendingCheck> {
        self.check_buffers::<T>(gpu)?;
        let (nrows, nnz) = (self.nrows as u32, self.nnz as u32);
        let none = wgpu::BufferUsages::empty();
        let init = Findings {
            first_decrease: NONE,
            first_col_out: NONE,
            first_unsorted: NONE,
            ..bytemuck::Zeroable::zeroed()
        };
        let found = gpu.storage_buffer(
            "csr check findings",
            bytemuck::bytes_of(&init),
            wgpu::BufferUsages::COPY_SRC,
        )?;
        let starts =
            gpu.storage_zeroed("csr check row starts", 4 * nnz.div_ceil(32) as u64, none)?;
        let params = gpu.uniform_buffer(
            "csr check params",
            bytemuck::cast_slice(&[nrows, self.ncols as u32, nnz, 0]),
        );
        let mut stand_in = None;
        let col_idx = self.bindable_col_idx(gpu, &mut stand_in)?;
        gpu.scoped("validating a CSR matrix on the GPU", || {
            let mut r = Recorder::new(gpu, enc, "csr check");
            let buffers: [&dyn crate::gpu::Bind; 5] =
                [self.row_ptr, col_idx, &starts, &found, &params];
            let groups = |n: u32| n.div_ceil(256);
            r.passes(
                crate::kernel::CSR_CHECK,
                &buffers,
                &[(0, groups(nrows + 1)), (1, groups(nnz)), (2, 1)],
            )
        })??;
        Ok(PendingCheck {
            found,
            _scratch: (starts, stand_in),
        })
    }

    /// The error the host check gives for the same arrays, in the same order of checks.
    fn first_violation(&self, f: &Findings) -> Result<()> {
        if f.ptr_first != 0 {
            return Err(Error::RowPtrStart(f.ptr_first));
        }
        if f.first_decrease != NONE {
            return Err(Error::RowPtrNotMonotone {
                index: f.first_decrease as usize,
                value: f.decrease_value,
                prev: f.decrease_prev,
            });
        }
        if f.ptr_last as usize != self.nnz {
            return Err(Error::RowPtrEnd {
                last: f.ptr_last,
                nnz: self.nnz,
            });
        }
        let entry = f.first_col_out.min(f.first_unsorted);
        if entry == NONE {
            return Ok(());
        }
        let (row, entry) = (f.bad_entry_row as usize, entry as usize);
        if f.first_col_out as usize == entry {
            Err(Error::ColumnOutOfRange {
                row,
                entry,
                col: f.bad_entry_col,
                ncols: self.ncols,
            })
        } else {
            Err(Error::ColumnsNotSorted {
                row,
                entry,
                col: f.bad_entry_col,
                prev: f.bad_entry_prev,
            })
        }
    }

    /// Reads the matrix back into a host [`CsrMatrix`](crate::CsrMatrix), for the formats that
    /// are built on the host.
    pub(crate) fn read_back<T: Scalar>(&self, gpu: &Gpu) -> Result<crate::CsrMatrix<T>> {
        let [ptr_bytes, col_bytes, val_bytes] = self.bytes::<T>();
        let reqs: Vec<crate::gpu::RangeRead> = self
            .buffers()
            .into_iter()
            .zip([ptr_bytes, col_bytes, val_bytes])
            .map(|((_, buffer), bytes)| crate::gpu::RangeRead {
                buffer,
                ranges: std::iter::once(0..bytes)
                    .filter(|r| !r.is_empty())
                    .collect(),
                in_place: false,
            })
            .collect();
        let got = gpu.read_ranges(&reqs)?;
        let array = |i: usize| got[i].first().map(Vec::as_slice).unwrap_or(&[]);
        crate::CsrMatrix::try_new(
            self.nrows,
            self.ncols,
            bytemuck::pod_collect_to_vec(array(0)),
            bytemuck::pod_collect_to_vec(array(1)),
            bytemuck::pod_collect_to_vec(array(2)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pending check holds its pooled scratch until its findings are read: handed back
    /// earlier, another thread's allocation could take it before the passes ran and mix its own
    /// row-start bits with theirs (a bad matrix then passes).
    #[test]
    fn a_pending_check_holds_its_scratch_until_read() {
        let Some(gpu) = crate::gpu::test_gpu() else {
            return;
        };
        let a = crate::testing::SuiteClass::ShortRows
            .generate(20_000, 1)
            .cast::<f32>();
        let up = UploadedCsr::new(&gpu, &a).unwrap().expect("fits a binding");
        gpu.release_buffer_pool();
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        let pending = up.view().record_check::<f32>(&gpu, &mut enc).unwrap();
        assert_eq!(
            gpu.buffer_pool_bytes(),
            0,
            "scratch handed back while recorded"
        );
        let got = gpu.read_ranges_after(Some(enc), &[pending.read()]).unwrap();
        pending.finish(&up.view(), &got[0][0]).unwrap();
        drop(pending);
        assert!(
            gpu.buffer_pool_bytes() > 0,
            "the scratch goes back once read"
        );
    }
}
