#import shared/grid
#import shared/rightmost_row
// speculative_analyse: the structure analysis of src/methods/speculative/tiles.rs on the GPU, for
// a matrix given in GPU buffers (gpu_build.rs). Passes over the same bindings:
// PASS 0, one invocation per tile boundary: the tile rows the kernel reads after the row pointers.
// PASS 1, one invocation per row: an empty row whose pointer p lies in (begin, end] of a live
//   tile makes that tile dirty (counted once per tile); the leading empty rows.
// PASS 2, one invocation per team: whether a row crosses into it (counted), and at the first
//   team of each synchronizer run, the run's length (a binary search over the teams), appended
//   to the short runs from the front of `runs` or to the long ones from its back.

struct AnalyseParams {
    nrows: u32,
    nnz: u32,
    tile_len: u32,
    tiles_per_team: u32,
    // Tile boundaries written by PASS 0 (teams launched x tiles per team, plus the end).
    boundaries: u32,
    // Longest run counted as short (LONG_RUN in mod.rs).
    long_run: u32,
    // Capacity of `runs`.
    capacity: u32,
    pad: u32,
}

// The row pointers, and the tile rows after them (written by PASS 0).
@group(0) @binding(0) var<storage, read_write> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read_write> dirty: array<atomic<u32>>;
// Mirrors `Counts` in gpu_build.rs.
@group(0) @binding(2) var<storage, read_write> counts: array<atomic<u32>, 8>;
@group(0) @binding(3) var<storage, read_write> runs: array<vec2<u32>>;
@group(0) @binding(4) var<uniform> params: AnalyseParams;

override PASS: u32 = 0u;

const DIRTY_TILES: u32 = 0u;
const SYNCHRONIZED: u32 = 1u;
const SHORT_RUNS: u32 = 2u;
const LONG_RUNS: u32 = 3u;
const LEADING_EMPTY: u32 = 4u;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * 256u + lid;
    if (PASS == 0u) {
        if (i < params.boundaries) {
            let b = min(mul_clamped(i, params.tile_len), params.nnz);
            row_ptr[params.nrows + 1u + i] = rightmost_row(b, params.nrows);
        }
    } else if (PASS == 1u) {
        if (i == 0u) {
            atomicStore(&counts[LEADING_EMPTY], rightmost_row(0u, params.nrows));
        }
        if (i >= params.nrows) {
            return;
        }
        let p = row_ptr[i];
        if (p > 0u && row_ptr[i + 1u] == p) {
            let t = (p - 1u) / params.tile_len;
            let bit = 1u << (t % 32u);
            if ((atomicOr(&dirty[t / 32u], bit) & bit) == 0u) {
                atomicAdd(&counts[DIRTY_TILES], 1u);
            }
        }
    } else {
        let team_len = params.tile_len * params.tiles_per_team;
        let live = params.nnz / team_len + select(0u, 1u, params.nnz % team_len != 0u);
        if (i >= live) {
            return;
        }
        let begin = i * team_len;
        let row = rightmost_row(begin, params.nrows);
        if (row_ptr[row] == begin) {
            return;
        }
        atomicAdd(&counts[SYNCHRONIZED], 1u);
        if (i > 0u) {
            let prev = rightmost_row(begin - team_len, params.nrows);
            if (prev == row && row_ptr[prev] < begin - team_len) {
                return;
            }
        }
        // The last team the row crosses into: teams' rows never decrease.
        var lo = i;
        var hi = live;
        while (hi - lo > 1u) {
            let mid = lo + (hi - lo) / 2u;
            if (rightmost_row(mid * team_len, params.nrows) == row) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let run = vec2<u32>(i, lo - i + 1u);
        if (run.y <= params.long_run) {
            runs[atomicAdd(&counts[SHORT_RUNS], 1u)] = run;
        } else {
            runs[params.capacity - 1u - atomicAdd(&counts[LONG_RUNS], 1u)] = run;
        }
    }
}

// i * n, or 0xFFFFFFFF where that overflows 32 bits (tile boundaries past the last nonzero).
fn mul_clamped(i: u32, n: u32) -> u32 {
    if (n != 0u && i > 0xFFFFFFFFu / n) {
        return 0xFFFFFFFFu;
    }
    return i * n;
}
