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
// invocations, which then search only between them.
var<workgroup> entry_rows: vec2<u32>;

fn find_entry_rows(e0: u32, lid: u32) {
    if (lid == 0u) {
        let last = min(e0 + WG, params.nnz) - 1u;
        let lo = row_between(e0, 0u, params.nrows - 1u);
        entry_rows = vec2<u32>(lo, row_between(last, lo, params.nrows - 1u));
    }
    workgroupBarrier();
}

fn row_of_entry(e: u32) -> u32 {
    return row_between(e, entry_rows.x, entry_rows.y);
}
