#import shared/grid
// SURAA setup, step 1: each row's sort key, (longest first, then first column) as one 64-bit
// number: (npr_mask - npr) << col_bits | first column, in two u32 words; payload the row index,
// so that a stable sort breaks remaining ties by row.

struct KeyParams {
    nrows: u32,
    npr_bits: u32,
    col_bits: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> keys_lo: array<u32>;
@group(0) @binding(3) var<storage, read_write> keys_hi: array<u32>;
@group(0) @binding(4) var<storage, read_write> rows: array<u32>;
@group(0) @binding(5) var<uniform> params: KeyParams;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let r = linear_group(wid, nwg) * 256u + lid;
    if (r >= params.nrows) {
        return;
    }
    let begin = row_ptr[r];
    let npr = row_ptr[r + 1u] - begin;
    var first = 0u;
    if (npr > 0u) {
        first = col_idx[begin];
    }
    let npr_mask = select((1u << params.npr_bits) - 1u, 0xffffffffu, params.npr_bits == 32u);
    let a = npr_mask - npr;
    var lo = a;
    var hi = 0u;
    if (params.col_bits == 32u) {
        lo = first;
        hi = a;
    } else if (params.col_bits > 0u) {
        lo = (a << params.col_bits) | first;
        hi = a >> (32u - params.col_bits);
    }
    keys_lo[r] = lo;
    keys_hi[r] = hi;
    rows[r] = r;
}
