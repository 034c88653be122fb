#import shared/grid
#import suraa/sorted_row
// SURAA setup (Algorithm 2, line 5): the matrix rearranged into sorted row order, so that the
// kernels read consecutive rows from consecutive memory. Output entry k belongs to the sorted
// row i whose new range holds it; each workgroup copies a block of BLOCK entries (coalesced
// writes), finding rows by a binary search narrowed to the block's own rows. Values are copied
// as VAL_WORDS u32 words each, so one kernel serves f32 and f64.

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<u32>;
@group(0) @binding(3) var<storage, read> perm: array<u32>;
// Sorted row pointers (nrows + 1 entries).
@group(0) @binding(4) var<storage, read> new_ptr: array<u32>;
@group(0) @binding(5) var<storage, read_write> col_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> vals_out: array<u32>;
@group(0) @binding(7) var<uniform> params: EntryParams;

override VAL_WORDS: u32 = 1u;
const WG: u32 = 256u;
const ITEMS: u32 = 8u;
const BLOCK: u32 = WG * ITEMS;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let base = linear_group(wid, nwg) * BLOCK;
    if (base >= params.nnz) {
        return;
    }
    let rows = rows_of_block(base, BLOCK, params.nnz, params.nrows);
    for (var r = 0u; r < ITEMS; r++) {
        let k = base + r * WG + lid;
        if (k < params.nnz) {
            let i = row_of(k, rows.x, rows.y);
            let src = row_ptr[perm[i]] + (k - new_ptr[i]);
            col_out[k] = col_idx[src];
            for (var w = 0u; w < VAL_WORDS; w++) {
                vals_out[k * VAL_WORDS + w] = vals[src * VAL_WORDS + w];
            }
        }
    }
}
