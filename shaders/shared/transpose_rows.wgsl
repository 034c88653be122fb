#import shared/grid
#import shared/transpose_params
// Transposition on the GPU (src/matrix/transpose.rs), after the sort: rows[e] is the row of A
// that holds entry e. In A's order, so that neighbouring invocations walk nearly the same path
// of the binary search (its loads shared or cached); the finish gathers these by sorted entry.

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read_write> rows: array<u32>;
@group(0) @binding(2) var<uniform> params: TransposeParams;

// The last row r with row_ptr[r] <= e (the row holding entry e: empty rows before it share its
// start, so "last" skips them).
fn row_of(e: u32) -> u32 {
    var lo = 0u;
    var hi = params.nrows;
    // row_ptr[lo] <= e < row_ptr[hi]
    while (hi - lo > 1u) {
        let mid = lo + (hi - lo) / 2u;
        if (row_ptr[mid] <= e) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_group(wid, nwg) * 256u + lid;
    if (e < params.nnz) {
        rows[e] = row_of(e);
    }
}
