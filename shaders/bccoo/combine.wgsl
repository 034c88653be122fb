#import shared/grid
#import shared/common
// BCCOO+'s second pass (section 2.3): y = alpha * (sum of the slices' partial results) + beta * y.
// Empty block rows of the stacked matrix are not stored, so their results are not either: the
// row map says which stacked block rows are (one bit each) and how many come before each bitmap
// word; a row empty in every slice gets beta * y (see src/methods/bccoo/format.rs).

// Mirrors `CombineParams` in src/methods/bccoo/mod.rs.
struct CombineParams {
    nrows: u32,
}

@group(0) @binding(0) var<storage, read> partial: array<scalar>;
@group(0) @binding(1) var<storage, read_write> y: array<scalar>;
@group(0) @binding(2) var<uniform> coeffs: Coeffs;
@group(0) @binding(3) var<uniform> combine: CombineParams;
// Per 32 stacked block rows: their presence bits, and the stored block rows before them.
@group(0) @binding(4) var<storage, read> row_map: array<vec2<u32>>;

override WG_SIZE: u32 = 256u;
// Constants, so that finding a row's block row is no integer division and the loop over the
// slices unrolls (every slice's loads in flight at once: the pass is short and latency-bound).
override HEIGHT: u32 = 1u;
override SLICES: u32 = 2u;
// Whether any block row is empty (else stacked row q's result is at q and the map is unused).
override MAPPED: bool = true;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG_SIZE + lid;
    if (i < combine.nrows) {
        var s = scalar(0);
        for (var k = 0u; k < SLICES; k++) {
            let q = k * combine.nrows + i;
            if (!MAPPED) {
                s += partial[q];
                continue;
            }
            let block_row = q / HEIGHT;
            let map = row_map[block_row / 32u];
            let bit = block_row % 32u;
            if (((map.x >> bit) & 1u) != 0u) {
                let stored = map.y + countOneBits(map.x & ((1u << bit) - 1u));
                s += partial[stored * HEIGHT + q % HEIGHT];
            }
        }
        write_y(i, s);
    }
}
