#import shared/grid
// SURAA setup, after the sort: the sorted rows' lengths (and a trailing 0), scanned next into
// the exclusive prefix sums the plan reads segment means from; and the inverse permutation.

struct LengthParams {
    nrows: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> perm: array<u32>;
@group(0) @binding(2) var<storage, read_write> lengths: array<u32>;
@group(0) @binding(3) var<uniform> params: LengthParams;
// Original row -> sorted position.
@group(0) @binding(4) var<storage, read_write> inv: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * 256u + lid;
    if (i < params.nrows) {
        let r = perm[i];
        lengths[i] = row_ptr[r + 1u] - row_ptr[r];
        inv[r] = i;
    } else if (i == params.nrows) {
        lengths[i] = 0u;
    }
}
