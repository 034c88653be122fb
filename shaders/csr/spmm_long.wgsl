#import shared/grid
#import shared/common
#import csr/spmm_dense
// SpMM's rows longer than SPMM_LONG entries (shaders/csr/spmm.wgsl leaves them): FINISH 0, one
// workgroup per piece of at most SPMM_PIECE entries of a long row, COLS columns at a time, the
// piece's entries shared out among WG_SIZE / COLS parts and summed in workgroup memory into
// `partials` (piece × k); FINISH 1, one workgroup per long row adds its pieces into Y, shared
// out the same way. A loop of FINISH 0 runs at most SPMM_PIECE times, one of FINISH 1 a row's
// pieces / (WG_SIZE / COLS) times (325 for a row of 5.3M entries and 32 columns).
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

// Per column (invocations alike in lid % COLS), the sum of `v` over the workgroup's
// WG_SIZE / COLS parts, for every invocation of part 0; called in uniform control flow.
fn parts_total(v: scalar, lid: u32) -> scalar {
    let part = lid / COLS;
    sums[lid] = v;
    workgroupBarrier();
    for (var s = WG_SIZE / COLS / 2u; s > 0u; s = s / 2u) {
        if (part < s) {
            sums[lid] += sums[lid + s * COLS];
        }
        workgroupBarrier();
    }
    let total = sums[lid];
    // `sums` is written again by the next call.
    workgroupBarrier();
    return total;
}

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
            let total = parts_total(sum, lid);
            if (part == 0u && j < k && g < pieces) {
                partials[g * k + j] = total;
            }
        }
    } else {
        // One workgroup per long row: its pieces shared out among the parts as FINISH 0 shares
        // out a piece's entries, so no invocation sums a whole row's pieces alone.
        let pieces = desc[0];
        let long_rows = desc[1];
        let parts = WG_SIZE / COLS;
        let part = lid / COLS;
        let at = 2u + 2u * pieces + 3u * g;
        var first = 0u;
        var end = 0u;
        if (g < long_rows) {
            first = desc[at + 1u];
            end = desc[at + 2u];
        }
        for (var jb = 0u; jb < k; jb += COLS) {
            let j = jb + lid % COLS;
            var sum = scalar(0);
            if (j < k) {
                for (var p = first + part; p < end; p += parts) {
                    sum += partials[p * k + j];
                }
            }
            let total = parts_total(sum, lid);
            if (part == 0u && j < k && g < long_rows) {
                let yi = desc[at] * dense.y_row + j * dense.y_col;
                if (coeffs.beta == scalar(0)) {
                    y[yi] = coeffs.alpha * total;
                } else {
                    y[yi] = coeffs.alpha * total + coeffs.beta * y[yi];
                }
            }
        }
    }
}
