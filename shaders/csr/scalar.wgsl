#import shared/grid
#import shared/common
#import shared/csr_bindings
#import shared/csr_chunk
// csr-scalar: one invocation per row.

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
    let begin = row_ptr[row];
    var end = row_ptr[row + 1u];
    if (end - begin > LONG_ROW_ITERATIONS) {
        end = begin;
    }
    for (var k = begin; k < end; k++) {
        sum += vals[k] * x[col_idx[k]];
    }
    write_y(chunk.row_begin + row, sum);
}
