#import shared/grid
#import cmrs/build_common
// cmrs_build: the CMRS format (packed row-in-strip numbers, no padding) built on the GPU from a
// CSR matrix in GPU buffers (src/methods/cmrs/gpu_build.rs); format.rs is its CPU twin.
// PASS 0, one invocation per strip pointer: strip_ptr[s] = row_ptr[s * HEIGHT], and the
//   longest strip.
// PASS 1, one workgroup per strip: each entry goes to its place in the strip's items sorted by
//   column, rows in order within a column (with SORT; else it stays in CSR order). Its place
//   is its index in its own row plus, for every other row of the strip, the entries there with
//   a smaller column (a row below it) or a column not larger (a row above it): binary searches,
//   so no invocation loops over a whole row.

struct BuildParams {
    nrows: u32,
    height: u32,
    strips: u32,
    sort: u32,
}

@group(0) @binding(3) var<storage, read_write> strip_ptr: array<u32>;
@group(0) @binding(4) var<storage, read_write> col_words: array<u32>;
@group(0) @binding(5) var<storage, read_write> vals_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> sources: array<u32>;
@group(0) @binding(7) var<storage, read_write> longest: atomic<u32>;
@group(0) @binding(8) var<uniform> params: BuildParams;

override PASS: u32 = 0u;

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
            if (s < params.strips) {
                let end = min(first + params.height, params.nrows);
                atomicMax(&longest, row_ptr[end] - row_ptr[first]);
            }
        }
        return;
    }
    // PASS 1: strip g. A grid split over two dimensions has workgroups past the last strip: they
    // would read beyond the row pointers (stale data in a larger buffer) and write entries there.
    if (g >= params.strips) {
        return;
    }
    let r0 = g * params.height;
    let rows = min(params.height, params.nrows - r0);
    load_strip(r0, rows, lid);
    let base = ptrs[0];
    let len = ptrs[rows] - base;
    for (var k = lid; k < len; k += WG) {
        let e = base + k;
        let r = strip_row(e);
        let c = col_idx[e];
        var pos = e;
        if (params.sort != 0u) {
            for (var o = 0u; o < rows; o += 1u) {
                if (o != r) {
                    pos += count_before(r0 + o, c, o < r);
                }
            }
            // Entries of the rows before r were counted twice: once in e - base.
            pos -= ptrs[r] - base;
        }
        place(pos, e, r);
    }
}
