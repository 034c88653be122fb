#import shared/grid
#import cmrs/build_common
// cmrs_build_long: the rows that `cmrs` and `cmrs-padded` strips leave to the long-row passes,
// gathered on the GPU (src/methods/cmrs/gpu_build.rs), as the host build copies them out:
// their entries one row after another in row order, with each entry's CSR index for value
// updates, and row pointers over them (zero entries for every other row), which the long-row
// passes' own GPU build reads (src/methods/passes/long_rows.rs).
// PASS 0, one invocation per strip: each row's entries left to the long-row passes (0 for a row
//   the strip keeps) into `long_ptr`, scanned next into pointers; with STRIPS, the entries the
//   strip keeps into `strip_ptr`, scanned next too (`cmrs`: its strips' pointers without them).
// PASS 1, one invocation per gathered entry: its row by binary search over `long_ptr`, then the
//   entry's column, value and CSR index.

struct LongParams {
    nrows: u32,
    height: u32,
    strips: u32,
    budget: u32,
    // Entries gathered (PASS 1's invocations).
    entries: u32,
    // 1: PASS 0 writes the kept entries of each strip into `strip_ptr`.
    strips_too: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(3) var<storage, read_write> strip_ptr: array<u32>;
@group(0) @binding(4) var<storage, read_write> col_words: array<u32>;
@group(0) @binding(5) var<storage, read_write> vals_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> sources: array<u32>;
@group(0) @binding(7) var<storage, read_write> long_ptr: array<u32>;
@group(0) @binding(8) var<uniform> params: LongParams;

override PASS: u32 = 0u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG + lid;
    if (PASS == 0u) {
        if (i < params.strips) {
            let r0 = i * params.height;
            let rows = min(params.height, params.nrows - r0);
            var left_out = 0u;
            if (row_ptr[r0 + rows] - row_ptr[r0] > params.budget) {
                left_out = long_rows_of(r0, rows, params.budget);
            }
            var keeps = 0u;
            for (var k = 0u; k < rows; k += 1u) {
                let len = row_ptr[r0 + k + 1u] - row_ptr[r0 + k];
                let gone = (left_out & (1u << k)) != 0u;
                long_ptr[r0 + k] = select(0u, len, gone);
                keeps += select(len, 0u, gone);
            }
            if (params.strips_too != 0u) {
                strip_ptr[i] = keeps;
            }
        } else if (i == params.strips) {
            long_ptr[params.nrows] = 0u;
            if (params.strips_too != 0u) {
                strip_ptr[i] = 0u;
            }
        }
        return;
    }
    // PASS 1: gathered entry i, of the last row whose pointer is at most i (rows before it that
    // the strips keep have no entries here).
    if (i >= params.entries) {
        return;
    }
    var lo = 0u;
    var hi = params.nrows;
    while (lo < hi) {
        let mid = hi - (hi - lo) / 2u;
        if (long_ptr[mid] <= i) {
            lo = mid;
        } else {
            hi = mid - 1u;
        }
    }
    let e = row_ptr[lo] + (i - long_ptr[lo]);
    col_words[i] = col_idx[e];
    sources[i] = e;
    for (var w = 0u; w < VAL_WORDS; w += 1u) {
        vals_out[i * VAL_WORDS + w] = vals[e * VAL_WORDS + w];
    }
}
