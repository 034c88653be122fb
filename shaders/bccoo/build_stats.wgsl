#import shared/grid
#import bccoo/build_common
#import bccoo/build_csr
// bccoo_build_stats: what the GPU build of BCCOO learns before it sizes anything
// (src/methods/bccoo/gpu_build.rs).
// PASS 0, one invocation per entry: the blocks of every size (`block_counts` in format.rs counts
//   the same: an entry opens a block when no entry before it in the block's rows, its own row
//   first, shares its block column), the largest column and the stored zeros, into `stats`.
// PASS 1, one invocation per 32 block rows: BCCOO+'s row map where empty block rows are left out
//   (`compact_row_map` in format.rs), from the scanned non-empty flags.

@group(0) @binding(2) var<storage, read> vals: array<u32>;
@group(0) @binding(3) var<storage, read_write> stats: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read> nonempty: array<u32>;
@group(0) @binding(5) var<storage, read_write> row_map: array<u32>;
@group(0) @binding(6) var<uniform> params: BuildParams;

override PASS: u32 = 0u;
// u32 words per value: 1 (f32) or 2 (f64).
override VAL_WORDS: u32 = 1u;

// The workgroup's counts: blocks of the 12 sizes, the largest column, stored zeros.
var<workgroup> counts: array<atomic<u32>, 14>;

// Block columns (of widths 1, 2, 4) of column c that row j also has entries in.
fn shared_blocks(j: u32, c: u32) -> vec3<bool> {
    let c4 = c & ~3u;
    let end = row_ptr[j + 1u];
    var at = lower_bound(row_ptr[j], end, c4);
    var hit = vec3<bool>(false, false, false);
    for (var k = 0u; k < 4u; k += 1u) {
        if (at < end && col_idx[at] - c4 < 4u) {
            let o = col_idx[at];
            hit = hit | vec3<bool>(o == c, o / 2u == c / 2u, true);
            at += 1u;
        }
    }
    return hit;
}

// Whether entry e's value is ±0 (in either width: every bit but the sign clear).
fn is_zero(e: u32) -> bool {
    var zero = (vals[e * VAL_WORDS + VAL_WORDS - 1u] & 0x7FFFFFFFu) == 0u;
    if (VAL_WORDS == 2u) {
        zero = zero && vals[e * 2u] == 0u;
    }
    return zero;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (PASS == 1u) {
        let k = g * WG + lid;
        if (k < (params.block_rows + 31u) / 32u) {
            var bits = 0u;
            for (var b = 0u; b < 32u; b += 1u) {
                let br = k * 32u + b;
                if (br < params.block_rows && nonempty[br + 1u] > nonempty[br]) {
                    bits |= 1u << b;
                }
            }
            row_map[2u * k] = bits;
            row_map[2u * k + 1u] = nonempty[k * 32u];
        }
        return;
    }
    let e0 = g * WG;
    if (e0 >= params.nnz) {
        return;
    }
    if (lid < 14u) {
        atomicStore(&counts[lid], 0u);
    }
    find_entry_rows(e0, lid);
    let e = e0 + lid;
    if (e < params.nnz) {
        let i = row_of_entry(e);
        let c = col_idx[e];
        // The entry opens its block column within its own row (widths 1, 2, 4) ...
        var first = vec3<bool>(true, true, true);
        if (e > row_ptr[i]) {
            let p = col_idx[e - 1u];
            first = vec3<bool>(p != c, p / 2u != c / 2u, p / 4u != c / 4u);
        }
        // ... and no row above it in its block row has that block column (rows up to the
        // farthest any height looks at: i % h rows above for height h).
        let reach = max(i % 2u, max(i % 3u, i % 4u));
        var above: array<vec3<bool>, 3>;
        for (var d = 1u; d <= 3u; d += 1u) {
            above[d - 1u] = vec3<bool>(false, false, false);
            if (d <= reach) {
                above[d - 1u] = shared_blocks(i - d, c);
            }
        }
        for (var h = 1u; h <= 4u; h += 1u) {
            var opens = first;
            for (var d = 1u; d <= i % h; d += 1u) {
                opens = opens & !above[d - 1u];
            }
            for (var wi = 0u; wi < 3u; wi += 1u) {
                if (opens[wi]) {
                    atomicAdd(&counts[(h - 1u) * 3u + wi], 1u);
                }
            }
        }
        atomicMax(&counts[12], c);
        if (is_zero(e)) {
            atomicAdd(&counts[13], 1u);
        }
    }
    workgroupBarrier();
    if (lid < 14u) {
        let v = atomicLoad(&counts[lid]);
        if (lid == 12u) {
            atomicMax(&stats[STAT_MAX_COL], v);
        } else if (v > 0u) {
            atomicAdd(&stats[STAT_COUNTS + lid], v);
        }
    }
}
