#import shared/grid
#import shared/common
#import shared/csr_bindings
#import csr/spmm_dense
// Y = alpha * A X + beta * Y (SpMM) for a column-major X: one invocation per row and block of
// BLOCK columns, consecutive invocations on consecutive rows (as csr_scalar), each entry read
// once per block. (spmm.wgsl's COLS invocations per row would gather X's columns `rows` apart.)
// Rows of more than SPMM_LONG entries are left to spmm_long.wgsl.

override WG_SIZE: u32 = 256u;
const BLOCK: u32 = 4u;

fn put(row: u32, j: u32, sum: scalar) {
    let yi = row * dense.y_row + j * dense.y_col;
    if (coeffs.beta == scalar(0)) {
        y[yi] = coeffs.alpha * sum;
    } else {
        y[yi] = coeffs.alpha * sum + coeffs.beta * y[yi];
    }
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_group(wid, nwg) * WG_SIZE + lid;
    let blocks = (dense.k + BLOCK - 1u) / BLOCK;
    if (t >= dense.nrows * blocks) {
        return;
    }
    let row = t % dense.nrows;
    let j0 = (t / dense.nrows) * BLOCK;
    let begin = row_ptr[row];
    let end = row_ptr[row + 1u];
    if (end - begin > SPMM_LONG) {
        return;
    }
    let n = min(BLOCK, dense.k - j0);
    // Four accumulators in a vector (an array indexed at run time would live in slow memory);
    // columns past k read column j0 again and are never written.
    let s = dense.x_col;
    let o = vec4<u32>(0u, select(0u, s, n > 1u), select(0u, 2u * s, n > 2u), select(0u, 3u * s, n > 3u));
    var sum = vec4<scalar>(scalar(0));
    for (var i = begin; i < end; i++) {
        let at = col_idx[i] * dense.x_row + j0 * s;
        sum += vals[i] * vec4<scalar>(x[at + o.x], x[at + o.y], x[at + o.z], x[at + o.w]);
    }
    put(row, j0, sum.x);
    if (n > 1u) {
        put(row, j0 + 1u, sum.y);
    }
    if (n > 2u) {
        put(row, j0 + 2u, sum.z);
    }
    if (n > 3u) {
        put(row, j0 + 3u, sum.w);
    }
}
