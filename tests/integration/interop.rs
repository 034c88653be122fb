//! Conversions from sprs, nalgebra-sparse and faer: each equals the `CsrMatrix` built from the
//! same entries (exactly: the values are copied, never recomputed), unsorted and gapped rows are
//! accepted, and what `CsrMatrix` cannot hold is a typed error. One product on the GPU shows the
//! converted matrix is usable as is.

use crate::common;
use wgspmv::{CsrMatrix, Error, GpuVector, Method};

/// A 4×5 matrix with an empty row and a full row, as triplets.
fn entries() -> Vec<(usize, usize, f64)> {
    vec![
        (0, 1, 1.5),
        (0, 4, -2.0),
        (2, 0, 3.0),
        (2, 1, 0.25),
        (2, 2, -1.0),
        (2, 3, 7.0),
        (2, 4, 8.0),
        (3, 3, 2f64.powi(-40)),
    ]
}

fn expected() -> CsrMatrix<f64> {
    CsrMatrix::from_triplets(4, 5, entries()).unwrap()
}

#[test]
fn from_triplet_iter_takes_any_iterator() {
    let from_iter = CsrMatrix::from_triplet_iter(4, 5, entries().into_iter().rev()).unwrap();
    assert_eq!(from_iter, expected());
}

#[test]
fn sprs_csr_csc_any_index_type_and_back() {
    let mut tri = sprs::TriMat::<f64>::new((4, 5));
    for (r, c, v) in entries() {
        tri.add_triplet(r, c, v);
    }
    let csr: sprs::CsMat<f64> = tri.to_csr();
    let csc: sprs::CsMat<f64> = tri.to_csc();
    assert_eq!(CsrMatrix::try_from(&csr).unwrap(), expected());
    assert_eq!(CsrMatrix::try_from(&csc).unwrap(), expected());
    assert_eq!(CsrMatrix::try_from(&csr.view()).unwrap(), expected());
    // u32 indices: moved, not copied.
    let mut tri32 = sprs::TriMatI::<f64, u32>::new((4, 5));
    let mut tri16 = sprs::TriMatI::<f64, u16>::new((4, 5));
    for (r, c, v) in entries() {
        tri32.add_triplet(r, c, v);
        tri16.add_triplet(r, c, v);
    }
    let narrow: sprs::CsMatI<f64, u32> = tri32.to_csr();
    assert_eq!(CsrMatrix::try_from(narrow.clone()).unwrap(), expected());
    let small: sprs::CsMatI<f64, u16, i64> = tri16.to_csr();
    assert_eq!(CsrMatrix::try_from(&small).unwrap(), expected());
    // And back.
    let back: sprs::CsMatI<f64, u32> = expected().into();
    assert_eq!(back, narrow);
    // A view of some rows (the index pointer does not start at 0).
    let rows = csr.slice_outer(2..4);
    assert_eq!(
        CsrMatrix::try_from(&rows).unwrap(),
        CsrMatrix::from_triplet_iter(
            2,
            5,
            entries()
                .into_iter()
                .filter(|e| e.0 >= 2)
                .map(|(r, c, v)| (r - 2, c, v))
        )
        .unwrap()
    );
}

#[test]
fn sprs_too_wide_for_u32_is_a_typed_error() {
    let wide = sprs::CsMat::<f32>::new((1, 1 << 33), vec![0, 1], vec![(1 << 33) - 1], vec![1.0]);
    assert!(matches!(
        CsrMatrix::try_from(&wide),
        Err(Error::TooLargeForU32 { what: "ncols", .. })
    ));
}

#[test]
fn nalgebra_sparse_csr_csc_and_back() {
    let mut coo = nalgebra_sparse::CooMatrix::<f64>::new(4, 5);
    for (r, c, v) in entries() {
        coo.push(r, c, v);
    }
    let csr = nalgebra_sparse::CsrMatrix::from(&coo);
    let csc = nalgebra_sparse::CscMatrix::from(&coo);
    assert_eq!(CsrMatrix::try_from(&csr).unwrap(), expected());
    assert_eq!(CsrMatrix::try_from(&csc).unwrap(), expected());
    let back = nalgebra_sparse::CsrMatrix::from(&expected());
    assert_eq!(back, csr);
}

#[test]
fn faer_sorted_unsorted_and_gapped_rows() {
    use faer::sparse::{SparseRowMat, SparseRowMatRef, SymbolicSparseRowMatRef, Triplet};
    let triplets: Vec<_> = entries()
        .into_iter()
        .map(|(r, c, v)| Triplet::new(r as u32, c as u32, v))
        .collect();
    let m = SparseRowMat::<u32, f64>::try_new_from_triplets(4, 5, &triplets).unwrap();
    assert_eq!(CsrMatrix::try_from(m.as_ref()).unwrap(), expected());
    // Row 0 stored backwards, row 2 with two unused slots after it (row_nnz).
    let row_ptr = [0u32, 2, 2, 9, 10];
    let row_nnz = [2u32, 0, 5, 1];
    let col_idx = [4u32, 1, 0, 1, 2, 3, 4, 0, 0, 3];
    let val = [
        -2.0,
        1.5,
        3.0,
        0.25,
        -1.0,
        7.0,
        8.0,
        f64::NAN,
        f64::NAN,
        2f64.powi(-40),
    ];
    let symbolic =
        SymbolicSparseRowMatRef::new_unsorted_checked(4, 5, &row_ptr, Some(&row_nnz), &col_idx);
    let gapped = SparseRowMatRef::new(symbolic, &val);
    assert_eq!(CsrMatrix::try_from(gapped).unwrap(), expected());
}

#[test]
fn a_converted_matrix_runs_on_the_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut tri = sprs::TriMatI::<f32, u32>::new((4, 5));
    for (r, c, v) in entries() {
        tri.add_triplet(r, c, v as f32);
    }
    let csr: sprs::CsMatI<f32, u32> = tri.to_csr();
    let a = CsrMatrix::try_from(csr).unwrap();
    let plan = gpu.prepare(&a, Method::Auto).unwrap();
    let x = GpuVector::from_slice(&gpu, &[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let mut y = GpuVector::filled(&gpu, 4, f32::NAN).unwrap();
    plan.run(&x, &mut y).unwrap();
    let want = [
        1.5 * 2.0 - 2.0 * 5.0,
        0.0,
        3.0 + 0.5 - 3.0 + 28.0 + 40.0,
        4.0 * 2f32.powi(-40),
    ];
    assert_eq!(y.read().unwrap(), want);
}
