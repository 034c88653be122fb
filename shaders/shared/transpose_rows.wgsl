#import shared/grid
#import shared/transpose_params
#import shared/rightmost_row
// Transposition on the GPU (src/matrix/transpose.rs), after the sort: rows[e] is the row of A
// that holds entry e. In A's order, so that neighbouring invocations walk nearly the same path
// of the binary search (its loads shared or cached); the finish gathers these by sorted entry.

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read_write> rows: array<u32>;
@group(0) @binding(2) var<uniform> params: TransposeParams;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_group(wid, nwg) * 256u + lid;
    if (e < params.nnz) {
        // The last row starting at or before e: empty rows before it share its start.
        rows[e] = rightmost_row(e, params.nrows);
    }
}
