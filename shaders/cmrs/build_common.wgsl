// What the GPU builds of CMRS strips share (cmrs/build_place and so cmrs/build and
// cmrs/build_padded, and cmrs/build_long): the CSR input bindings and the rows a strip hands to
// the long-row passes.

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<u32>;

// u32 words per value: 1 (f32) or 2 (f64).
override VAL_WORDS: u32 = 1u;
// Bits of the column word holding the row-in-strip number (ROW_BITS in format.rs).
const ROW_BITS: u32 = 4u;
const WG: u32 = 64u;

// The rows (bit i: row r0 + i) of a strip of `rows` rows that go to the long-row passes so that
// the rest has at most `budget` entries: the longest first (ties: the lower row), as
// `long_rows::rows_to_split` in src/methods/passes/long_rows.rs chooses on the host.
fn long_rows_of(r0: u32, rows: u32, budget: u32) -> u32 {
    var total = row_ptr[r0 + rows] - row_ptr[r0];
    var mask = 0u;
    while (total > budget) {
        var pick = 0u;
        var most = 0u;
        for (var i = 0u; i < rows; i += 1u) {
            let len = row_ptr[r0 + i + 1u] - row_ptr[r0 + i];
            if ((mask & (1u << i)) == 0u && len > most) {
                pick = i;
                most = len;
            }
        }
        mask |= 1u << pick;
        total -= most;
    }
    return mask;
}
