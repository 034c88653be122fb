#import cmrs/build_common
// What the two placing builds of CMRS strips share (cmrs/build, cmrs/build_padded): the chunk of
// a strip a workgroup takes, a workgroup's copy of its strip's row pointers, and writing one
// entry into the format (into `col_words`, `vals_out` and `sources`, which each importer binds).

// Kept entries one placing workgroup takes: 32 per invocation, so that an invocation's loops stay
// far below llvmpipe's 65 535 back edges however long a strip is.
const CHUNK: u32 = 2048u;

var<workgroup> ptrs: array<u32, 17>;
// Entries of the strip's rows before each row, leaving out the rows handed to the long-row passes.
var<workgroup> kept: array<u32, 17>;
// The rows of the strip left to the long-row passes (bit i: row i of the strip).
var<workgroup> strip_long: u32;
// The strip and chunk this workgroup places.
var<workgroup> chunk_at: vec2<u32>;

// The strip and its chunk that placing workgroup g takes: workgroup s takes strip s's first
// chunk, and the workgroups after the strips its other chunks, strip by strip (the last strip
// whose first such workgroup, `more_chunks_before(s)` from its importer's scanned counts, is at
// most g; strips of one chunk have none). The whole workgroup calls it.
fn locate_chunk(g: u32, lid: u32, strips: u32) -> vec2<u32> {
    if (g < strips) {
        return vec2<u32>(g, 0u);
    }
    if (lid == 0u) {
        let x = g - strips;
        var lo = 0u;
        var hi = strips;
        while (lo < hi) {
            let mid = hi - (hi - lo) / 2u;
            if (more_chunks_before(mid) <= x) {
                lo = mid;
            } else {
                hi = mid - 1u;
            }
        }
        chunk_at = vec2<u32>(lo, 1u + x - more_chunks_before(lo));
    }
    return workgroupUniformLoad(&chunk_at);
}

// The chunks of CHUNK entries after the first that a strip keeping `kept` entries needs.
fn more_chunks(kept: u32) -> u32 {
    return select(0u, (kept - 1u) / CHUNK, kept > 0u);
}

// The pointers of rows r0..r0 + rows into `ptrs`, and into `kept` those of the entries the strip
// keeps (the whole workgroup calls it). Returns the rows left to the long-row passes.
fn load_strip(r0: u32, rows: u32, lid: u32, budget: u32) -> u32 {
    if (lid <= rows) {
        ptrs[lid] = row_ptr[r0 + lid];
    }
    workgroupBarrier();
    if (lid == 0u) {
        let mask = long_rows_of(r0, rows, budget);
        var sum = 0u;
        for (var i = 0u; i < rows; i += 1u) {
            kept[i] = sum;
            if ((mask & (1u << i)) == 0u) {
                sum += ptrs[i + 1u] - ptrs[i];
            }
        }
        kept[rows] = sum;
        strip_long = mask;
    }
    workgroupBarrier();
    return strip_long;
}

// The strip row holding the strip's k-th kept entry (a scan of at most 16 pointers; rows left to
// the long-row passes hold none).
fn strip_row(k: u32) -> u32 {
    var r = 0u;
    while (kept[r + 1u] <= k) {
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
