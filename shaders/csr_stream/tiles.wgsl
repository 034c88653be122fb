// A csr-stream tile as its kernels read it, from `tile_rows` and `row_ptr`, both declared by the
// kernel. `tile_rows`: the tile count, where the chunk words start (TILE_BASES_AT), from
// TILE_FIRST_ROWS each tile's first row and first entry (a tile reads its bounds in one go, not
// its rows and then their pointers), the row count and entry count after the last, then the
// chunk words. Past the count (a grid's last row of
// workgroups) a tile is empty, so that every invocation still reaches the kernel's barriers.
struct Tile {
    first_row: u32,
    end_row: u32,
    // Its first entry and its entries.
    first: u32,
    count: u32,
    // Whether its entries are in column order with places (not one long row, left in CSR order).
    sorted: bool,
}

fn tile_of(t: u32) -> Tile {
    var first_row = 0u;
    var end_row = 0u;
    var first = 0u;
    var end = 0u;
    if (t < tile_rows[0]) {
        let at = TILE_FIRST_ROWS + 2u * t;
        first_row = tile_rows[at];
        first = tile_rows[at + 1u];
        end_row = tile_rows[at + 2u];
        end = tile_rows[at + 3u];
    }
    let count = end - first;
    // A row over TILE / 4 entries is long (`long_row` in src/methods/csr_stream/format.rs).
    return Tile(first_row, end_row, first, count, count <= TILE / 4u || end_row - first_row > 1u);
}

// A sorted tile's entries in chunks of CHUNK, each with its first column in `tile_rows`.
const CHUNK: u32 = 64u;
// Low bits of a packed entry: the column's offset from its chunk's first column; above, its place.
const PLACE_SHIFT: u32 = 21u;
const OFFSET_MASK: u32 = 0x1fffffu;
// A chunk whose columns span 2^PLACE_SHIFT or more: plain columns, places in `places` (no chunk
// starts at this column: a matrix has at most u32::MAX columns).
const RAW_CHUNK: u32 = 0xffffffffu;

// Words of `tile_rows`: where the chunk words start, and where the (first row, first entry) pairs
// start (the tile count is word 0).
const TILE_BASES_AT: u32 = 1u;
const TILE_FIRST_ROWS: u32 = 2u;

// Where tile t's first chunk word is in `tile_rows`: tiles before it hold `first` entries, so
// fewer than first / CHUNK + t chunks.
fn first_chunk(t: u32, first: u32) -> u32 {
    return tile_rows[TILE_BASES_AT] + first / CHUNK + t;
}
