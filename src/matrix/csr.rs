//! Validated host-side CSR matrices with 32-bit indices (WGSL has no 64-bit integers).

use crate::{Error, Result, Scalar};
use rayon::prelude::*;

/// A sparse matrix in compressed sparse row form whose invariants have been checked:
/// `row_ptr` starts at 0, never decreases and ends at `nnz`; every column index is below `ncols`;
/// column indices increase strictly within each row. Every GPU method builds from one of these.
///
/// Build one from CSR arrays ([`try_new`](Self::try_new)), triplets
/// ([`from_triplets`](Self::from_triplets)), a Matrix Market file
/// ([`io::read_matrix_market`](crate::matrix::io::read_matrix_market)), or another crate's
/// matrix (features `sprs`, `nalgebra-sparse`, `faer`):
///
/// ```
/// # #[cfg(all(feature = "sprs", feature = "nalgebra-sparse"))] {
/// use wgspmv::CsrMatrix;
/// let s: sprs::CsMat<f64> = sprs::CsMat::new((2, 3), vec![0, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0]);
/// let a = CsrMatrix::try_from(&s)?; // indices checked and narrowed to u32
/// let n = nalgebra_sparse::CsrMatrix::from(&a);
/// assert_eq!(CsrMatrix::try_from(&n)?, a);
/// # }
/// # Ok::<(), wgspmv::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct CsrMatrix<T> {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<u32>,
    col_idx: Vec<u32>,
    values: Vec<T>,
}

/// Row-length statistics that the methods use to choose their parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct RowStats {
    /// Rows of the matrix.
    pub nrows: usize,
    /// Columns of the matrix (the length of `x`).
    pub ncols: usize,
    /// Stored entries, explicit zeros included.
    pub nnz: usize,
    /// Mean stored entries per row (μ).
    pub mean: f64,
    /// Population variance of the row lengths.
    pub variance: f64,
    /// Stored entries in the shortest row.
    pub min_len: usize,
    /// Stored entries in the longest row.
    pub max_len: usize,
    /// Rows with no stored entry (their `y` is `β·y`).
    pub empty_rows: usize,
}

impl RowStats {
    /// Standard deviation of the row lengths.
    pub fn std_dev(&self) -> f64 {
        self.variance.sqrt()
    }
}

impl std::fmt::Display for RowStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}x{}, nnz {}, row length mean {:.2} sd {:.2} min {} max {}, {} empty rows",
            self.nrows,
            self.ncols,
            self.nnz,
            self.mean,
            self.std_dev(),
            self.min_len,
            self.max_len,
            self.empty_rows
        )
    }
}

/// Refuses counts that do not fit the GPU's 32-bit indices.
pub(crate) fn check_u32(what: &'static str, value: usize) -> Result<()> {
    if value as u64 > u32::MAX as u64 {
        return Err(Error::TooLargeForU32 {
            what,
            value: value as u64,
            max: u32::MAX as u64,
        });
    }
    Ok(())
}

/// `OutOfHostMemory` for `count` elements of `E`.
fn out_of_host_memory<E>(what: &'static str, count: usize) -> Error {
    Error::OutOfHostMemory {
        what,
        bytes: (count as u64).saturating_mul(std::mem::size_of::<E>() as u64),
    }
}

// Sizes that come from the input go through these, so that one the host cannot hold is an Err, not
// an abort.

/// Makes room for `additional` more elements of `v`, growing it geometrically like `push` does.
pub(crate) fn try_reserve<E>(v: &mut Vec<E>, additional: usize, what: &'static str) -> Result<()> {
    v.try_reserve(additional)
        .map_err(|_| out_of_host_memory::<E>(what, v.len().saturating_add(additional)))
}

/// An empty vector with room for exactly `n` elements.
pub(crate) fn try_with_capacity<E>(n: usize, what: &'static str) -> Result<Vec<E>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| out_of_host_memory::<E>(what, n))?;
    Ok(v)
}

/// `vec![value; n]`.
pub(crate) fn try_filled<E: Clone>(n: usize, value: E, what: &'static str) -> Result<Vec<E>> {
    let mut v = try_with_capacity(n, what)?;
    v.resize(n, value);
    Ok(v)
}

/// `v.push(item)`.
pub(crate) fn try_push<E>(v: &mut Vec<E>, item: E, what: &'static str) -> Result<()> {
    if v.len() == v.capacity() {
        try_reserve(v, 1, what)?;
    }
    v.push(item);
    Ok(())
}

impl<T: Scalar> CsrMatrix<T> {
    /// Builds a matrix from CSR arrays, checking every invariant; each violation is its own
    /// [`Error`] variant naming the offending position.
    pub fn try_new(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<u32>,
        col_idx: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self> {
        check_u32("nrows", nrows)?;
        check_u32("ncols", ncols)?;
        check_u32("nnz", col_idx.len())?;
        if row_ptr.len() != nrows + 1 {
            return Err(Error::LengthMismatch {
                array: "row_ptr",
                expected: nrows + 1,
                actual: row_ptr.len(),
            });
        }
        if values.len() != col_idx.len() {
            return Err(Error::LengthMismatch {
                array: "values",
                expected: col_idx.len(),
                actual: values.len(),
            });
        }
        if row_ptr[0] != 0 {
            return Err(Error::RowPtrStart(row_ptr[0]));
        }
        for i in 1..row_ptr.len() {
            if row_ptr[i] < row_ptr[i - 1] {
                return Err(Error::RowPtrNotMonotone {
                    index: i,
                    value: row_ptr[i],
                    prev: row_ptr[i - 1],
                });
            }
        }
        let last = row_ptr[nrows];
        if last as usize != col_idx.len() {
            return Err(Error::RowPtrEnd {
                last,
                nnz: col_idx.len(),
            });
        }
        // Rows are independent, so check them in parallel; report the first bad row.
        let bad = (0..nrows).into_par_iter().find_first(|&r| {
            let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            let cols = &col_idx[s..e];
            cols.iter().any(|&c| c as usize >= ncols) || cols.windows(2).any(|w| w[1] <= w[0])
        });
        if let Some(row) = bad {
            let (s, e) = (row_ptr[row] as usize, row_ptr[row + 1] as usize);
            for entry in s..e {
                let col = col_idx[entry];
                if col as usize >= ncols {
                    return Err(Error::ColumnOutOfRange {
                        row,
                        entry,
                        col,
                        ncols,
                    });
                }
                if entry > s && col <= col_idx[entry - 1] {
                    return Err(Error::ColumnsNotSorted {
                        row,
                        entry,
                        col,
                        prev: col_idx[entry - 1],
                    });
                }
            }
        }
        Ok(Self {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// [`from_triplets`](Self::from_triplets) from any iterator of `(row, col, value)`.
    pub fn from_triplet_iter(
        nrows: usize,
        ncols: usize,
        triplets: impl IntoIterator<Item = (usize, usize, T)>,
    ) -> Result<Self> {
        Self::from_triplets(nrows, ncols, triplets.into_iter().collect())
    }

    /// Builds a matrix from `(row, col, value)` triplets in any order (sorted in place);
    /// duplicates are summed (in f64, then rounded once).
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        mut triplets: Vec<(usize, usize, T)>,
    ) -> Result<Self> {
        check_u32("nrows", nrows)?;
        check_u32("ncols", ncols)?;
        if let Some((entry, &(row, col, _))) = triplets
            .iter()
            .enumerate()
            .find(|(_, &(r, c, _))| r >= nrows || c >= ncols)
        {
            return Err(Error::TripletOutOfRange {
                entry,
                row,
                col,
                nrows,
                ncols,
            });
        }
        // nrows alone sets the size of row_ptr: a few bytes of input can ask for gigabytes.
        let mut row_ptr = try_filled(nrows + 1, 0u32, "row_ptr")?;
        let mut col_idx = try_with_capacity(triplets.len(), "col_idx")?;
        let mut values = try_with_capacity(triplets.len(), "values")?;
        triplets.par_sort_by_key(|&(r, c, _)| (r, c));
        let mut i = 0;
        while i < triplets.len() {
            let (r, c, _) = triplets[i];
            let mut sum = 0.0f64;
            while i < triplets.len() && triplets[i].0 == r && triplets[i].1 == c {
                sum += triplets[i].2.to_f64();
                i += 1;
            }
            col_idx.push(c as u32);
            values.push(T::from_f64(sum));
            row_ptr[r + 1] += 1;
        }
        check_u32("nnz", col_idx.len())?;
        for r in 0..nrows {
            row_ptr[r + 1] += row_ptr[r];
        }
        Ok(Self {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Copies compressed rows held with another library's index types: `row(r)` is the range of
    /// row `r` in `cols` and `values`, `index` converts an index (`None` when negative). Rows
    /// whose columns are not increasing are sorted (some libraries allow that); a repeated column
    /// is still refused.
    #[cfg_attr(
        not(any(feature = "sprs", feature = "nalgebra-sparse", feature = "faer")),
        allow(dead_code)
    )]
    pub(crate) fn from_foreign_rows<I: Copy>(
        nrows: usize,
        ncols: usize,
        row: impl Fn(usize) -> std::ops::Range<usize>,
        cols: &[I],
        values: &[T],
        index: impl Fn(I) -> Option<u64>,
    ) -> Result<Self> {
        check_u32("nrows", nrows)?;
        check_u32("ncols", ncols)?;
        let nnz: usize = (0..nrows).map(|r| row(r).len()).sum();
        check_u32("nnz", nnz)?;
        let mut row_ptr = try_with_capacity(nrows + 1, "row_ptr")?;
        let mut col_idx = try_with_capacity(nnz, "col_idx")?;
        let mut vals = try_with_capacity(nnz, "values")?;
        row_ptr.push(0u32);
        let mut order: Vec<usize> = Vec::new();
        for r in 0..nrows {
            let range = row(r);
            let (Some(c), Some(v)) = (cols.get(range.clone()), values.get(range.clone())) else {
                return Err(Error::InvalidParameter {
                    name: "row range",
                    value: format!("row {r}: {range:?}"),
                    reason: format!(
                        "outside the {} stored entries",
                        cols.len().min(values.len())
                    ),
                });
            };
            let mut converted = Vec::with_capacity(c.len());
            for (k, &i) in c.iter().enumerate() {
                let col = match index(i) {
                    Some(col) if col <= u32::MAX as u64 => col as u32,
                    Some(col) => {
                        return Err(Error::TooLargeForU32 {
                            what: "column index",
                            value: col,
                            max: u32::MAX as u64,
                        })
                    }
                    None => {
                        return Err(Error::InvalidParameter {
                            name: "column index",
                            value: format!("entry {} (row {r})", range.start + k),
                            reason: "a negative index".into(),
                        })
                    }
                };
                converted.push(col);
            }
            if converted.windows(2).all(|w| w[0] < w[1]) {
                col_idx.extend_from_slice(&converted);
                vals.extend_from_slice(v);
            } else {
                order.clear();
                order.extend(0..converted.len());
                order.sort_by_key(|&k| converted[k]);
                col_idx.extend(order.iter().map(|&k| converted[k]));
                vals.extend(order.iter().map(|&k| v[k]));
            }
            row_ptr.push(col_idx.len() as u32);
        }
        Self::try_new(nrows, ncols, row_ptr, col_idx, vals)
    }

    /// An all-zero matrix with no stored entries.
    pub fn zeros(nrows: usize, ncols: usize) -> Result<Self> {
        check_u32("nrows", nrows)?;
        Self::try_new(
            nrows,
            ncols,
            try_filled(nrows + 1, 0, "row_ptr")?,
            Vec::new(),
            Vec::new(),
        )
    }

    /// Number of rows (the length of `y`).
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns (the length of `x`).
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
    /// `(nrows, ncols, nnz)`.
    pub fn shape(&self) -> (usize, usize, usize) {
        (self.nrows, self.ncols, self.nnz())
    }
    /// Row `r`'s entries are `row_ptr[r]..row_ptr[r + 1]` (`nrows + 1` offsets from 0).
    pub fn row_ptr(&self) -> &[u32] {
        &self.row_ptr
    }
    /// Column of each stored entry, strictly increasing within a row.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }
    /// Value of each stored entry, in the order of [`col_idx`](Self::col_idx).
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// Number of stored entries in row `r`.
    pub fn row_len(&self, r: usize) -> usize {
        (self.row_ptr[r + 1] - self.row_ptr[r]) as usize
    }
    /// Column indices and values of row `r`.
    pub fn row(&self, r: usize) -> (&[u32], &[T]) {
        let (s, e) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
        (&self.col_idx[s..e], &self.values[s..e])
    }

    /// Splits into `(nrows, ncols, row_ptr, col_idx, values)`.
    pub fn into_parts(self) -> (usize, usize, Vec<u32>, Vec<u32>, Vec<T>) {
        (
            self.nrows,
            self.ncols,
            self.row_ptr,
            self.col_idx,
            self.values,
        )
    }

    /// The same matrix with values converted to another scalar type.
    pub fn cast<U: Scalar>(&self) -> CsrMatrix<U> {
        CsrMatrix {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values: self
                .values
                .par_iter()
                .map(|v| U::from_f64(v.to_f64()))
                .collect(),
        }
    }

    /// The same sparsity pattern with new values (same length as `nnz`).
    pub fn with_values<U: Scalar>(&self, values: Vec<U>) -> Result<CsrMatrix<U>> {
        if values.len() != self.nnz() {
            return Err(Error::LengthMismatch {
                array: "values",
                expected: self.nnz(),
                actual: values.len(),
            });
        }
        Ok(CsrMatrix {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values,
        })
    }

    /// Aᵀ (`ncols` × `nrows`), each of its rows in order of column.
    pub fn transpose(&self) -> Result<CsrMatrix<T>> {
        Ok(self.transpose_with_sources()?.0)
    }

    /// Aᵀ and, for each of its entries, the entry of `self` it holds: a stable counting sort of
    /// the entries by column, the host twin of the transposition plans build on the GPU
    /// ([`PlanOptions::transposed`](crate::PlanOptions::transposed)), word for word.
    pub fn transpose_with_sources(&self) -> Result<(CsrMatrix<T>, Vec<u32>)> {
        let nnz = self.nnz();
        let mut row_ptr = try_filled(self.ncols + 1, 0u32, "transposed row pointers")?;
        for &c in &self.col_idx {
            row_ptr[c as usize + 1] += 1;
        }
        for c in 0..self.ncols {
            row_ptr[c + 1] += row_ptr[c];
        }
        let mut next = row_ptr.clone();
        let mut col_idx = try_filled(nnz, 0u32, "transposed column indices")?;
        let mut sources = try_filled(nnz, 0u32, "transposed entry sources")?;
        for r in 0..self.nrows {
            for e in self.row_ptr[r] as usize..self.row_ptr[r + 1] as usize {
                let at = &mut next[self.col_idx[e] as usize];
                col_idx[*at as usize] = r as u32;
                sources[*at as usize] = e as u32;
                *at += 1;
            }
        }
        let mut values = try_with_capacity(nnz, "transposed values")?;
        values.extend(sources.iter().map(|&e| self.values[e as usize]));
        let t = CsrMatrix {
            nrows: self.ncols,
            ncols: self.nrows,
            row_ptr,
            col_idx,
            values,
        };
        Ok((t, sources))
    }

    /// Refuses NaN and infinite values, naming the first one (row, column, entry).
    pub fn check_finite(&self) -> Result<()> {
        if let Some(entry) = self
            .values
            .par_iter()
            .position_first(|v| !v.to_f64().is_finite())
        {
            let row = self.row_ptr.partition_point(|&p| p as usize <= entry) - 1;
            return Err(Error::NonFinite {
                location: format!("entry {entry} (row {row}, column {})", self.col_idx[entry]),
                value: self.values[entry].to_f64(),
            });
        }
        Ok(())
    }

    /// Stored entries of the longest row (0 for a matrix without rows), in one parallel pass.
    pub(crate) fn longest_row(&self) -> usize {
        self.row_ptr
            .par_windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// Row-length statistics.
    pub fn row_stats(&self) -> RowStats {
        let lens = |r: usize| (self.row_ptr[r + 1] - self.row_ptr[r]) as usize;
        let (min_len, max_len, empty_rows) = (0..self.nrows)
            .into_par_iter()
            .map(|r| {
                let l = lens(r);
                (l, l, (l == 0) as usize)
            })
            .reduce(
                || (usize::MAX, 0, 0),
                |a, b| (a.0.min(b.0), a.1.max(b.1), a.2 + b.2),
            );
        let mean = if self.nrows == 0 {
            0.0
        } else {
            self.nnz() as f64 / self.nrows as f64
        };
        let variance = if self.nrows == 0 {
            0.0
        } else {
            (0..self.nrows)
                .into_par_iter()
                .map(|r| (lens(r) as f64 - mean).powi(2))
                .sum::<f64>()
                / self.nrows as f64
        };
        RowStats {
            nrows: self.nrows,
            ncols: self.ncols,
            nnz: self.nnz(),
            mean,
            variance,
            min_len: if self.nrows == 0 { 0 } else { min_len },
            max_len,
            empty_rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triplets_sort_and_sum_duplicates() {
        let m = CsrMatrix::<f64>::from_triplets(
            3,
            3,
            vec![(2, 0, 1.0), (0, 2, 2.0), (0, 1, 3.0), (0, 2, 4.0)],
        )
        .unwrap();
        assert_eq!(m.row_ptr(), &[0, 2, 2, 3]);
        assert_eq!(m.col_idx(), &[1, 2, 0]);
        assert_eq!(m.values(), &[3.0, 6.0, 1.0]);
    }

    #[test]
    fn stats_count_empty_rows() {
        let m = CsrMatrix::<f32>::try_new(
            4,
            5,
            vec![0, 0, 3, 3, 4],
            vec![0, 2, 4, 1],
            vec![1.0, 2.0, 3.0, 4.0],
        )
        .unwrap();
        let s = m.row_stats();
        assert_eq!((s.min_len, s.max_len, s.empty_rows), (0, 3, 2));
        assert_eq!(s.mean, 1.0);
        assert_eq!(s.variance, (1.0 + 4.0 + 1.0 + 0.0) / 4.0);
    }
}
