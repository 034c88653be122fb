// The sorted row holding an entry, for the kernels that walk SURAA's rearranged matrix entry by
// entry in blocks; the importing file declares `new_ptr`, the sorted row pointers.

struct EntryParams {
    nnz: u32,
    nrows: u32,
}

// The last sorted row i in [lo, hi) with new_ptr[i] <= k (new_ptr[lo] <= k holds): the row
// holding entry k, since a row starting at or before k that is not it ends before k.
fn row_of(k: u32, lo: u32, hi: u32) -> u32 {
    var a = lo;
    var b = hi;
    while (b - a > 1u) {
        let mid = a + (b - a) / 2u;
        if (new_ptr[mid] <= k) {
            a = mid;
        } else {
            b = mid;
        }
    }
    return a;
}

// The sorted rows [lo, hi) holding entries base .. base + block (base < nnz).
fn rows_of_block(base: u32, block: u32, nnz: u32, nrows: u32) -> vec2<u32> {
    let lo = row_of(base, 0u, nrows);
    return vec2<u32>(lo, row_of(min(base + block, nnz) - 1u, lo, nrows) + 1u);
}
