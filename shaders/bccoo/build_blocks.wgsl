#import shared/grid
#import bccoo/build_common
#import bccoo/build_csr
// bccoo_build_blocks: the blocks of the chosen size placed on the GPU
// (src/methods/bccoo/gpu_build.rs; `from_csr` in format.rs is the CPU twin).
// PASS 0, one invocation per entry: whether it opens its block (no entry before it in the
//   block's rows, in the order blocks sort their entries, shares its block column), into
//   `owners`, scanned next.
// PASS 1, one invocation per block row: its block count becomes the blocks it stores (an empty
//   one keeps a zero block unless BCCOO+ leaves it out), scanned next into each block row's
//   first block.
// PASS 2, one invocation per value slot: every source NONE (fill and padding keep them).
// PASS 3, one invocation per entry: its value into its block's slot of its row's value plane,
//   in the transposed layout (a zero as -0, which the kernel tells from fill), and its source; the entry opening a block writes the block's
//   column (natural order). A block's place in its block row is the number of blocks opened,
//   in the block row's stacked rows, at smaller block columns: one search per row, no loop over
//   a row.

@group(0) @binding(2) var<storage, read> vals: array<u32>;
@group(0) @binding(3) var<storage, read_write> owners: array<u32>;
@group(0) @binding(4) var<storage, read_write> block_row: array<u32>;
@group(0) @binding(5) var<storage, read_write> cols: array<u32>;
@group(0) @binding(6) var<storage, read_write> vals_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> sources: array<u32>;
@group(0) @binding(8) var<uniform> params: BuildParams;

override PASS: u32 = 0u;
// u32 words per value: 1 (f32) or 2 (f64).
override VAL_WORDS: u32 = 1u;

// Entry e's value into value slot `slot`, a zero (either sign) as -0: the kernel skips +0 only,
// its fill (`from_csr` in format.rs does the same).
fn put_value(slot: u32, e: u32) {
    let top = e * VAL_WORDS + VAL_WORDS - 1u;
    var zero = (vals[top] & 0x7FFFFFFFu) == 0u;
    for (var v = 0u; v + 1u < VAL_WORDS; v += 1u) {
        zero = zero && vals[e * VAL_WORDS + v] == 0u;
    }
    for (var v = 0u; v < VAL_WORDS; v += 1u) {
        vals_out[slot * VAL_WORDS + v] = vals[e * VAL_WORDS + v];
    }
    if (zero) {
        vals_out[slot * VAL_WORDS + VAL_WORDS - 1u] = 0x80000000u;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let k = g * WG + lid;
    if (PASS == 1u) {
        if (k < params.block_rows && params.compact == 0u) {
            block_row[k] = max(block_row[k], 1u);
        }
        return;
    }
    if (PASS == 2u) {
        if (k < params.padded_blocks * params.height * params.width) {
            sources[k] = NONE;
        }
        return;
    }
    let e0 = g * WG;
    if (e0 >= params.nnz) {
        return;
    }
    find_entry_rows(e0, lid);
    let e = k;
    if (e >= params.nnz) {
        return;
    }
    let i = row_of_entry(e);
    let c = col_idx[e];
    let w = params.width;
    let h = params.height;
    let bc = c / w;
    let s = c / params.slice_width;
    let q = s * params.nrows + i;
    if (PASS == 0u) {
        var opens = e == row_ptr[i] || col_idx[e - 1u] / w != bc;
        // The stacked rows above it in its block row, of its own slice (other slices' rows hold
        // other block columns).
        for (var d = 1u; d <= q % h && opens; d += 1u) {
            if (q - d < s * params.nrows) {
                break;
            }
            opens = !row_has_block(i - d, bc);
        }
        owners[e] = select(0u, 1u, opens);
        return;
    }
    // PASS 3.
    let br = q / h;
    var rank = 0u;
    for (var r = 0u; r < h; r += 1u) {
        let seg = block_row_part(br, r);
        rank += owners[lower_bound(seg.x, seg.y, bc * w)] - owners[seg.x];
    }
    let n = block_row[br] + rank;
    let slot = ((q % h) * params.padded_blocks + layout_of(n)) * w + c % w;
    put_value(slot, e);
    sources[slot] = e;
    if (owners[e + 1u] != owners[e]) {
        cols[n] = bc;
    }
}
