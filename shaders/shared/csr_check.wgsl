#import shared/grid
#import shared/rightmost_row
// Validation of a CSR matrix the caller already holds on the GPU (src/matrix/gpu_csr.rs), in
// three passes over the same bindings; each finding is the smallest index where it occurs, so the
// report names the first bad row whatever order the invocations ran in.
// PASS 0, one invocation per row pointer i (0..=nrows): row_ptr[0] and row_ptr[nrows] are noted,
//   a pointer below its predecessor is a finding, each non-empty row marks its first entry in
//   `starts` (a bit per entry), and the longest row is kept. Both are gathered in the workgroup
//   first: one atomic per row on a few words of device memory made the pass slow where rows are
//   many and short.
// PASS 1, one invocation per entry: a column out of range, or a column not above the entry
//   before it where no row starts, is a finding.
// PASS 2, one invocation: the details of the first findings (the values around them, the row of
//   the first bad entry by binary search).

struct CheckParams {
    nrows: u32,
    ncols: u32,
    nnz: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> starts: array<atomic<u32>>;
// Mirrors `Findings` in src/matrix/gpu_csr.rs; the index fields start at NONE.
@group(0) @binding(3) var<storage, read_write> found: array<atomic<u32>, 12>;
@group(0) @binding(4) var<uniform> params: CheckParams;

override PASS: u32 = 0u;

// PASS 0's workgroup: its longest row, and the words of `starts` from the one holding its first
// row's first entry (rows starting beyond them mark `starts` directly).
const WINDOW: u32 = 256u;
var<workgroup> wg_longest: atomic<u32>;
var<workgroup> wg_starts: array<atomic<u32>, WINDOW>;

const NONE: u32 = 0xFFFFFFFFu;
const FIRST_DECREASE: u32 = 0u;
const FIRST_COL_OUT: u32 = 1u;
const FIRST_UNSORTED: u32 = 2u;
const LONGEST_ROW: u32 = 3u;
const PTR_FIRST: u32 = 4u;
const PTR_LAST: u32 = 5u;
const DECREASE_VALUE: u32 = 6u;
const DECREASE_PREV: u32 = 7u;
const BAD_ENTRY_ROW: u32 = 8u;
const BAD_ENTRY_COL: u32 = 9u;
const BAD_ENTRY_PREV: u32 = 10u;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let first = linear_group(wid, nwg) * 256u;
    let i = first + lid;
    if (PASS == 0u) {
        // No early return: every invocation reaches the barrier.
        let base = row_ptr[min(first, params.nrows)] / 32u;
        if (i <= params.nrows) {
            let p = row_ptr[i];
            if (i == 0u) {
                atomicStore(&found[PTR_FIRST], p);
            }
            if (i == params.nrows) {
                atomicStore(&found[PTR_LAST], p);
            } else {
                let e = row_ptr[i + 1u];
                if (e < p) {
                    atomicMin(&found[FIRST_DECREASE], i + 1u);
                } else {
                    if (e > p && p < params.nnz) {
                        let w = p / 32u;
                        if (w >= base && w - base < WINDOW) {
                            atomicOr(&wg_starts[w - base], 1u << (p % 32u));
                        } else {
                            atomicOr(&starts[w], 1u << (p % 32u));
                        }
                    }
                    atomicMax(&wg_longest, e - p);
                }
            }
        }
        workgroupBarrier();
        if (lid == 0u) {
            atomicMax(&found[LONGEST_ROW], atomicLoad(&wg_longest));
        }
        // One word per invocation (WINDOW is the workgroup's size); a word the neighbouring
        // workgroups share is merged by the atomic.
        let bits = atomicLoad(&wg_starts[lid]);
        if (bits != 0u) {
            atomicOr(&starts[base + lid], bits);
        }
    } else if (PASS == 1u) {
        if (i >= params.nnz) {
            return;
        }
        let c = col_idx[i];
        if (c >= params.ncols) {
            atomicMin(&found[FIRST_COL_OUT], i);
        }
        let row_starts = (atomicLoad(&starts[i / 32u]) & (1u << (i % 32u))) != 0u;
        if (i > 0u && !row_starts && c <= col_idx[i - 1u]) {
            atomicMin(&found[FIRST_UNSORTED], i);
        }
    } else if (i == 0u) {
        let d = atomicLoad(&found[FIRST_DECREASE]);
        if (d != NONE) {
            atomicStore(&found[DECREASE_VALUE], row_ptr[d]);
            atomicStore(&found[DECREASE_PREV], row_ptr[d - 1u]);
        }
        let k = min(atomicLoad(&found[FIRST_COL_OUT]), atomicLoad(&found[FIRST_UNSORTED]));
        if (k != NONE) {
            // The row of entry k (the pointers are valid when this finding is reported).
            atomicStore(&found[BAD_ENTRY_ROW], rightmost_row(k, params.nrows));
            atomicStore(&found[BAD_ENTRY_COL], col_idx[k]);
            if (k > 0u) {
                atomicStore(&found[BAD_ENTRY_PREV], col_idx[k - 1u]);
            }
        }
    }
}
