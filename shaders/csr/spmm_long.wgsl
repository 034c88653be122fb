#import shared/grid
#import shared/common
#import csr/spmm_dense
// SpMM's rows longer than SPMM_LONG entries (shaders/csr/spmm.wgsl leaves them): FINISH 0, one
// workgroup per piece of at most SPMM_PIECE entries of a long row, COLS columns at a time, the
// piece's entries shared out among WG_SIZE / COLS parts and summed in workgroup memory into
// `partials` (piece × k); FINISH 1, one invocation per (long row, column) adds its pieces into
// Y. No loop of an invocation runs more than SPMM_PIECE times.
//
// `desc`: [pieces, long rows, (begin, end) per piece, (row, first piece, end piece) per long
// row]; piece bounds index the CSR's own `col_idx` / `vals`.
@group(0) @binding(0) var<storage, read> desc: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<scalar>;
@group(0) @binding(3) var<storage, read> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> y: array<scalar>;
@group(0) @binding(5) var<uniform> coeffs: Coeffs;
@group(0) @binding(7) var<storage, read_write> partials: array<scalar>;

override WG_SIZE: u32 = 256u;
override COLS: u32 = 8u;
override FINISH: u32 = 0u;

var<workgroup> sums: array<scalar, WG_SIZE>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let k = dense.k;
    if (FINISH == 0u) {
        let pieces = desc[0];
        let parts = WG_SIZE / COLS;
        let part = lid / COLS;
        var begin = 0u;
        var end = 0u;
        if (g < pieces) {
            begin = desc[2u + 2u * g];
            end = desc[3u + 2u * g];
        }
        // Column blocks in uniform control flow (the barriers below).
        for (var jb = 0u; jb < k; jb += COLS) {
            let j = jb + lid % COLS;
            var sum = scalar(0);
            if (j < k) {
                for (var i = begin + part; i < end; i += parts) {
                    sum += vals[i] * x[col_idx[i] * dense.x_row + j * dense.x_col];
                }
            }
            sums[lid] = sum;
            workgroupBarrier();
            for (var s = parts / 2u; s > 0u; s = s / 2u) {
                if (part < s) {
                    sums[lid] += sums[lid + s * COLS];
                }
                workgroupBarrier();
            }
            if (part == 0u && j < k && g < pieces) {
                partials[g * k + j] = sums[lid];
            }
            workgroupBarrier();
        }
    } else {
        let t = g * WG_SIZE + lid;
        let pieces = desc[0];
        let long_rows = desc[1];
        if (t >= long_rows * k) {
            return;
        }
        let r = t / k;
        let j = t % k;
        let at = 2u + 2u * pieces + 3u * r;
        let row = desc[at];
        var sum = scalar(0);
        for (var p = desc[at + 1u]; p < desc[at + 2u]; p++) {
            sum += partials[p * k + j];
        }
        let yi = row * dense.y_row + j * dense.y_col;
        if (coeffs.beta == scalar(0)) {
            y[yi] = coeffs.alpha * sum;
        } else {
            y[yi] = coeffs.alpha * sum + coeffs.beta * y[yi];
        }
    }
}
