// The rightmost row whose first entry is at or before b: the last r in 0..=nrows with
// row_ptr[r] <= b (row_ptr[0] = 0). A binary search over the importing kernel's `row_ptr`.
fn rightmost_row(b: u32, nrows: u32) -> u32 {
    var lo = 0u;
    var hi = nrows + 1u;
    while (hi - lo > 1u) {
        let mid = lo + (hi - lo) / 2u;
        if (row_ptr[mid] <= b) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}
