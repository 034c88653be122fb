#import shared/grid
#import shared/common
#import shared/csr_bindings
// Y = alpha * A X + beta * Y for dense X and Y of K columns (SpMM), A in CSR: COLS invocations
// per row, each taking columns lane, lane + COLS, ...; the row's entries are read once per
// workgroup for all of them (the COLS invocations of a row read the same entry, a broadcast).
// Element (r, j) of X lies at r * x_row + j * x_col (row-major: x_row = K, x_col = 1;
// column-major: x_row = 1, x_col = rows), the same for Y. Rows of more than SPMM_LONG entries
// are left to spmm_long.wgsl.

struct Dense {
    nrows: u32,
    k: u32,
    x_row: u32,
    x_col: u32,
    y_row: u32,
    y_col: u32,
}
@group(0) @binding(6) var<uniform> dense: Dense;

override WG_SIZE: u32 = 256u;
override COLS: u32 = 8u;
// Entries beyond which a row is left to spmm_long.wgsl; mirrored by SPMM_LONG in csr/mod.rs.
const SPMM_LONG: u32 = 512u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = linear_group(wid, nwg) * (WG_SIZE / COLS) + lid / COLS;
    if (row >= dense.nrows) {
        return;
    }
    let begin = row_ptr[row];
    let end = row_ptr[row + 1u];
    // Longer rows are shared out among workgroups (shaders/csr/spmm_long.wgsl).
    if (end - begin > SPMM_LONG) {
        return;
    }
    for (var j = lid % COLS; j < dense.k; j += COLS) {
        var sum = scalar(0);
        for (var i = begin; i < end; i++) {
            sum += vals[i] * x[col_idx[i] * dense.x_row + j * dense.x_col];
        }
        let at = row * dense.y_row + j * dense.y_col;
        if (coeffs.beta == scalar(0)) {
            y[at] = coeffs.alpha * sum;
        } else {
            y[at] = coeffs.alpha * sum + coeffs.beta * y[at];
        }
    }
}
