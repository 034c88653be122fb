#import shared/grid
#import shared/transpose_params
// Transposition on the GPU, after the stable sort of the entries by column (`cols`, sorted,
// with `entries`, each sorted entry's index in A): invocation i writes the column of
// transposed entry i (the row of A that holds entry entries[i], gathered from `rows`, which
// shared/transpose_rows.wgsl wrote) and, for i <= ncols, transposed row pointer i (how many
// sorted columns are below i), and takes the longest transposed row into `longest`.

@group(0) @binding(0) var<storage, read> rows: array<u32>;
@group(0) @binding(1) var<storage, read> cols: array<u32>;
@group(0) @binding(2) var<storage, read> entries: array<u32>;
@group(0) @binding(3) var<uniform> params: TransposeParams;
@group(0) @binding(4) var<storage, read_write> col_t: array<u32>;
@group(0) @binding(5) var<storage, read_write> row_ptr_t: array<u32>;
@group(0) @binding(6) var<storage, read_write> longest: array<atomic<u32>>;

var<workgroup> group_longest: atomic<u32>;

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
        col_t[i] = rows[entries[i]];
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
