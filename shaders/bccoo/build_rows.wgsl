#import shared/grid
#import bccoo/build_common
#import bccoo/build_csr
// bccoo_build_rows: per block row, for the GPU build of BCCOO (src/methods/bccoo/gpu_build.rs).
// PASS 0, one invocation per block row: its blocks (the blocks opened in its stacked rows),
//   whether it is empty (scanned next), and the totals read back (empty block rows, blocks).
// PASS 1, one invocation per block row: the list of non-empty block rows, from the scan.
// PASS 2, one invocation per flag word: every bit 1 (not a row stop; padding stays so).
// PASS 3, one invocation per block row: the row stop at its last block; an empty block row's
//   zero block takes the column of the block before it (the last block column of the nearest
//   non-empty block row above, else 0), as format.rs's `natural_blocks` fills it.
// PASS 4, one invocation per padding block: the column of the last stored block.

@group(0) @binding(2) var<storage, read> owners: array<u32>;
@group(0) @binding(3) var<storage, read_write> block_row: array<u32>;
// Non-empty flags (scanned in place), then from `list_base` the list of non-empty block rows.
@group(0) @binding(4) var<storage, read_write> nonempty: array<u32>;
@group(0) @binding(5) var<storage, read_write> cols: array<u32>;
@group(0) @binding(6) var<storage, read_write> flags: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> stats: array<atomic<u32>>;
@group(0) @binding(8) var<uniform> params: BuildParams;

override PASS: u32 = 0u;

var<workgroup> empty_rows: atomic<u32>;

// The largest block column of block row b (its last block in natural order).
fn last_block_col(b: u32) -> u32 {
    var col = 0u;
    for (var r = 0u; r < params.height; r += 1u) {
        let seg = block_row_part(b, r);
        if (seg.y > seg.x) {
            col = max(col, col_idx[seg.y - 1u] / params.width);
        }
    }
    return col;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let k = g * WG + lid;
    if (PASS == 0u) {
        if (lid == 0u) {
            atomicStore(&empty_rows, 0u);
        }
        workgroupBarrier();
        if (k < params.block_rows) {
            var n = 0u;
            for (var r = 0u; r < params.height; r += 1u) {
                let seg = block_row_part(k, r);
                n += owners[seg.y] - owners[seg.x];
            }
            block_row[k] = n;
            nonempty[k] = select(0u, 1u, n > 0u);
            if (n == 0u) {
                atomicAdd(&empty_rows, 1u);
            }
            if (k == 0u) {
                atomicStore(&stats[STAT_OWNERS], owners[params.nnz]);
            }
        }
        workgroupBarrier();
        if (lid == 0u) {
            let v = atomicLoad(&empty_rows);
            if (v > 0u) {
                atomicAdd(&stats[STAT_EMPTY_ROWS], v);
            }
        }
        return;
    }
    if (PASS == 1u) {
        if (k < params.block_rows && nonempty[k + 1u] > nonempty[k]) {
            nonempty[params.list_base + nonempty[k]] = k;
        }
        return;
    }
    if (PASS == 2u) {
        if (k < (params.padded_blocks + 31u) / 32u) {
            atomicStore(&flags[k], NONE);
        }
        return;
    }
    if (PASS == 3u) {
        if (k >= params.block_rows) {
            return;
        }
        let first = block_row[k];
        let stored = block_row[k + 1u] - first;
        if (stored == 0u) {
            return;
        }
        let last = first + stored - 1u;
        atomicAnd(&flags[last / 32u], ~(1u << (last % 32u)));
        if (nonempty[k + 1u] == nonempty[k]) {
            let before = nonempty[k];
            var col = 0u;
            if (before > 0u) {
                col = last_block_col(nonempty[params.list_base + before - 1u]);
            }
            cols[first] = col;
        }
        return;
    }
    // PASS 4.
    let n = params.blocks + k;
    if (n < params.padded_blocks) {
        cols[n] = cols[params.blocks - 1u];
    }
}
