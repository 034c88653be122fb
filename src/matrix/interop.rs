//! Conversions from the sparse matrices of other Rust crates, each behind the crate's feature of
//! the same name. Every conversion validates like [`CsrMatrix::try_new`]; rows that the other
//! crate allows unsorted are sorted, and an index that does not fit 32 bits is an error.

#[cfg(any(feature = "sprs", feature = "nalgebra-sparse", feature = "faer"))]
use super::CsrMatrix;
#[cfg(any(feature = "sprs", feature = "nalgebra-sparse", feature = "faer"))]
use crate::{Error, Scalar};

#[cfg(feature = "sprs")]
mod sprs_impls {
    use super::*;
    use sprs::{CsMatBase, CsMatI, SpIndex};
    use std::ops::Deref;

    /// Copies a `sprs` matrix of any index types; a CSC matrix is converted to CSR first.
    impl<T, I, Iptr, IptrStorage, IndStorage, DataStorage>
        TryFrom<&CsMatBase<T, I, IptrStorage, IndStorage, DataStorage, Iptr>> for CsrMatrix<T>
    where
        T: Scalar,
        I: SpIndex,
        Iptr: SpIndex,
        IptrStorage: Deref<Target = [Iptr]>,
        IndStorage: Deref<Target = [I]>,
        DataStorage: Deref<Target = [T]>,
    {
        type Error = Error;

        fn try_from(
            m: &CsMatBase<T, I, IptrStorage, IndStorage, DataStorage, Iptr>,
        ) -> Result<Self, Error> {
            if !m.is_csr() {
                return CsrMatrix::try_from(&m.to_csr());
            }
            let indptr = m.indptr();
            CsrMatrix::from_foreign_rows(
                m.rows(),
                m.cols(),
                |r| indptr.outer_inds_sz(r),
                m.indices(),
                m.data(),
                |i| i.try_index().map(|i| i as u64),
            )
        }
    }

    /// Takes over a CSR `sprs` matrix with `u32` indices without copying its arrays (a CSC
    /// matrix is converted).
    impl<T: Scalar> TryFrom<CsMatI<T, u32, u32>> for CsrMatrix<T> {
        type Error = Error;

        fn try_from(m: CsMatI<T, u32, u32>) -> Result<Self, Error> {
            let m = if m.is_csr() { m } else { m.to_csr() };
            let (nrows, ncols) = (m.rows(), m.cols());
            let (row_ptr, col_idx, values) = m.into_raw_storage();
            CsrMatrix::try_new(nrows, ncols, row_ptr, col_idx, values)
        }
    }

    /// The same matrix as a `sprs` CSR matrix with `u32` indices (the arrays are moved).
    impl<T: Scalar> From<CsrMatrix<T>> for CsMatI<T, u32, u32> {
        fn from(m: CsrMatrix<T>) -> Self {
            let (nrows, ncols, row_ptr, col_idx, values) = m.into_parts();
            // A CsrMatrix already holds sprs's invariants (monotone pointers
            // from 0, sorted in-range columns, matching lengths), so `new` cannot refuse it.
            CsMatI::new((nrows, ncols), row_ptr, col_idx, values)
        }
    }
}

#[cfg(feature = "nalgebra-sparse")]
mod nalgebra_impls {
    use super::*;

    fn from_parts<T: Scalar>(
        nrows: usize,
        ncols: usize,
        offsets: &[usize],
        cols: &[usize],
        values: &[T],
    ) -> Result<CsrMatrix<T>, Error> {
        CsrMatrix::from_foreign_rows(
            nrows,
            ncols,
            |r| offsets[r]..offsets[r + 1],
            cols,
            values,
            |i| Some(i as u64),
        )
    }

    /// Copies a nalgebra-sparse CSR matrix (its `usize` indices become `u32`).
    impl<T: Scalar + nalgebra_sparse::na::Scalar> TryFrom<&nalgebra_sparse::CsrMatrix<T>>
        for CsrMatrix<T>
    {
        type Error = Error;

        fn try_from(m: &nalgebra_sparse::CsrMatrix<T>) -> Result<Self, Error> {
            from_parts(
                m.nrows(),
                m.ncols(),
                m.row_offsets(),
                m.col_indices(),
                m.values(),
            )
        }
    }

    /// Copies a nalgebra-sparse CSC matrix, transposing its storage to rows.
    impl<T: Scalar + nalgebra_sparse::na::Scalar> TryFrom<&nalgebra_sparse::CscMatrix<T>>
        for CsrMatrix<T>
    {
        type Error = Error;

        fn try_from(m: &nalgebra_sparse::CscMatrix<T>) -> Result<Self, Error> {
            CsrMatrix::try_from(&nalgebra_sparse::CsrMatrix::from(m))
        }
    }

    /// The same matrix as a nalgebra-sparse CSR matrix (indices widened to `usize`).
    impl<T: Scalar + nalgebra_sparse::na::Scalar> From<&CsrMatrix<T>>
        for nalgebra_sparse::CsrMatrix<T>
    {
        fn from(m: &CsrMatrix<T>) -> Self {
            let widen = |v: &[u32]| v.iter().map(|&i| i as usize).collect::<Vec<_>>();
            nalgebra_sparse::CsrMatrix::try_from_csr_data(
                m.nrows(),
                m.ncols(),
                widen(m.row_ptr()),
                widen(m.col_idx()),
                m.values().to_vec(),
            )
            .expect("a CsrMatrix holds nalgebra-sparse's CSR invariants")
        }
    }
}

#[cfg(feature = "faer")]
mod faer_impls {
    use super::*;
    use faer::sparse::SparseRowMatRef;
    use faer::Index;

    /// Copies a faer sparse row matrix, compact or not (rows with gaps, `row_nnz`).
    impl<I: Index, T: Scalar> TryFrom<SparseRowMatRef<'_, I, T>> for CsrMatrix<T> {
        type Error = Error;

        fn try_from(m: SparseRowMatRef<'_, I, T>) -> Result<Self, Error> {
            let symbolic = m.symbolic();
            let (row_ptr, row_nnz) = (symbolic.row_ptr(), symbolic.row_nnz());
            let start = |r: usize| row_ptr[r].zx();
            CsrMatrix::from_foreign_rows(
                m.nrows(),
                m.ncols(),
                |r| match row_nnz {
                    Some(nnz) => start(r)..start(r) + nnz[r].zx(),
                    None => start(r)..start(r + 1),
                },
                symbolic.col_idx(),
                m.val(),
                |i| Some(i.zx() as u64),
            )
        }
    }
}
