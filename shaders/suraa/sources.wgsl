#import shared/grid
#import suraa/sorted_row
// SURAA's value-update map, made on the GPU at the first update: for every entry of the
// rearranged matrix, the CSR entry it holds (what `sources_from_sorted` in setup.rs computes on
// the host, its CPU twin). The plan keeps no CSR row pointers, so they are made again:
// PASS 0, one invocation per sorted row (and one more): each original row's length, at its
//   place in CSR order (a trailing 0), scanned next into the CSR row pointers;
// PASS 1, blocks of BLOCK entries as in rearrange.wgsl: entry k of sorted row i came from
//   CSR entry csr_ptr[perm[i]] + (k - new_ptr[i]).

@group(0) @binding(0) var<storage, read> perm: array<u32>;
// Sorted row pointers (nrows + 1 entries).
@group(0) @binding(1) var<storage, read> new_ptr: array<u32>;
// Original row lengths (PASS 0), then their exclusive scan: the CSR row pointers.
@group(0) @binding(2) var<storage, read_write> csr_ptr: array<u32>;
@group(0) @binding(3) var<storage, read_write> sources: array<u32>;
@group(0) @binding(4) var<uniform> params: EntryParams;

override PASS: u32 = 0u;
const WG: u32 = 256u;
const ITEMS: u32 = 8u;
const BLOCK: u32 = WG * ITEMS;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    if (PASS == 0u) {
        let i = linear_group(wid, nwg) * WG + lid;
        if (i < params.nrows) {
            csr_ptr[perm[i]] = new_ptr[i + 1u] - new_ptr[i];
        } else if (i == params.nrows) {
            csr_ptr[i] = 0u;
        }
        return;
    }
    let base = linear_group(wid, nwg) * BLOCK;
    if (base >= params.nnz) {
        return;
    }
    let rows = rows_of_block(base, BLOCK, params.nnz, params.nrows);
    for (var r = 0u; r < ITEMS; r++) {
        let k = base + r * WG + lid;
        if (k < params.nnz) {
            let i = row_of(k, rows.x, rows.y);
            sources[k] = csr_ptr[perm[i]] + (k - new_ptr[i]);
        }
    }
}
