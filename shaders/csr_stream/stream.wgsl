#import shared/grid
#import shared/common
#import shared/csr_bindings
#import shared/csr_chunk
#import csr_stream/tile_{scalar}
#import csr_stream/tiles
// csr-stream: one workgroup per tile of rows holding at most TILE entries (CSR-Stream,
// Greathouse & Daga). The tile's entries are stored in column order, so that neighbouring
// invocations gather neighbouring parts of x (gathers spread over all of a large x are slower on
// some drivers: docs/measurements.md, "The gather limit"); each product goes to its place in the tile's CSR order in workgroup
// memory, and each row is then summed from there in CSR order. A long row (over TILE / 4
// entries) is a tile of its own, left to the long-row passes (its sum here is 0); other tiles
// hold fewer than TILE entries (src/methods/csr_stream/format.rs says how rows are cut).

// The tile count, the first row of each tile in the chunk, then the chunk's row count.
@group(0) @binding(7) var<storage, read> tile_rows: array<u32>;
// Each entry's place in its tile's CSR order, two 16-bit places per word.
@group(0) @binding(8) var<storage, read> places: array<u32>;

override WG_SIZE: u32 = 256u;

var<workgroup> products: array<scalar, TILE>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let tile = tile_of(linear_group(wid, nwg));
    let first = tile.first;
    if (tile.sorted) {
        for (var i = lid; i < tile.count; i += WG_SIZE) {
            let e = first + i;
            let place = (places[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
            products[place] = vals[e] * x[col_idx[e]];
        }
    }
    workgroupBarrier();
    for (var row = tile.first_row + lid; row < tile.end_row; row += WG_SIZE) {
        var sum = scalar(0);
        if (tile.sorted) {
            let end = row_ptr[row + 1u] - first;
            for (var k = row_ptr[row] - first; k < end; k++) {
                sum += products[k];
            }
        }
        write_y(chunk.row_begin + row, sum);
    }
}
