// The sorted row holding an entry, for the kernels that walk SURAA's rearranged matrix entry by
// entry; the importing file declares `new_ptr`, the sorted row pointers.

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
