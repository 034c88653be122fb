#import shared/grid
#import shared/transpose_params
// Transposition on the GPU (src/matrix/transpose.rs), first step: entry e's column is its sort
// key and e its payload, so that a stable sort by column lists each column's entries by row.

@group(0) @binding(0) var<storage, read> col_idx: array<u32>;
@group(0) @binding(1) var<storage, read_write> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> entries: array<u32>;
@group(0) @binding(3) var<uniform> params: TransposeParams;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_group(wid, nwg) * 256u + lid;
    if (e < params.nnz) {
        keys[e] = col_idx[e];
        entries[e] = e;
    }
}
