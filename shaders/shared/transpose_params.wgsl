// The transposition's sizes (TransposeParams in src/matrix/transpose.rs).
struct TransposeParams {
    nnz: u32,
    nrows: u32,
    ncols: u32,
    pad: u32,
}
