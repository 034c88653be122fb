// A csr-stream tile as its kernels read it, from `tile_rows` (the count, each tile's first row,
// the row count) and `row_ptr`, both declared by the kernel. Past the count (a grid's last row of
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
    if (t < tile_rows[0]) {
        first_row = tile_rows[1u + t];
        end_row = tile_rows[2u + t];
    }
    let first = row_ptr[first_row];
    let count = row_ptr[end_row] - first;
    return Tile(first_row, end_row, first, count, count <= TILE / 4u || end_row - first_row > 1u);
}
