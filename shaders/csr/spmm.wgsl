#import shared/grid
#import shared/common
#import shared/csr_bindings
#import csr/spmm_dense
// Y = alpha * A X + beta * Y for dense X and Y of K columns (SpMM), A in CSR: COLS invocations
// per row, each taking columns lane, lane + COLS, ...; the row's entries are read once per
// workgroup for all of them (the COLS invocations of a row read the same entry, a broadcast).
// X and Y are laid out as spmm_dense.wgsl says. Rows of more than SPMM_LONG entries are left to
// spmm_long.wgsl.

override WG_SIZE: u32 = 256u;
override COLS: u32 = 8u;

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
