//! Host-side tests that need no GPU: CSR validation and construction, row statistics, Matrix Market
//! input and output (in memory, plain files, gzipped files), the f64 reference and its accuracy
//! check, and the suite's names and vectors.

use proptest::prelude::*;
use std::io::{Cursor, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use wgspmv::matrix::io::{
    read_matrix_market, read_matrix_market_from, read_vector, write_matrix_market, write_vector,
};
use wgspmv::testing::suite::random_vector;
use wgspmv::{reference, testing::SuiteClass, CsrMatrix, Error, Result, Scalar};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// `CsrMatrix::<f64>::try_new` with the arguments in the order they are read.
fn csr(
    nrows: usize,
    ncols: usize,
    row_ptr: &[u32],
    col_idx: &[u32],
    values: &[f64],
) -> Result<CsrMatrix<f64>> {
    CsrMatrix::try_new(
        nrows,
        ncols,
        row_ptr.to_vec(),
        col_idx.to_vec(),
        values.to_vec(),
    )
}

/// The error of `result`, panicking with the value if it unexpectedly succeeded.
fn err<T: std::fmt::Debug>(result: Result<T>) -> Error {
    match result {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e,
    }
}

/// The matrix as a dense row-major table of f64.
fn to_dense<T: Scalar>(m: &CsrMatrix<T>) -> Vec<Vec<f64>> {
    let mut d = vec![vec![0.0; m.ncols()]; m.nrows()];
    for (r, row) in d.iter_mut().enumerate() {
        let (cols, vals) = m.row(r);
        for (&c, v) in cols.iter().zip(vals) {
            row[c as usize] += v.to_f64();
        }
    }
    d
}

/// `dense · x` in f64.
fn dense_matvec(dense: &[Vec<f64>], x: &[f64]) -> Vec<f64> {
    dense
        .iter()
        .map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum())
        .collect()
}

/// Asserts two f64 slices agree within `tol` (relative to magnitude, absolute near zero).
fn assert_close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

/// A scratch directory under the system temp dir, unique per process and call, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("wgspmv-csr_io-{}-{label}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `text` as a plain file and returns its path.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Writes `text` gzipped and returns its path.
    fn write_gz(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&p).unwrap(),
            flate2::Compression::default(),
        );
        enc.write_all(text.as_bytes()).unwrap();
        enc.finish().unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reads Matrix Market text from memory.
fn mm<T: Scalar>(text: &str) -> Result<CsrMatrix<T>> {
    read_matrix_market_from(Cursor::new(text.to_string()), "mem.mtx")
}

/// The three ways of reading the same text: from memory, from a plain file, from a gzipped file.
fn mm_all_ways<T: Scalar>(text: &str) -> Vec<(&'static str, Result<CsrMatrix<T>>)> {
    let dir = TempDir::new("mm");
    vec![
        ("memory", mm(text)),
        ("file", read_matrix_market(dir.write("m.mtx", text))),
        (
            "gzip file",
            read_matrix_market(dir.write_gz("m.mtx.gz", text)),
        ),
    ]
}

/// Reads `text` all three ways, asserts they agree, and returns the matrix.
fn read_mm<T: Scalar>(text: &str) -> CsrMatrix<T> {
    let mut results = mm_all_ways::<T>(text).into_iter();
    let (_, first) = results.next().unwrap();
    let m = first.unwrap_or_else(|e| panic!("memory read failed: {e}"));
    for (how, r) in results {
        let other = r.unwrap_or_else(|e| panic!("{how} read failed: {e}"));
        assert_eq!(other, m, "{how} read differs from the in-memory read");
    }
    m
}

/// Asserts that every way of reading `text` fails with `Error::MatrixMarket` at `line` and a
/// message containing `needle`. Errors found at end of file name the line after the last one.
fn assert_mm_error(text: &str, line: usize, needle: &str) {
    for (how, r) in mm_all_ways::<f64>(text) {
        match err(r) {
            Error::MatrixMarket {
                line: l, message, ..
            } => {
                assert_eq!(l, line, "{how}: wrong line for '{message}'");
                assert!(
                    message.contains(needle),
                    "{how}: message '{message}' lacks '{needle}'"
                );
            }
            other => panic!("{how}: expected Error::MatrixMarket, got {other:?}"),
        }
    }
}

/// Asserts that every way of reading `text` fails with `Error::UnsupportedMatrixMarket { what }`.
fn assert_mm_unsupported(text: &str, what: &str) {
    for (how, r) in mm_all_ways::<f64>(text) {
        let e = err(r);
        assert!(
            matches!(&e, Error::UnsupportedMatrixMarket { what: w, .. } if w == what),
            "{how}: {e:?}"
        );
    }
}

/// A coordinate header for `field` and `symmetry`.
fn coord(field: &str, symmetry: &str, body: &str) -> String {
    format!("%%MatrixMarket matrix coordinate {field} {symmetry}\n{body}")
}

/// Asserts the bit patterns of two vectors agree (so -0.0 and NaN compare exactly).
fn assert_bits_eq<T: Scalar>(a: &[T], b: &[T]) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(
            bytemuck::bytes_of(x),
            bytemuck::bytes_of(y),
            "element {i}: {x} vs {y}"
        );
    }
}

/// Writes `v` with `write_vector`, reads it back, and asserts the round trip is bit-exact.
fn vector_round_trip<T: Scalar>(v: &[T]) {
    let dir = TempDir::new("vec");
    let p = dir.path("v.mtx");
    write_vector(&p, v).unwrap();
    assert_bits_eq(&read_vector::<T>(&p).unwrap(), v);
}

/// Writes `m` with `write_matrix_market`, reads it back (plain and gzipped), asserts equality.
fn matrix_round_trip<T: Scalar>(m: &CsrMatrix<T>) {
    let dir = TempDir::new("mat");
    let p = dir.path("m.mtx");
    write_matrix_market(&p, m).unwrap();
    let back = read_matrix_market::<T>(&p).unwrap();
    assert_eq!(back.row_ptr(), m.row_ptr());
    assert_eq!(back.col_idx(), m.col_idx());
    assert_bits_eq(back.values(), m.values());
    let gz = dir.write_gz("m.mtx.gz", &std::fs::read_to_string(&p).unwrap());
    assert_eq!(&read_matrix_market::<T>(&gz).unwrap(), m);
}

/// A vector file's text read back through `read_vector` (which only takes paths).
fn read_vector_text(text: &str) -> Result<Vec<f64>> {
    let dir = TempDir::new("rv");
    read_vector(dir.write("v.mtx", text))
}

// ---------------------------------------------------------------------------------------------
// 1. CsrMatrix::try_new
// ---------------------------------------------------------------------------------------------

/// row_ptr must have nrows + 1 entries.
#[test]
fn try_new_rejects_wrong_row_ptr_length() {
    let e = err(csr(3, 3, &[0, 0, 0], &[], &[]));
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                array: "row_ptr",
                expected: 4,
                actual: 3
            }
        ),
        "{e:?}"
    );
}

/// values and col_idx must have the same length.
#[test]
fn try_new_rejects_values_length_mismatch() {
    let e = err(csr(1, 3, &[0, 2], &[0, 1], &[1.0]));
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                array: "values",
                expected: 2,
                actual: 1
            }
        ),
        "{e:?}"
    );
}

/// row_ptr[0] must be 0.
#[test]
fn try_new_rejects_nonzero_row_ptr_start() {
    let e = err(csr(2, 3, &[1, 1, 2], &[0, 1], &[1.0, 2.0]));
    assert!(matches!(e, Error::RowPtrStart(1)), "{e:?}");
}

/// A decreasing row_ptr is reported at the index where it drops.
#[test]
fn try_new_rejects_non_monotone_row_ptr() {
    let e = err(csr(3, 3, &[0, 2, 1, 3], &[0, 1, 2], &[1.0, 2.0, 3.0]));
    assert!(
        matches!(
            e,
            Error::RowPtrNotMonotone {
                index: 2,
                value: 1,
                prev: 2
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("row_ptr[2] = 1 < row_ptr[1] = 2"),
        "{e}"
    );
}

/// row_ptr[nrows] must equal the number of stored entries.
#[test]
fn try_new_rejects_row_ptr_end_mismatch() {
    let e = err(csr(2, 3, &[0, 1, 2], &[0, 1, 2], &[1.0, 2.0, 3.0]));
    assert!(matches!(e, Error::RowPtrEnd { last: 2, nnz: 3 }), "{e:?}");
}

/// A column index >= ncols is reported with its row and entry.
#[test]
fn try_new_rejects_column_out_of_range() {
    let e = err(csr(3, 3, &[0, 1, 1, 3], &[0, 1, 3], &[1.0, 2.0, 3.0]));
    assert!(
        matches!(
            e,
            Error::ColumnOutOfRange {
                row: 2,
                entry: 2,
                col: 3,
                ncols: 3
            }
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(msg.contains("row 2") && msg.contains("entry 2"), "{msg}");
}

/// Columns that go down within a row are reported with their row and entry.
#[test]
fn try_new_rejects_unsorted_columns() {
    let e = err(csr(2, 3, &[0, 2, 4], &[0, 2, 2, 1], &[1.0; 4]));
    assert!(
        matches!(
            e,
            Error::ColumnsNotSorted {
                row: 1,
                entry: 3,
                col: 1,
                prev: 2
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("row 1"), "{e}");
}

/// A repeated column within a row is reported like an unsorted one.
#[test]
fn try_new_rejects_duplicate_columns() {
    let e = err(csr(3, 3, &[0, 1, 1, 3], &[0, 2, 2], &[1.0; 3]));
    assert!(
        matches!(
            e,
            Error::ColumnsNotSorted {
                row: 2,
                entry: 2,
                col: 2,
                prev: 2
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("row 2"), "{e}");
}

/// With several bad rows (checked in parallel) the first one is reported, deterministically.
#[test]
fn try_new_reports_first_bad_row() {
    let n = 10_000usize;
    let row_ptr: Vec<u32> = (0..=n as u32).map(|r| 2 * r).collect();
    let mut col_idx: Vec<u32> = (0..n).flat_map(|_| [0u32, 1]).collect();
    for bad_row in [6000, 1234, 9000] {
        col_idx[2 * bad_row + 1] = 0;
    }
    let e = err(CsrMatrix::try_new(
        n,
        2,
        row_ptr,
        col_idx,
        vec![1.0f32; 2 * n],
    ));
    assert!(
        matches!(
            e,
            Error::ColumnsNotSorted {
                row: 1234,
                entry: 2469,
                col: 0,
                prev: 0
            }
        ),
        "{e:?}"
    );
}

/// Dimensions beyond the 32-bit index range are refused before anything is allocated.
#[test]
fn try_new_rejects_dimensions_over_u32() {
    let big = u32::MAX as usize + 1;
    let e = err(CsrMatrix::<f32>::try_new(big, 1, vec![], vec![], vec![]));
    assert!(
        matches!(e, Error::TooLargeForU32 { what: "nrows", value, max } if value == big as u64 && max == u32::MAX as u64),
        "{e:?}"
    );
    let e = err(CsrMatrix::<f32>::try_new(0, big, vec![], vec![], vec![]));
    assert!(
        matches!(e, Error::TooLargeForU32 { what: "ncols", .. }),
        "{e:?}"
    );
    // The limit itself is allowed.
    let m = CsrMatrix::<f32>::try_new(0, u32::MAX as usize, vec![0], vec![], vec![]).unwrap();
    assert_eq!(m.ncols(), u32::MAX as usize);
}

/// Empty rows (anywhere, including first and last) and empty matrices are valid.
#[test]
fn try_new_accepts_empty_rows() {
    let m = csr(5, 3, &[0, 0, 2, 2, 3, 3], &[0, 2, 1], &[1.0, 2.0, 3.0]).unwrap();
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (5, 3, 3));
    assert_eq!(
        (0..5).map(|r| m.row_len(r)).collect::<Vec<_>>(),
        [0, 2, 0, 1, 0]
    );
    assert_eq!(m.row(1), (&[0u32, 2][..], &[1.0, 2.0][..]));
    assert_eq!(m.row(4), (&[][..], &[][..]));
    assert_eq!(csr(0, 0, &[0], &[], &[]).unwrap().nnz(), 0);
    assert_eq!(CsrMatrix::<f64>::zeros(4, 7).unwrap().row_ptr(), &[0; 5]);
}

// ---------------------------------------------------------------------------------------------
// 2. CsrMatrix::from_triplets
// ---------------------------------------------------------------------------------------------

/// Triplets in any order come out sorted by (row, column) with duplicates summed.
#[test]
fn from_triplets_sorts_and_sums_duplicates() {
    let t = vec![
        (2, 1, 1.0),
        (0, 2, 2.0),
        (2, 0, 5.0),
        (0, 0, 3.0),
        (0, 2, 4.0),
        (2, 1, -0.5),
    ];
    let m = CsrMatrix::<f64>::from_triplets(3, 3, t).unwrap();
    assert_eq!(m.row_ptr(), &[0, 2, 2, 4]);
    assert_eq!(m.col_idx(), &[0, 2, 0, 1]);
    assert_eq!(m.values(), &[3.0, 6.0, 5.0, 0.5]);
}

/// A triplet outside the dimensions is refused, naming the first offending entry.
#[test]
fn from_triplets_rejects_out_of_range() {
    let t = vec![(0, 0, 1.0), (1, 3, 2.0), (2, 0, 3.0)];
    let e = err(CsrMatrix::<f64>::from_triplets(2, 3, t));
    assert!(
        matches!(
            e,
            Error::TripletOutOfRange {
                entry: 1,
                row: 1,
                col: 3,
                nrows: 2,
                ncols: 3
            }
        ),
        "{e:?}"
    );
    let e = err(CsrMatrix::<f32>::from_triplets(
        2,
        3,
        vec![(0, 0, 1.0), (2, 0, 1.0)],
    ));
    assert!(
        matches!(
            e,
            Error::TripletOutOfRange {
                entry: 1,
                row: 2,
                col: 0,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("triplet 1"), "{e}");
}

/// No triplets gives an all-empty matrix of the stated size.
#[test]
fn from_triplets_handles_empty_input() {
    let m = CsrMatrix::<f64>::from_triplets(3, 4, vec![]).unwrap();
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (3, 4, 0));
    assert_eq!(m.row_ptr(), &[0, 0, 0, 0]);
    assert_eq!(
        CsrMatrix::<f64>::from_triplets(0, 0, vec![])
            .unwrap()
            .row_ptr(),
        &[0]
    );
}

/// Rows without triplets (leading, inner, trailing) come out empty.
#[test]
fn from_triplets_keeps_empty_rows() {
    let m = CsrMatrix::<f32>::from_triplets(6, 2, vec![(4, 1, 2.0), (1, 0, 1.0)]).unwrap();
    assert_eq!(m.row_ptr(), &[0, 0, 1, 1, 1, 2, 2]);
    assert_eq!(m.col_idx(), &[0, 1]);
    assert_eq!(m.values(), &[1.0, 2.0]);
}

// ---------------------------------------------------------------------------------------------
// 3. Property tests: from_triplets and the reference products against dense arithmetic
// ---------------------------------------------------------------------------------------------

/// Dimensions up to 20x20 and up to 60 triplets with nonzero values in ±[0.01, 10).
fn triplet_case() -> impl Strategy<Value = (usize, usize, Vec<(usize, usize, f64)>)> {
    (1usize..=20, 1usize..=20).prop_flat_map(|(m, n)| {
        let value = prop_oneof![-10.0f64..-0.01, 0.01f64..10.0];
        (
            Just(m),
            Just(n),
            prop::collection::vec((0..m, 0..n, value), 0..=60),
        )
    })
}

proptest! {
    /// from_triplets is a valid CSR matrix equal to the dense sum of the triplets.
    #[test]
    fn prop_from_triplets_matches_dense((m, n, t) in triplet_case()) {
        let mut expected = vec![vec![0.0f64; n]; m];
        for &(r, c, v) in &t {
            expected[r][c] += v;
        }
        let a = CsrMatrix::<f64>::from_triplets(m, n, t.clone()).unwrap();
        let distinct: std::collections::BTreeSet<_> = t.iter().map(|&(r, c, _)| (r, c)).collect();
        prop_assert_eq!(a.nnz(), distinct.len());
        let (nr, nc, rp, ci, vals) = a.clone().into_parts();
        prop_assert_eq!(CsrMatrix::try_new(nr, nc, rp, ci, vals).unwrap(), a.clone());
        let got = to_dense(&a);
        for r in 0..m {
            assert_close(&got[r], &expected[r], 1e-12, &format!("row {r}"));
        }
    }

    /// spmv_seq, spmv_par and a dense product agree.
    #[test]
    fn prop_reference_spmv_matches_dense((m, n, t) in triplet_case(), seed in any::<u64>()) {
        let a = CsrMatrix::<f64>::from_triplets(m, n, t).unwrap();
        let x = random_vector(n, seed);
        let seq = reference::spmv_seq(&a, &x).unwrap();
        let par = reference::spmv_par(&a, &x).unwrap();
        prop_assert_eq!(&seq, &par);
        assert_close(&seq, &dense_matvec(&to_dense(&a), &x), 1e-12, "spmv vs dense");
    }

    /// Arbitrary lines after a valid header never make the reader panic.
    #[test]
    fn prop_matrix_market_never_panics(lines in prop::collection::vec(
        prop::collection::vec(prop::sample::select(vec!["0", "1", "2", "3", "-1", "x", "1.5", "nan", "%", "", "1e3"]), 0..5),
        0..8,
    ), header in 0usize..4) {
        let headers = ["coordinate real general", "coordinate pattern symmetric", "coordinate integer skew-symmetric", "array real general"];
        let mut text = format!("%%MatrixMarket matrix {}\n", headers[header]);
        for l in lines {
            text.push_str(&l.join(" "));
            text.push('\n');
        }
        let _ = mm::<f64>(&text);
    }
}

/// The reference products refuse an x of the wrong length.
#[test]
fn reference_spmv_rejects_wrong_x_length() {
    let a = CsrMatrix::<f64>::zeros(2, 3).unwrap();
    for r in [
        reference::spmv_seq(&a, &[1.0; 2]),
        reference::spmv_par(&a, &[1.0; 4]),
    ] {
        let e = err(r);
        assert!(
            matches!(
                e,
                Error::DimensionMismatch {
                    what: "x",
                    expected: 3,
                    ..
                }
            ),
            "{e:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. check_finite
// ---------------------------------------------------------------------------------------------

/// A 4x3 matrix with an empty row 1 and `values` at entries (0,0) (0,2) (2,1) (3,0) (3,2).
fn finite_case<T: Scalar>(values: [f64; 5]) -> CsrMatrix<T> {
    let vals = values.iter().map(|&v| T::from_f64(v)).collect();
    CsrMatrix::try_new(4, 3, vec![0, 2, 2, 3, 5], vec![0, 2, 1, 0, 2], vals).unwrap()
}

/// Finite matrices pass; the first NaN or infinity is reported with its entry, row and column.
#[test]
fn check_finite_reports_first_non_finite() {
    finite_case::<f64>([1.0, -2.0, f64::MAX, 0.0, 1e-310])
        .check_finite()
        .unwrap();
    let e = err(finite_case::<f64>([1.0, 2.0, f64::NAN, f64::INFINITY, 3.0]).check_finite());
    assert!(
        matches!(&e, Error::NonFinite { location, value } if value.is_nan() && location == "entry 2 (row 2, column 1)"),
        "{e:?}"
    );
    let e = err(finite_case::<f32>([1.0, 2.0, 3.0, 4.0, f64::NEG_INFINITY]).check_finite());
    assert!(
        matches!(&e, Error::NonFinite { location, value } if *value == f64::NEG_INFINITY && location == "entry 4 (row 3, column 2)"),
        "{e:?}"
    );
    // An f64 value that overflows f32 becomes infinite and is caught there too.
    let e = err(finite_case::<f32>([1e300, 2.0, 3.0, 4.0, 5.0]).check_finite());
    assert!(
        matches!(&e, Error::NonFinite { location, .. } if location.contains("row 0, column 0")),
        "{e:?}"
    );
    assert!(e.to_string().contains("row 0"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// 5. row_stats
// ---------------------------------------------------------------------------------------------

/// Mean, population variance, min, max and empty rows of hand-counted row lengths.
#[test]
fn row_stats_of_hand_made_matrix() {
    // Row lengths 2, 0, 3, 0, 1: mean 1.2, variance (0.64 + 1.44 + 3.24 + 1.44 + 0.04) / 5 = 1.36.
    let m = csr(5, 4, &[0, 2, 2, 5, 5, 6], &[0, 3, 0, 1, 2, 3], &[1.0; 6]).unwrap();
    let s = m.row_stats();
    assert_eq!((s.nrows, s.ncols, s.nnz), (5, 4, 6));
    assert!((s.mean - 1.2).abs() < 1e-12, "{s}");
    assert!((s.variance - 1.36).abs() < 1e-12, "{s}");
    assert!((s.std_dev() - 1.36f64.sqrt()).abs() < 1e-12, "{s}");
    assert_eq!((s.min_len, s.max_len, s.empty_rows), (0, 3, 2));
    assert!(s.to_string().contains("2 empty rows"), "{s}");

    let full = csr(2, 2, &[0, 1, 3], &[1, 0, 1], &[1.0; 3])
        .unwrap()
        .row_stats();
    assert_eq!((full.min_len, full.max_len, full.empty_rows), (1, 2, 0));
    let none = CsrMatrix::<f64>::zeros(0, 0).unwrap().row_stats();
    assert_eq!(
        (
            none.mean,
            none.variance,
            none.min_len,
            none.max_len,
            none.empty_rows
        ),
        (0.0, 0.0, 0, 0, 0)
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Matrix Market reading (each through memory, a plain file and a gzipped file)
// ---------------------------------------------------------------------------------------------

/// coordinate real general, with exponents and signs.
#[test]
fn mm_reads_real_general() {
    let m = read_mm::<f64>(&coord(
        "real",
        "general",
        "2 3 3\n1 1 1.5\n2 3 -2.5e-1\n1 2 3\n",
    ));
    assert_eq!(to_dense(&m), [[1.5, 3.0, 0.0], [0.0, 0.0, -0.25]]);
}

/// coordinate integer entries become exact floats.
#[test]
fn mm_reads_integer() {
    let m = read_mm::<f32>(&coord(
        "integer",
        "general",
        "2 2 2\n1 2 -7\n2 1 16777216\n",
    ));
    assert_eq!(to_dense(&m), [[0.0, -7.0], [16777216.0, 0.0]]);
}

/// coordinate pattern entries become 1.0.
#[test]
fn mm_reads_pattern_as_ones() {
    let m = read_mm::<f64>(&coord("pattern", "general", "3 2 3\n1 1\n3 2\n2 1\n"));
    assert_eq!(to_dense(&m), [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]);
}

/// symmetric: off-diagonal entries are mirrored, the diagonal is stored once.
#[test]
fn mm_expands_symmetric_without_doubling_diagonal() {
    let m = read_mm::<f64>(&coord("real", "symmetric", "3 3 3\n1 1 4\n3 1 2\n2 2 5\n"));
    assert_eq!(
        to_dense(&m),
        [[4.0, 0.0, 2.0], [0.0, 5.0, 0.0], [2.0, 0.0, 0.0]]
    );
    assert_eq!(m.nnz(), 4);
    let p = read_mm::<f64>(&coord("pattern", "symmetric", "2 2 1\n2 1\n"));
    assert_eq!(to_dense(&p), [[0.0, 1.0], [1.0, 0.0]]);
}

/// skew-symmetric: off-diagonal entries are mirrored with the opposite sign.
#[test]
fn mm_expands_skew_symmetric_with_negation() {
    let m = read_mm::<f64>(&coord("real", "skew-symmetric", "3 3 2\n2 1 3\n3 2 -1.5\n"));
    assert_eq!(
        to_dense(&m),
        [[0.0, -3.0, 0.0], [3.0, 0.0, 1.5], [0.0, -1.5, 0.0]]
    );
}

/// Comment lines (also indented) and blank lines are skipped anywhere after the header.
#[test]
fn mm_skips_comments_and_blank_lines() {
    let text = "%%MatrixMarket matrix coordinate real general\n% a comment\n\n   % indented\n2 2 2\n\n1 1 1\n% between\n  \n2 2 2\n\n% trailing\n";
    assert_eq!(to_dense(&read_mm::<f64>(text)), [[1.0, 0.0], [0.0, 2.0]]);
    // Windows line endings as well.
    assert_eq!(
        to_dense(&read_mm::<f64>(&text.replace('\n', "\r\n"))),
        [[1.0, 0.0], [0.0, 2.0]]
    );
}

/// Header keywords are matched regardless of case.
#[test]
fn mm_header_is_case_insensitive() {
    let upper = read_mm::<f64>("%%MATRIXMARKET MATRIX COORDINATE REAL SYMMETRIC\n2 2 1\n2 1 3\n");
    let mixed = read_mm::<f64>("%%matrixMarket Matrix Coordinate Real Symmetric\n2 2 1\n2 1 3\n");
    assert_eq!(upper, mixed);
    assert_eq!(to_dense(&upper), [[0.0, 3.0], [3.0, 0.0]]);
}

/// A gzipped file (detected by magic bytes, not name) reads the same as the plain text.
#[test]
fn mm_gzipped_file_reads_identically() {
    let dir = TempDir::new("gz");
    let text = coord(
        "real",
        "general",
        "3 3 4\n1 1 0.1\n3 3 1e-300\n2 1 -7\n1 3 2\n",
    );
    let plain = read_matrix_market::<f64>(dir.write("a.mtx", &text)).unwrap();
    let gz = read_matrix_market::<f64>(dir.write_gz("a.mtx.gz", &text)).unwrap();
    let gz_no_suffix = read_matrix_market::<f64>(dir.write_gz("b.mtx", &text)).unwrap();
    assert_eq!(gz, plain);
    assert_eq!(gz_no_suffix, plain);
    assert_eq!(mm::<f64>(&text).unwrap(), plain);
    assert_eq!(plain.values(), &[0.1, 2.0, -7.0, 1e-300]);
}

/// Repeated coordinates are summed (also where symmetric mirroring makes them collide).
#[test]
fn mm_sums_duplicates() {
    let m = read_mm::<f64>(&coord(
        "real",
        "general",
        "2 2 4\n1 2 1\n2 2 3\n1 2 0.5\n1 2 -2\n",
    ));
    assert_eq!(to_dense(&m), [[0.0, -0.5], [0.0, 3.0]]);
    assert_eq!(m.nnz(), 2);
    let s = read_mm::<f64>(&coord("real", "symmetric", "2 2 2\n2 1 1\n2 1 2\n"));
    assert_eq!(to_dense(&s), [[0.0, 3.0], [3.0, 0.0]]);
}

// ---------------------------------------------------------------------------------------------
// 7. Matrix Market errors (each with its line number; none may panic)
// ---------------------------------------------------------------------------------------------

/// An empty file fails on line 1.
#[test]
fn mm_error_empty_file() {
    assert_mm_error("", 1, "empty");
}

/// A first line that is not a Matrix Market banner fails on line 1.
#[test]
fn mm_error_bad_header() {
    assert_mm_error("2 2 1\n1 1 1\n", 1, "bad header");
    assert_mm_error(
        "%MatrixMarket matrix coordinate real general\n2 2 0\n",
        1,
        "bad header",
    );
    assert_mm_error(
        "%%MatrixMarket vector coordinate real general\n2 2 0\n",
        1,
        "bad header",
    );
    assert_mm_error(
        "%%MatrixMarket matrix coordinate real\n2 2 0\n",
        1,
        "bad header",
    );
    assert_mm_error(
        "\n%%MatrixMarket matrix coordinate real general\n2 2 0\n",
        1,
        "bad header",
    );
    assert_mm_error(
        "%%MatrixMarket matrix sparse real general\n2 2 0\n",
        1,
        "unknown layout",
    );
    assert_mm_error(
        "%%MatrixMarket matrix coordinate real diagonal\n2 2 0\n",
        1,
        "unknown symmetry",
    );
    assert_mm_error(
        "%%MatrixMarket matrix array pattern general\n2 2\n",
        1,
        "array pattern",
    );
}

/// complex and hermitian files are refused as unsupported, not as malformed.
#[test]
fn mm_error_complex_and_hermitian_unsupported() {
    assert_mm_unsupported(&coord("complex", "general", "1 1 1\n1 1 1 0\n"), "complex");
    assert_mm_unsupported(&coord("real", "hermitian", "1 1 1\n1 1 1\n"), "hermitian");
    assert_mm_unsupported(
        &coord("Complex", "Hermitian", "1 1 1\n1 1 1 0\n"),
        "complex",
    );
}

/// An unknown field fails on line 1, naming the field.
#[test]
fn mm_error_unknown_field() {
    assert_mm_error(
        &coord("quaternion", "general", "1 1 0\n"),
        1,
        "unknown field 'quaternion'",
    );
}

/// A file with only a header and comments fails past its last line.
#[test]
fn mm_error_missing_size_line() {
    assert_mm_error(&coord("real", "general", ""), 2, "missing size line");
    assert_mm_error(
        &coord("real", "general", "% only\n\n% comments\n"),
        5,
        "missing size line",
    );
}

/// A size line with too few or too many numbers, or a non-number, fails on that line.
#[test]
fn mm_error_malformed_size_line() {
    assert_mm_error(
        &coord("real", "general", "% c\n2 2\n"),
        3,
        "missing entry count",
    );
    assert_mm_error(
        &coord("real", "general", "2 2 1 1\n1 1 1\n"),
        2,
        "unexpected",
    );
    assert_mm_error(
        &coord("real", "general", "2 two 1\n1 1 1\n"),
        2,
        "column count",
    );
    assert_mm_error(&coord("real", "general", "-2 2 1\n1 1 1\n"), 2, "row count");
}

/// A file that ends before the promised entries fails past its last line.
#[test]
fn mm_error_too_few_entries() {
    assert_mm_error(
        &coord("real", "general", "2 2 3\n1 1 1\n2 2 1\n"),
        5,
        "file ends after 2 entries",
    );
    assert_mm_error(
        &coord("real", "general", "2 2 1\n% nothing\n"),
        4,
        "file ends after 0 entries",
    );
}

/// An entry beyond the promised count fails on its line.
#[test]
fn mm_error_too_many_entries() {
    assert_mm_error(
        &coord("real", "general", "2 2 1\n1 1 1\n% c\n2 2 1\n"),
        5,
        "more entries",
    );
}

/// Indices are 1-based: 0 and anything beyond the size fail on the entry's line.
#[test]
fn mm_error_index_out_of_range() {
    assert_mm_error(
        &coord("real", "general", "2 3 2\n1 1 1\n0 1 1\n"),
        4,
        "outside",
    );
    assert_mm_error(
        &coord("real", "general", "2 3 2\n1 1 1\n3 1 1\n"),
        4,
        "outside",
    );
    assert_mm_error(&coord("real", "general", "2 3 1\n1 0 1\n"), 3, "outside");
    assert_mm_error(
        &coord("real", "general", "2 3 1\n% c\n2 4 1\n"),
        4,
        "outside",
    );
    assert_mm_error(&coord("real", "general", "2 3 1\n-1 1 1\n"), 3, "row index");
}

/// A value that is not a number of the declared field fails on the entry's line.
#[test]
fn mm_error_bad_value() {
    assert_mm_error(
        &coord("real", "general", "2 2 2\n1 1 1\n2 2 abc\n"),
        4,
        "'abc' is not a valid real value",
    );
    assert_mm_error(
        &coord("integer", "general", "2 2 1\n1 1 1.5\n"),
        3,
        "integer value",
    );
    assert_mm_error(
        &coord("real", "general", "2 2 1\n1 1\n"),
        3,
        "missing real value",
    );
    assert_mm_error(
        &coord("real", "general", "2 2 1\n1 1 1 2\n"),
        3,
        "unexpected",
    );
    assert_mm_error(
        &coord("pattern", "general", "2 2 1\n1 1 1 2\n"),
        3,
        "unexpected",
    );
}

/// Real pattern files sometimes list a value anyway (SuiteSparse Ragusa16): one trailing token is
/// skipped and the entry counts 1.0; a second one is refused.
#[test]
fn mm_pattern_entry_tolerates_one_trailing_value() {
    let m = read_mm::<f64>(&coord("pattern", "general", "2 2 1\n1 1 7\n"));
    assert_eq!(m.values(), &[1.0]);
    assert_mm_error(
        &coord("pattern", "general", "2 2 1\n1 1 7 8\n"),
        3,
        "unexpected",
    );
}

/// symmetric and skew-symmetric files must be square; the size line is blamed.
#[test]
fn mm_error_non_square_symmetric() {
    assert_mm_error(
        &coord("real", "symmetric", "% c\n2 3 1\n1 1 1\n"),
        3,
        "must be square",
    );
    assert_mm_error(
        &coord("real", "skew-symmetric", "3 2 0\n"),
        2,
        "must be square",
    );
}

/// Regression: a dense `array` matrix (which SciPy's mmread reads) was refused on line 1. It is
/// read column-major, its symmetric triangles expanded, its nonzero values stored (NaN included,
/// zeros of either sign left out), from memory, a plain file and a gzipped file alike.
#[test]
fn mm_reads_array_layout() {
    let text = "%%MatrixMarket matrix array real general\n% c\n2 3\n1\n0\n-0\n-2.5\nnan\n1e400\n";
    // NaN equals nothing, so the three ways are compared without it, and read once with it.
    read_mm::<f64>(&text.replace("nan", "7"));
    let general = mm::<f64>(text).unwrap();
    let d = to_dense(&general);
    assert_eq!((d[0][0], d[0][1], d[1][0]), (1.0, 0.0, 0.0));
    assert_eq!((d[1][1], d[1][2]), (-2.5, f64::INFINITY));
    assert!(d[0][2].is_nan());
    assert_eq!(
        (general.row(0).0, general.row(1).0),
        (&[0, 2][..], &[1, 2][..])
    );
    assert_eq!(general.nnz(), 4);
    let symmetric =
        read_mm::<f32>("%%MatrixMarket matrix array integer symmetric\n3 3\n1\n2\n0\n4\n5\n6\n");
    assert_eq!(
        to_dense(&symmetric),
        [[1.0, 2.0, 0.0], [2.0, 4.0, 5.0], [0.0, 5.0, 6.0]]
    );
    let skew =
        read_mm::<f64>("%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n0x1p1\n3\n");
    assert_eq!(
        to_dense(&skew),
        [[0.0, -1.0, -2.0], [1.0, 0.0, -3.0], [2.0, 3.0, 0.0]]
    );
    // The same matrix as a coordinate file reads the same.
    let coordinate = read_mm::<f64>(&coord(
        "real",
        "skew-symmetric",
        "3 3 3\n2 1 1\n3 1 2\n3 2 3\n",
    ));
    assert_eq!(skew, coordinate);
    assert_mm_error(
        "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n",
        6,
        "file ends after 3 of the 4 values",
    );
}

/// A missing file is an Io error naming the path.
#[test]
fn mm_error_missing_file_is_io() {
    let dir = TempDir::new("missing");
    let p = dir.path("does-not-exist.mtx");
    let e = err(read_matrix_market::<f64>(&p));
    assert!(matches!(&e, Error::Io { path, .. } if path == &p), "{e:?}");
    let e = err(read_vector::<f64>(&p));
    assert!(matches!(&e, Error::Io { path, .. } if path == &p), "{e:?}");
}

/// Reads raw bytes from memory, from a plain file and from a gzipped file.
fn mm_bytes_all_ways(bytes: &[u8]) -> Vec<(&'static str, Result<CsrMatrix<f64>>)> {
    let dir = TempDir::new("bytes");
    let (plain, gz) = (dir.path("m.mtx"), dir.path("m.mtx.gz"));
    std::fs::write(&plain, bytes).unwrap();
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap();
    vec![
        (
            "memory",
            read_matrix_market_from(Cursor::new(bytes.to_vec()), "mem.mtx"),
        ),
        ("file", read_matrix_market(&plain)),
        ("gzip file", read_matrix_market(&gz)),
    ]
}

/// Regression: an error quoted whole tokens and lines, so a 1 GiB junk line made a 1 GiB message.
/// Quotes stop after 80 characters with `…`, whatever is quoted (value, index, header, extra token).
#[test]
fn mm_error_quotes_are_capped() {
    let junk = "x".repeat(500_000);
    let cases = [
        (
            coord("real", "general", &format!("2 2 1\n1 1 {junk}\n")),
            3,
            "is not a valid real value",
        ),
        (
            coord("real", "general", &format!("2 2 1\n{junk} 1 1\n")),
            3,
            "is not a valid row index",
        ),
        (
            coord("real", "general", &format!("2 2 1\n1 1 1 {junk}\n")),
            3,
            "unexpected",
        ),
        (
            coord(&junk, "general", "2 2 1\n1 1 1\n"),
            1,
            "unknown field",
        ),
        (
            format!("%%MatrixMarket matrix coordinate real general {junk}\n2 2 0\n"),
            1,
            "bad header",
        ),
    ];
    for (text, line, needle) in &cases {
        assert_mm_error(text, *line, needle);
        for (how, r) in mm_all_ways::<f64>(text) {
            let msg = err(r).to_string();
            let quoted = msg.split('\'').nth(1).unwrap_or_default();
            assert!(
                quoted.chars().count() == 81 && quoted.ends_with('…'),
                "{how}: {msg:.300}"
            );
            assert!(
                msg.chars().count() < 300,
                "{how}: {} chars: {msg:.300}",
                msg.len()
            );
        }
    }
    assert!(err(mm::<f64>(&cases[0].0))
        .to_string()
        .contains(&format!("'{}…' is not", "x".repeat(80))));
    // Short tokens are quoted whole, multi-byte characters are cut on a character boundary.
    assert_mm_error(
        &coord("real", "general", "2 2 1\n1 1 1,5\n"),
        3,
        "'1,5' is not a valid real value",
    );
    let wide = "é".repeat(100);
    let msg = err(mm::<f64>(&coord(
        "real",
        "general",
        &format!("2 2 1\n1 1 {wide}\n"),
    )))
    .to_string();
    assert!(msg.contains(&format!("'{}…'", "é".repeat(80))), "{msg}");
}

/// A header or data line over 1 MiB is refused with its line number instead of being held in
/// memory; comment and blank lines of any length are skipped unstored.
#[test]
fn mm_long_lines() {
    let long = "1".repeat((1 << 20) + 1);
    for text in [
        coord("real", "general", &format!("2 2 1\n% c\n1 1 {long}\n")),
        format!(
            "%%MatrixMarket matrix coordinate real general{}\n2 2 0\n",
            " ".repeat(1 << 20)
        ),
        coord(
            "real",
            "general",
            &format!("2 2 1\n% c\n1 1 1{}\n", " ".repeat(1 << 20)),
        ),
    ] {
        let expected_line = if text.starts_with("%%MatrixMarket matrix coordinate real general ") {
            1
        } else {
            4
        };
        for (how, r) in mm_all_ways::<f64>(&text) {
            let e = err(r);
            assert!(
                matches!(&e, Error::LineTooLong { line, limit: 1048576, .. } if *line == expected_line),
                "{how}: {e:.200}"
            );
            assert!(
                e.to_string()
                    .contains(&format!(":{expected_line}: line is longer than")),
                "{how}: {e:.200}"
            );
        }
    }
    // Exactly 1 MiB is accepted (leading blanks are not held, so they do not count).
    let at_limit = format!("{}1 1 1.{}", " ".repeat(3 << 20), "0".repeat((1 << 20) - 6));
    assert_eq!(
        read_mm::<f64>(&coord("real", "general", &format!("2 2 1\n{at_limit}\n"))).values(),
        &[1.0]
    );
    let comment = format!("%{}\n", "%\u{e9}x".repeat(1 << 20));
    let blank = format!("{}\n", " \t".repeat(1 << 20));
    let m = read_mm::<f64>(&coord(
        "real",
        "general",
        &format!("{comment}{blank}2 2 1\n{comment}1 1 1\n{blank}{comment}"),
    ));
    assert_eq!(m.values(), &[1.0]);
}

/// Regression: comment lines with bytes that are not UTF-8 (Latin-1 accents, 0xFF) were refused
/// ("stream did not contain valid UTF-8"); comments are opaque bytes now, as SciPy reads them.
#[test]
fn mm_comments_may_hold_any_bytes() {
    let text = b"%%MatrixMarket matrix coordinate real general\n% Jos\xe9 M\xfcller, caf\xe9\n%\xff\xfe\x00\x80\n   %\xc3\n2 2 2\n% \xe9\n1 1 1.5\n2 2 -2\n%\xff";
    let expected = mm::<f64>(&coord("real", "general", "2 2 2\n1 1 1.5\n2 2 -2\n")).unwrap();
    for (how, r) in mm_bytes_all_ways(text) {
        assert_eq!(
            r.unwrap_or_else(|e| panic!("{how}: {e}")),
            expected,
            "{how}"
        );
    }
    let dir = TempDir::new("latin1");
    let p = dir.path("v.mtx");
    std::fs::write(
        &p,
        b"%%MatrixMarket matrix array real general\n% \xe9t\xe9\n2 1\n%\xff\n1\n2\n",
    )
    .unwrap();
    assert_eq!(read_vector::<f64>(&p).unwrap(), [1.0, 2.0]);
}

/// Header and data lines must be UTF-8: a line that is not fails with its line and column.
#[test]
fn mm_error_non_utf8_data_line() {
    let cases: [(&[u8], usize, &str); 3] = [
        (
            b"%%MatrixMarket matrix coordinate real general\n% ok\n2 2 1\n1 1 1.0\xe9\n",
            4,
            "byte 0xe9 at column 8 is not valid UTF-8",
        ),
        (
            b"%%MatrixMarket matrix coordinate real general\n  2\xff 2 1\n1 1 1\n",
            2,
            "byte 0xff at column 4",
        ),
        (
            b"%%MatrixMarket matrix coordinate r\xe9al general\n2 2 1\n1 1 1\n",
            1,
            "not valid UTF-8",
        ),
    ];
    for (bytes, line, needle) in cases {
        for (how, r) in mm_bytes_all_ways(bytes) {
            match err(r) {
                Error::MatrixMarket {
                    line: l, message, ..
                } => {
                    assert_eq!(l, line, "{how}: wrong line for '{message}'");
                    assert!(
                        message.contains(needle),
                        "{how}: message '{message}' lacks '{needle}'"
                    );
                }
                other => panic!("{how}: expected Error::MatrixMarket, got {other:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 8. Vectors and round trips
// ---------------------------------------------------------------------------------------------

/// An array with one column is a vector.
#[test]
fn read_vector_array_column() {
    let v =
        read_vector_text("%%MatrixMarket matrix array real general\n% c\n3 1\n1\n\n2.5\n-3e0\n")
            .unwrap();
    assert_eq!(v, [1.0, 2.5, -3.0]);
}

/// An array with one row is a vector.
#[test]
fn read_vector_array_row() {
    let v =
        read_vector_text("%%MatrixMarket matrix array integer general\n1 3\n4\n-5\n6\n").unwrap();
    assert_eq!(v, [4.0, -5.0, 6.0]);
}

/// A coordinate vector (column or row) fills missing entries with zero and sums repeats.
#[test]
fn read_vector_coordinate() {
    let col =
        read_vector_text(&coord("real", "general", "4 1 3\n2 1 5\n4 1 -1\n2 1 0.5\n")).unwrap();
    assert_eq!(col, [0.0, 5.5, 0.0, -1.0]);
    let row = read_vector_text(&coord("pattern", "general", "1 3 1\n1 3\n")).unwrap();
    assert_eq!(row, [0.0, 0.0, 1.0]);
}

/// A 2x2 array is not a vector; truncated and overlong vector files fail on the right line.
#[test]
fn read_vector_errors() {
    let line = |text: &str| match err(read_vector_text(text)) {
        Error::MatrixMarket { line, .. } => line,
        other => panic!("expected Error::MatrixMarket, got {other:?}"),
    };
    assert_eq!(
        line("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n"),
        2
    );
    assert_eq!(
        line("%%MatrixMarket matrix array real general\n% c\n3 1\n1\n2\n"),
        6
    );
    assert_eq!(
        line("%%MatrixMarket matrix array real general\n2 1\n1\n2\n3\n"),
        5
    );
    assert_eq!(
        line("%%MatrixMarket matrix array real general\n2 1\n1\nx\n"),
        4
    );
    assert_eq!(line(&coord("real", "general", "3 1 1\n4 1 1\n")), 3);
    assert_eq!(line(""), 1);
}

/// Like read_matrix, read_vector refuses leftover tokens after a value, an entry or a size line.
#[test]
fn read_vector_rejects_extra_tokens() {
    let line = |text: &str| match err(read_vector_text(text)) {
        Error::MatrixMarket { line, .. } => line,
        other => panic!("expected Error::MatrixMarket, got {other:?}"),
    };
    assert_eq!(
        line("%%MatrixMarket matrix array real general\n2 1\n1 99\n2\n"),
        3
    );
    assert_eq!(line(&coord("real", "general", "2 1 1\n2 1 5 junk\n")), 3);
    assert_eq!(line(&coord("real", "general", "2 1 1 7\n2 1 5\n")), 2);
}

/// write_vector then read_vector is bit-exact for f64, including extreme values and -0.
#[test]
fn vector_round_trip_f64() {
    let mut v = random_vector(1000, 5);
    v.extend([
        0.1,
        -0.0,
        0.0,
        1e-300,
        5e-324,
        f64::MAX,
        f64::MIN_POSITIVE,
        1.0 / 3.0,
        123456789.0,
        -2.5e20,
    ]);
    vector_round_trip(&v);
    vector_round_trip::<f64>(&[]);
}

/// write_vector then read_vector is bit-exact for f32, including extreme values and -0.
#[test]
fn vector_round_trip_f32() {
    let mut v: Vec<f32> = random_vector(1000, 6)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    v.extend([
        0.1,
        -0.0,
        0.0,
        1e-45,
        f32::MAX,
        f32::MIN_POSITIVE,
        1.0 / 3.0,
        16777215.0,
        -2.5e20,
    ]);
    vector_round_trip(&v);
}

/// Regression: parsing f32 text via f64 rounds twice, and the shortest decimal of this f32 (as
/// write_vector / write_matrix_market print it) then reads back as its neighbour.
#[test]
fn vector_round_trip_f32_double_rounding() {
    let v = f32::from_bits(0x15ae_43fd);
    vector_round_trip(&[v, -v]);
    matrix_round_trip(&CsrMatrix::<f32>::from_triplets(1, 1, vec![(0, 0, v)]).unwrap());
}

/// Regression: a corrupt size line must give Err, not a capacity-overflow panic or a terabyte
/// allocation; it is refused on the size line, past the 32-bit range of every GPU path.
#[test]
fn read_vector_huge_size_line_is_an_error_not_a_panic() {
    let text = "%%MatrixMarket matrix array real general\n4611686018427387904 1\n1\n";
    let r = std::panic::catch_unwind(|| read_vector_text(text));
    assert!(
        matches!(
            r,
            Ok(Err(Error::InputTooLarge {
                line: 2,
                dimension: "vector elements",
                declared: 4611686018427387904,
                limit: 4294967295,
                ..
            }))
        ),
        "read_vector panicked, succeeded or failed otherwise"
    );
}

/// write_matrix_market then read_matrix_market is exact on a suite matrix with empty rows (f64).
#[test]
fn matrix_round_trip_f64() {
    let m = SuiteClass::EmptyRows.generate(2000, 3);
    assert!(m.row_stats().empty_rows > 0);
    matrix_round_trip(&m);
}

/// write_matrix_market then read_matrix_market is exact on the same matrix in f32.
#[test]
fn matrix_round_trip_f32() {
    matrix_round_trip(&SuiteClass::EmptyRows.generate(2000, 3).cast::<f32>());
}

/// An empty matrix (and one with no rows) round-trips too.
#[test]
fn matrix_round_trip_empty() {
    matrix_round_trip(&CsrMatrix::<f64>::zeros(3, 5).unwrap());
    matrix_round_trip(&CsrMatrix::<f32>::zeros(0, 0).unwrap());
}

// ---------------------------------------------------------------------------------------------
// 9. reference::check
// ---------------------------------------------------------------------------------------------

/// An f32 suite matrix with empty rows, its x, and the f64 reference `A·x`.
fn check_case() -> (CsrMatrix<f32>, Vec<f32>, Vec<f64>) {
    let a = SuiteClass::EmptyRows.generate(2000, 3).cast::<f32>();
    let x: Vec<f32> = random_vector(a.ncols(), 11)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let y_ref = reference::spmv_par(&a, &x).unwrap();
    (a, x, y_ref)
}

/// The reference rounded to f32, as a perfect f32 kernel would return it.
fn rounded(y_ref: &[f64]) -> Vec<f32> {
    y_ref.iter().map(|&v| v as f32).collect()
}

/// The nonempty row with the largest |y_ref|.
fn big_row(a: &CsrMatrix<f32>, y_ref: &[f64]) -> usize {
    (0..a.nrows())
        .filter(|&r| a.row_len(r) > 0)
        .max_by(|&i, &j| y_ref[i].abs().total_cmp(&y_ref[j].abs()))
        .unwrap()
}

/// The correctly rounded result passes.
#[test]
fn check_passes_correct_result() {
    let (a, x, y_ref) = check_case();
    let c = reference::check(1.0, &a, &x, 0.0, None, &rounded(&y_ref), &y_ref);
    assert!(c.ok, "{c:?}");
    assert!(c.rel_err < 1e-6, "{c:?}");
}

/// One NaN fails, is the worst row, and makes rel_err infinite.
#[test]
fn check_fails_on_nan() {
    let (a, x, y_ref) = check_case();
    let mut y = rounded(&y_ref);
    let k = big_row(&a, &y_ref);
    y[k] = f32::NAN;
    let c = reference::check(1.0, &a, &x, 0.0, None, &y, &y_ref);
    assert!(!c.ok, "{c:?}");
    assert_eq!(c.worst_row.map(|w| w.0), Some(k));
    assert_eq!(c.rel_err, f64::INFINITY);
}

/// One ulp off in every nonempty row is within the bound (empty rows must stay exact).
#[test]
fn check_passes_one_ulp_per_row() {
    let (a, x, y_ref) = check_case();
    let y: Vec<f32> = rounded(&y_ref)
        .into_iter()
        .enumerate()
        .map(|(r, v)| {
            if a.row_len(r) > 0 {
                f32::from_bits(v.to_bits() + 1)
            } else {
                v
            }
        })
        .collect();
    assert_ne!(y, rounded(&y_ref));
    let c = reference::check(1.0, &a, &x, 0.0, None, &y, &y_ref);
    assert!(c.ok, "{c:?}");
}

/// A relative error of 1e-3 in a single row fails and is reported as the worst row.
#[test]
fn check_fails_on_relative_error_in_one_row() {
    let (a, x, y_ref) = check_case();
    let mut y = rounded(&y_ref);
    let k = big_row(&a, &y_ref);
    y[k] *= 1.0 + 1e-3;
    let c = reference::check(1.0, &a, &x, 0.0, None, &y, &y_ref);
    assert!(!c.ok, "{c:?}");
    assert_eq!(c.worst_row.map(|w| w.0), Some(k), "{c:?}");
    // Any nonzero value in an empty row fails as well.
    let empty = (0..a.nrows()).find(|&r| a.row_len(r) == 0).unwrap();
    let mut y = rounded(&y_ref);
    y[empty] = 1e-30;
    assert!(!reference::check(1.0, &a, &x, 0.0, None, &y, &y_ref).ok);
}

/// With beta != 0 the reference and the bound include beta·y0.
#[test]
fn check_includes_beta_term() {
    let (a, x, ax) = check_case();
    let y0: Vec<f32> = random_vector(a.nrows(), 12)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let (alpha, beta) = (1.5, -0.75);
    let y_ref = reference::spmv_axpby(alpha, &a, &x, beta, &y0).unwrap();
    for r in 0..a.nrows() {
        let expected = alpha * ax[r] + beta * y0[r] as f64;
        assert!(
            (y_ref[r] - expected).abs() <= 1e-12 * expected.abs().max(1.0),
            "row {r}"
        );
    }
    let c = reference::check(alpha, &a, &x, beta, Some(&y0), &rounded(&y_ref), &y_ref);
    assert!(c.ok, "{c:?}");
    // Leaving out the beta term fails.
    let without: Vec<f32> = ax.iter().map(|&v| (alpha * v) as f32).collect();
    assert!(!reference::check(alpha, &a, &x, beta, Some(&y0), &without, &y_ref).ok);
    // The bound of an empty row grows with |beta·y0|: one ulp there passes with beta, fails without.
    let empty = (0..a.nrows()).find(|&r| a.row_len(r) == 0).unwrap();
    let mut y = rounded(&y_ref);
    y[empty] = f32::from_bits(y[empty].to_bits() + 1);
    assert!(reference::check(alpha, &a, &x, beta, Some(&y0), &y, &y_ref).ok);
    let zeros = vec![0.0f32; a.nrows()];
    assert!(!reference::check(alpha, &a, &x, beta, Some(&zeros), &y, &y_ref).ok);
    // With beta = 0, y is not read: NaN in it does not leak into the reference.
    let nan_y0 = vec![f32::NAN; a.nrows()];
    let y_ref0 = reference::spmv_axpby(alpha, &a, &x, 0.0, &nan_y0).unwrap();
    assert!(y_ref0.iter().all(|v| v.is_finite()));
}

// ---------------------------------------------------------------------------------------------
// 10. suite
// ---------------------------------------------------------------------------------------------

/// Every class's name maps back to it; an unknown name is refused listing the valid ones.
#[test]
fn suite_from_name_round_trips() {
    for class in SuiteClass::ALL {
        assert_eq!(SuiteClass::from_name(class.name()).unwrap(), class);
    }
    let e = err(SuiteClass::from_name("banded2"));
    assert!(
        matches!(&e, Error::UnknownName { what: "suite class", name, expected } if name == "banded2" && expected.contains("power_law")),
        "{e:?}"
    );
    assert!(SuiteClass::from_name("").is_err());
    assert!(SuiteClass::from_name("Banded").is_err());
}

/// random_vector is a function of (n, seed), has no zeros, and stays within ±[0.5, 1.5).
#[test]
fn suite_random_vector_deterministic_without_zeros() {
    let v = random_vector(10_000, 42);
    assert_eq!(v, random_vector(10_000, 42));
    assert_ne!(v, random_vector(10_000, 43));
    assert_eq!(&random_vector(100, 42)[..], &v[..100]);
    assert!(
        v.iter().all(|x| (0.5..1.5).contains(&x.abs())),
        "a value outside ±[0.5, 1.5)"
    );
    assert!(v.iter().any(|&x| x < 0.0) && v.iter().any(|&x| x > 0.0));
    assert!(random_vector(0, 1).is_empty());
}
