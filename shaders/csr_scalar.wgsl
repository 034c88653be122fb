// csr-scalar: one invocation per row.
@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<scalar>;
@group(0) @binding(3) var<storage, read> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> y: array<scalar>;
@group(0) @binding(5) var<uniform> coeffs: Coeffs;
@group(0) @binding(6) var<uniform> chunk: Chunk;

override WG_SIZE: u32 = 256u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = linear_group(wid, nwg) * WG_SIZE + lid;
    if (row >= chunk.nrows) {
        return;
    }
    var sum = scalar(0);
    let end = row_ptr[row + 1u];
    for (var k = row_ptr[row]; k < end; k++) {
        sum += vals[k] * x[col_idx[k]];
    }
    write_y(chunk.row_begin + row, sum);
}
