//! Dense matrices on the GPU: the many vectors of a sparse × dense product (SpMM).

use super::{Gpu, GpuVector};
use crate::{Error, Result, Scalar};

/// How a dense matrix's elements follow one another in its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Row after row: element (r, j) at `r · cols + j` (the k values of one row together).
    RowMajor,
    /// Column after column: element (r, j) at `j · rows + r` (each column a vector).
    ColumnMajor,
}

/// A dense `rows × cols` matrix of `T` in GPU memory, in either [`Layout`]: the `X` and `Y` of
/// `Y = α·A·X + β·Y` ([`SpmvPlan::run_spmm`](crate::SpmvPlan::run_spmm)).
pub struct GpuMatrix<T> {
    data: GpuVector<T>,
    rows: usize,
    cols: usize,
    layout: Layout,
}

impl<T: Scalar> GpuMatrix<T> {
    /// Uploads `data`, `rows × cols` elements in `layout`.
    pub fn from_slice(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        layout: Layout,
        data: &[T],
    ) -> Result<Self> {
        Self::check_len(rows, cols, data.len())?;
        Self::from_vector(GpuVector::from_slice(gpu, data)?, rows, cols, layout)
    }

    /// A `rows × cols` matrix of copies of `value`.
    pub fn filled(gpu: &Gpu, rows: usize, cols: usize, layout: Layout, value: T) -> Result<Self> {
        let len = Self::check_len(rows, cols, usize::MAX)?;
        Self::from_vector(GpuVector::filled(gpu, len, value)?, rows, cols, layout)
    }

    /// A vector of `rows · cols` elements seen as a matrix in `layout` (no copy): an
    /// application's own buffer through [`GpuVector::from_buffer`], for one.
    pub fn from_vector(
        data: GpuVector<T>,
        rows: usize,
        cols: usize,
        layout: Layout,
    ) -> Result<Self> {
        Self::check_len(rows, cols, data.len())?;
        Ok(Self {
            data,
            rows,
            cols,
            layout,
        })
    }

    /// `rows · cols`, or an error where it overflows or differs from `len` (`usize::MAX`: any).
    fn check_len(rows: usize, cols: usize, len: usize) -> Result<usize> {
        let n = rows
            .checked_mul(cols)
            .ok_or_else(|| Error::InvalidParameter {
                name: "shape",
                value: format!("{rows} x {cols}"),
                reason: "more elements than fit in memory".into(),
            })?;
        if len != usize::MAX && n != len {
            return Err(Error::DimensionMismatch {
                what: "dense matrix elements (rows x cols)",
                expected: n,
                actual: len,
            });
        }
        Ok(n)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns (the number of vectors).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// The order of the elements.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The elements, in the matrix's layout.
    pub fn as_vector(&self) -> &GpuVector<T> {
        &self.data
    }

    /// The elements, in the matrix's layout, to write.
    pub fn as_vector_mut(&mut self) -> &mut GpuVector<T> {
        &mut self.data
    }

    /// Reads the elements back, in the matrix's layout.
    pub fn read(&self) -> Result<Vec<T>> {
        self.data.read()
    }

    /// `(row step, column step)` between elements, in elements.
    pub(crate) fn steps(&self) -> (usize, usize) {
        match self.layout {
            Layout::RowMajor => (self.cols, 1),
            Layout::ColumnMajor => (1, self.rows),
        }
    }
}

impl<T> std::fmt::Debug for GpuMatrix<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMatrix")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}
