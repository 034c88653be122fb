//! Test support (feature `testing`): the synthetic suite the tests, examples and benchmarks draw
//! their matrices from. The library itself never calls it. The CPU reference every GPU result is
//! checked against is [`crate::reference`], available without this feature.

pub mod suite;

pub use suite::SuiteClass;

use crate::{CsrMatrix, Gpu, Result, Scalar};

/// `a` transposed on `gpu` as plans do it (`PlanOptions::transposed`), read back: Aᵀ and, for
/// each of its entries, the entry of `a` it holds; compared word for word with
/// [`CsrMatrix::transpose_with_sources`] by the tests. `a` needs at least one entry.
pub fn transpose_on_gpu<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
) -> Result<(CsrMatrix<T>, Vec<u32>)> {
    let up = crate::matrix::UploadedCsr::new(gpu, a)?.ok_or(crate::Error::InvalidParameter {
        name: "a",
        value: format!("{} entries", a.nnz()),
        reason: "an array exceeds one binding".into(),
    })?;
    let at = crate::matrix::transpose_on_gpu::<T>(gpu, &up.view())?;
    let v = at.view();
    let t = CsrMatrix::try_new(
        v.nrows,
        v.ncols,
        gpu.read_buffer(v.row_ptr, v.nrows + 1)?,
        gpu.read_buffer(v.col_idx, v.nnz)?,
        gpu.read_buffer(v.values, v.nnz)?,
    )?;
    Ok((t, gpu.read_buffer(&at.sources, v.nnz)?))
}
