#import shared/grid
#import cmrs/build_place
// cmrs_build: the CMRS format (packed row-in-strip numbers, no padding) built on the GPU from a
// CSR matrix in GPU buffers (src/methods/cmrs/gpu_build.rs); format.rs is its CPU twin.
// PASS 0, one invocation per strip pointer: strip_ptr[s] = row_ptr[s * HEIGHT]; each strip's
//   chunks of CHUNK kept entries beyond its first (scanned next: where its further placing
//   workgroups start); and the longest strip (without its long rows), the entries and the rows
//   that strips longer than the budget hand to the long-row passes. Where there are such rows,
//   cmrs/build_long writes the strip pointers over again, without them.
// PASS 1, one workgroup per strip, then one per further chunk of a strip: each entry the strip
//   keeps goes to its place in the strip's items sorted by column, rows in order within a
//   column (with SORT; else it stays in CSR order). Its place is its index in its own row plus,
//   for every other kept row of the strip, the entries there with a smaller column (a row below
//   it) or a column not larger (a row above it): binary searches, so no invocation loops over a
//   whole row.

struct BuildParams {
    nrows: u32,
    height: u32,
    strips: u32,
    sort: u32,
    // Entries a strip may keep; its longest rows beyond that go to the long-row passes.
    budget: u32,
    // Placing workgroups (PASS 1): one per strip and per further chunk.
    chunks: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(3) var<storage, read_write> strip_ptr: array<u32>;
@group(0) @binding(4) var<storage, read_write> col_words: array<u32>;
@group(0) @binding(5) var<storage, read_write> vals_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> sources: array<u32>;
// Each strip's chunks beyond its first (strips + 1 words, scanned after PASS 0), then the
// longest strip kept, the entries and the rows left to the long-row passes.
@group(0) @binding(7) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(8) var<uniform> params: BuildParams;

override PASS: u32 = 0u;

fn more_chunks_before(s: u32) -> u32 {
    return atomicLoad(&counts[s]);
}

// Entries of row r (its range of col_idx) with a column below c, or at most c with `or_equal`.
fn count_before(r: u32, c: u32, or_equal: bool) -> u32 {
    var lo = row_ptr[r];
    var hi = row_ptr[r + 1u];
    let first = lo;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        let m = col_idx[mid];
        if (m < c || (or_equal && m == c)) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo - first;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (PASS == 0u) {
        let s = g * WG + lid;
        if (s <= params.strips) {
            let first = min(s * params.height, params.nrows);
            strip_ptr[s] = row_ptr[first];
            atomicStore(&counts[s], 0u);
            if (s < params.strips) {
                let rows = min(params.height, params.nrows - first);
                var total = row_ptr[first + rows] - row_ptr[first];
                if (total > params.budget) {
                    let mask = long_rows_of(first, rows, params.budget);
                    var left = 0u;
                    for (var i = 0u; i < rows; i += 1u) {
                        if ((mask & (1u << i)) != 0u) {
                            left += row_ptr[first + i + 1u] - row_ptr[first + i];
                        }
                    }
                    total -= left;
                    atomicAdd(&counts[params.strips + 2u], left);
                    atomicAdd(&counts[params.strips + 3u], countOneBits(mask));
                }
                atomicStore(&counts[s], more_chunks(total));
                atomicMax(&counts[params.strips + 1u], total);
            }
        }
        return;
    }
    // PASS 1: a chunk of a strip. A grid split over two dimensions has workgroups past the last
    // chunk: they would read beyond the row pointers (stale data in a larger buffer) and write
    // entries there.
    if (g >= params.chunks) {
        return;
    }
    let chunk = locate_chunk(g, lid, params.strips);
    let r0 = chunk.x * params.height;
    let rows = min(params.height, params.nrows - r0);
    let left_out = load_strip(r0, rows, lid, params.budget);
    let at = strip_ptr[chunk.x];
    let end = min(kept[rows], (chunk.y + 1u) * CHUNK);
    for (var k = chunk.y * CHUNK + lid; k < end; k += WG) {
        let r = strip_row(k);
        let e = ptrs[r] + (k - kept[r]);
        var pos = at + k;
        if (params.sort != 0u) {
            let c = col_idx[e];
            pos = at + (e - ptrs[r]);
            for (var o = 0u; o < rows; o += 1u) {
                if (o != r && (left_out & (1u << o)) == 0u) {
                    pos += count_before(r0 + o, c, o < r);
                }
            }
        }
        place(pos, e, r);
    }
}
