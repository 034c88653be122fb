#import shared/grid
// csr_stream_build_tiles: csr-stream's tiles cut on the GPU from a CSR's row pointers, the
// rule of `starts_tile` in src/methods/csr_stream/format.rs (its CPU twin), which reads only a
// row and the one before.
// PASS 0, one invocation per row pointer: starts[r] = 1 where row r starts a tile (0 at
//   r = nrows, so that the exclusive scan that follows leaves the count there).
// PASS 1, one invocation per row pointer: the tile count, where the chunk words start, each
//   tile's first row and entry, and nrows and nnz after the last (the layout of csr_stream/tiles.wgsl), and the
//   product's indirect grid.

struct TileParams {
    nrows: u32,
    // Entries of a tile (TILE of the product's kernel).
    tile: u32,
    max_dim: u32,
    // Where the chunk words start in `tile_rows` (after the most tiles there can be).
    bases_at: u32,
}

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read_write> starts: array<u32>;
@group(0) @binding(2) var<storage, read_write> tile_rows: array<u32>;
@group(0) @binding(3) var<storage, read_write> indirect: array<u32>;
@group(0) @binding(4) var<uniform> p: TileParams;

override PASS: u32 = 0u;
const WG: u32 = 256u;

fn row_len(r: u32) -> u32 {
    return row_ptr[r + 1u] - row_ptr[r];
}

fn starts_tile(r: u32) -> bool {
    if (r == 0u) {
        return true;
    }
    // `long_row` in src/methods/csr_stream/format.rs (the product's tiles.wgsl repeats it).
    let long = p.tile / 4u;
    let window = p.tile - long;
    let key = row_ptr[r] / window + r / p.tile;
    let key_before = row_ptr[r - 1u] / window + (r - 1u) / p.tile;
    return row_len(r) > long || row_len(r - 1u) > long || key != key_before;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let r = linear_group(wid, nwg) * WG + lid;
    if (r > p.nrows) {
        return;
    }
    if (PASS == 0u) {
        starts[r] = select(0u, 1u, r < p.nrows && starts_tile(r));
    } else if (r == p.nrows) {
        let tiles = starts[r];
        tile_rows[0] = tiles;
        tile_rows[1] = p.bases_at;
        tile_rows[2u + 2u * tiles] = p.nrows;
        tile_rows[3u + 2u * tiles] = row_ptr[p.nrows];
        let g = indirect_grid(tiles, p.max_dim);
        indirect[0] = g.x;
        indirect[1] = g.y;
        indirect[2] = g.z;
    } else if (starts_tile(r)) {
        tile_rows[2u + 2u * starts[r]] = r;
        tile_rows[3u + 2u * starts[r]] = row_ptr[r];
    }
}
