#import shared/grid
// Transposition on the GPU, after the stable sort of the entries by column (`cols`, sorted,
// with `entries`, each sorted entry's index in A): invocation i writes the column of
// transposed entry i (the row of A that holds entry entries[i], by a binary search of A's row
// pointers) and, for i <= ncols, transposed row pointer i (how many sorted columns are below
// i), and takes the longest transposed row into `longest`.

struct TransposeParams {
    nnz: u32,
    nrows: u32,
    ncols: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> cols: array<u32>;
@group(0) @binding(2) var<storage, read> entries: array<u32>;
@group(0) @binding(3) var<uniform> params: TransposeParams;
@group(0) @binding(4) var<storage, read_write> col_t: array<u32>;
@group(0) @binding(5) var<storage, read_write> row_ptr_t: array<u32>;
@group(0) @binding(6) var<storage, read_write> longest: array<atomic<u32>>;

var<workgroup> group_longest: atomic<u32>;

// The last row r with row_ptr[r] <= e (the row holding entry e: empty rows before it share its
// start, so "last" skips them).
fn row_of(e: u32) -> u32 {
    var lo = 0u;
    var hi = params.nrows;
    // row_ptr[lo] <= e < row_ptr[hi]
    while (hi - lo > 1u) {
        let mid = lo + (hi - lo) / 2u;
        if (row_ptr[mid] <= e) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// How many sorted columns are below c.
fn below(c: u32) -> u32 {
    var lo = 0u;
    var hi = params.nnz;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        if (cols[mid] < c) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * 256u + lid;
    if (lid == 0u) {
        atomicStore(&group_longest, 0u);
    }
    workgroupBarrier();
    if (i < params.nnz) {
        col_t[i] = row_of(entries[i]);
    }
    if (i <= params.ncols) {
        let start = below(i);
        row_ptr_t[i] = start;
        if (i < params.ncols) {
            atomicMax(&group_longest, below(i + 1u) - start);
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        atomicMax(&longest[0], atomicLoad(&group_longest));
    }
}
