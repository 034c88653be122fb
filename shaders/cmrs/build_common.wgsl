// What the two GPU builds of CMRS strips share (cmrs/build, cmrs/build_padded): the CSR input
// bindings, a workgroup's copy of its strip's row pointers, and writing one entry into the format
// (into `col_words`, `vals_out` and `sources`, which each importer binds).

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<u32>;

// u32 words per value: 1 (f32) or 2 (f64).
override VAL_WORDS: u32 = 1u;
// Bits of the column word holding the row-in-strip number (ROW_BITS in format.rs).
const ROW_BITS: u32 = 4u;
const WG: u32 = 64u;

var<workgroup> ptrs: array<u32, 17>;

// The pointers of rows r0..r0 + rows into `ptrs` (the whole workgroup calls it).
fn load_strip(r0: u32, rows: u32, lid: u32) {
    if (lid <= rows) {
        ptrs[lid] = row_ptr[r0 + lid];
    }
    workgroupBarrier();
}

// The strip row holding entry e (a scan of at most 16 pointers).
fn strip_row(e: u32) -> u32 {
    var r = 0u;
    while (ptrs[r + 1u] <= e) {
        r += 1u;
    }
    return r;
}

// Entry e, of strip row r, as item `pos` of the format.
fn place(pos: u32, e: u32, r: u32) {
    col_words[pos] = (col_idx[e] << ROW_BITS) | r;
    sources[pos] = e;
    for (var w = 0u; w < VAL_WORDS; w += 1u) {
        vals_out[pos * VAL_WORDS + w] = vals[e * VAL_WORDS + w];
    }
}
