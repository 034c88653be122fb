// The CSR input of the BCCOO build's kernels that read the matrix, and searches in it.

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;

// First index in [lo0, hi0) of col_idx whose column is at least c (one row's columns are sorted).
fn lower_bound(lo0: u32, hi0: u32, c: u32) -> u32 {
    var lo = lo0;
    var hi = hi0;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        if (col_idx[mid] < c) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The row holding entry e, among rows lo0..=hi0: the last row starting at or before e.
fn row_between(e: u32, lo0: u32, hi0: u32) -> u32 {
    var lo = lo0;
    var hi = hi0;
    while (lo < hi) {
        let mid = hi - (hi - lo) / 2u;
        if (row_ptr[mid] <= e) {
            lo = mid;
        } else {
            hi = mid - 1u;
        }
    }
    return lo;
}

// The entries of stacked row q (row q % nrows, its columns in slice q / nrows) as a range of
// col_idx.
fn segment(q: u32) -> vec2<u32> {
    let s = q / params.nrows;
    let i = q % params.nrows;
    var lo = row_ptr[i];
    var hi = row_ptr[i + 1u];
    if (params.slices > 1u) {
        let c0 = s * params.slice_width;
        if (s > 0u) {
            lo = lower_bound(lo, hi, c0);
        }
        if (s + 1u < params.slices) {
            hi = lower_bound(lo, hi, c0 + params.slice_width);
        }
    }
    return vec2<u32>(lo, hi);
}

// The entries of row r of block row b (stacked row b * height + r) as a range of col_idx; an
// empty range past the last stacked row.
fn block_row_part(b: u32, r: u32) -> vec2<u32> {
    let q = b * params.height + r;
    if (q >= params.nrows * params.slices) {
        return vec2<u32>(0u, 0u);
    }
    return segment(q);
}

// Whether row i has an entry in block column bc (columns bc * width .. bc * width + width).
fn row_has_block(i: u32, bc: u32) -> bool {
    let end = row_ptr[i + 1u];
    let at = lower_bound(row_ptr[i], end, bc * params.width);
    return at < end && col_idx[at] - bc * params.width < params.width;
}

// Rows holding the entries of this workgroup (e0 .. e0 + WG), found once for all its
// invocations, which then search only between them. The whole workgroup narrows the rows of its
// first and last entry together, WG probes a round (a round divides the rows left by WG): one
// invocation's binary search over every row kept the others waiting on its dependent loads.
var<workgroup> entry_rows: vec2<u32>;
// The rows left (first and last) for the workgroup's first entry and for its last.
var<workgroup> rows_left_first: vec2<u32>;
var<workgroup> rows_left_last: vec2<u32>;

// Where in [lo, hi] the row holding entry e lies after this round: the interval probe `lid`
// opens when its row starts at or before e and the next probe's does not (exactly one such
// probe, since row_ptr[lo] <= e), else `none`.
fn narrowed(e: u32, lo: u32, hi: u32, lid: u32) -> vec2<u32> {
    let step = (hi - lo) / WG + 1u;
    let r = lo + lid * step;
    if (r > hi || row_ptr[r] > e) {
        return vec2<u32>(NONE, NONE);
    }
    let next = r + step;
    if (next <= hi && row_ptr[next] <= e) {
        return vec2<u32>(NONE, NONE);
    }
    return vec2<u32>(r, min(r + step - 1u, hi));
}

fn find_entry_rows(e0: u32, lid: u32) {
    let last = min(e0 + WG, params.nnz) - 1u;
    if (lid == 0u) {
        rows_left_first = vec2<u32>(0u, params.nrows - 1u);
        rows_left_last = vec2<u32>(0u, params.nrows - 1u);
    }
    workgroupBarrier();
    // The rows left shrink from nrows by a factor WG a round, to one.
    for (var left = params.nrows; left > 1u; left = (left - 1u) / WG + 1u) {
        let now_first = rows_left_first;
        let now_last = rows_left_last;
        workgroupBarrier();
        let first = narrowed(e0, now_first.x, now_first.y, lid);
        if (first.x != NONE) {
            rows_left_first = first;
        }
        let end = narrowed(last, now_last.x, now_last.y, lid);
        if (end.x != NONE) {
            rows_left_last = end;
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        entry_rows = vec2<u32>(rows_left_first.x, rows_left_last.x);
    }
    workgroupBarrier();
}

fn row_of_entry(e: u32) -> u32 {
    return row_between(e, entry_rows.x, entry_rows.y);
}
