// The dense operands of the SpMM kernels (spmm, spmm_by_row, spmm_long): element (r, j) of X lies
// at r * x_row + j * x_col (row-major: x_row = k, x_col = 1; column-major: x_row = 1, x_col =
// rows), the same for Y.
struct Dense {
    nrows: u32,
    k: u32,
    x_row: u32,
    x_col: u32,
    y_row: u32,
    y_col: u32,
}
@group(0) @binding(6) var<uniform> dense: Dense;

// Entries beyond which a row is left to spmm_long (SPMM_LONG in src/methods/csr/mod.rs).
const SPMM_LONG: u32 = 512u;
