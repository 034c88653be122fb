#import shared/grid
#import shared/common
#import shared/csr_bindings
#import shared/csr_chunk
#import csr_stream/tile_{scalar}
#import csr_stream/tiles
// csr-stream: one workgroup per tile of rows holding at most TILE entries (CSR-Stream,
// Greathouse & Daga). The tile's entries are stored in column order, so that neighbouring
// invocations gather neighbouring parts of x (gathers spread over all of a large x are slower on
// some drivers: docs/measurements.md, "The gather limit"); each product goes to its place in
// the tile's CSR order in workgroup memory, and each row is then summed from there in CSR
// order. A long row (over TILE / 4 entries) is a tile of its own, in CSR order: up to WG_SIZE *
// IN_TILE_PER_LANE entries the workgroup sums it here (each invocation a strided share, then one
// invocation the shares), a longer one is left to the long-row passes (its sum here is 0); other
// tiles hold fewer than TILE entries (src/methods/csr_stream/format.rs says how rows are cut). In
// a sorted tile, `col_idx` holds each entry's packed word (`entry`).

// The tiles and chunk words (csr_stream/tiles.wgsl).
@group(0) @binding(7) var<storage, read> tile_rows: array<u32>;
// Each entry's place in its tile's CSR order, two 16-bit places per word (read for raw chunks).
@group(0) @binding(8) var<storage, read> places: array<u32>;

override WG_SIZE: u32 = 256u;
// Entries per invocation of a long row summed in its tile (`IN_TILE_PER_LANE` in format.rs).
const IN_TILE_PER_LANE: u32 = 16u;

var<workgroup> products: array<scalar, TILE>;

fn place_of(e: u32) -> u32 {
    return (places[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
}

// Entry e (the i-th of its tile) as (column, place). A sorted tile's entries go in chunks of
// CHUNK: a chunk whose columns span less than 2^PLACE_SHIFT holds each entry as one word, the
// place above the column's offset from the chunk's first column (so a gather costs no separate
// place read); a wider chunk (RAW_CHUNK) holds plain columns, its places in `places`.
fn entry(e: u32, i: u32, chunks: u32) -> vec2<u32> {
    let base = tile_rows[chunks + i / CHUNK];
    let w = col_idx[e];
    if (base == RAW_CHUNK) {
        return vec2<u32>(w, place_of(e));
    }
    return vec2<u32>(base + (w & OFFSET_MASK), w >> PLACE_SHIFT);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_group(wid, nwg);
    let tile = tile_of(t);
    let first = tile.first;
    let in_tile = !tile.sorted && tile.count <= WG_SIZE * IN_TILE_PER_LANE;
    if (tile.sorted) {
        let chunks = first_chunk(t, first);
        for (var i = lid; i < tile.count; i += WG_SIZE) {
            let e = first + i;
            let c = entry(e, i, chunks);
            products[c.y] = vals[e] * x[c.x];
        }
    } else if (in_tile) {
        // Coalesced: a long row's columns are in CSR order, neighbouring lanes read neighbours.
        var share = scalar(0);
        for (var e = first + lid; e < first + tile.count; e += WG_SIZE) {
            share += vals[e] * x[col_idx[e]];
        }
        products[lid] = share;
    }
    workgroupBarrier();
    for (var row = tile.first_row + lid; row < tile.end_row; row += WG_SIZE) {
        var sum = scalar(0);
        if (tile.sorted) {
            let end = row_ptr[row + 1u] - first;
            for (var k = row_ptr[row] - first; k < end; k++) {
                sum += products[k];
            }
        } else if (in_tile) {
            // The only row: its WG_SIZE shares, four sums in flight.
            var s = vec4<scalar>(scalar(0));
            for (var k = 0u; k < WG_SIZE; k += 4u) {
                s += vec4<scalar>(products[k], products[k + 1u], products[k + 2u], products[k + 3u]);
            }
            sum = (s.x + s.y) + (s.z + s.w);
        }
        write_y(chunk.row_begin + row, sum);
    }
}
