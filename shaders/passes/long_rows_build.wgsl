#import shared/grid
// long_rows_build: the long-row passes' `desc` (shaders/passes/long_rows.wgsl) built on the GPU
// from a CSR matrix's row pointers (src/methods/passes/long_rows.rs; `stages` there is its CPU
// twin). The pieces index the plan's own copies of the whole column and value arrays, and split
// each long row where the host's do, so both give the same sums bit for bit.
// PASS 0, one invocation per row pointer: is_long[r] and pieces[r] (0 at r = nrows, so that the
//   exclusive scans that follow leave the totals there).
// PASS 1, one invocation per row pointer: each long row's (row, first piece, end piece), the
//   totals and the two passes' indirect grids.
// PASS 2, one invocation per possible piece: its bounds; its row by a binary search over the
//   long rows' first pieces. No invocation loops longer than that search.

struct BuildParams {
    nrows: u32,
    // Entries beyond which a row is long.
    long_row: u32,
    // Entries per piece (WG_SIZE * PER_LANE of the passes).
    piece: u32,
    max_dim: u32,
}

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read_write> longs_before: array<u32>;
@group(0) @binding(2) var<storage, read_write> pieces_before: array<u32>;
@group(0) @binding(3) var<storage, read_write> desc: array<u32>;
@group(0) @binding(4) var<storage, read_write> indirect: array<u32>;
@group(0) @binding(5) var<uniform> p: BuildParams;

override PASS: u32 = 0u;
const WG: u32 = 256u;

fn row_len(r: u32) -> u32 {
    return row_ptr[r + 1u] - row_ptr[r];
}

// indirect[at..at + 3]: the grid of `groups` workgroups.
fn set_grid(at: u32, groups: u32) {
    let g = indirect_grid(groups, p.max_dim);
    indirect[at] = g.x;
    indirect[at + 1u] = g.y;
    indirect[at + 2u] = g.z;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG + lid;
    if (PASS == 0u) {
        if (i > p.nrows) {
            return;
        }
        let long = i < p.nrows && row_len(i) > p.long_row;
        longs_before[i] = select(0u, 1u, long);
        pieces_before[i] = select(0u, (row_len(min(i, p.nrows - 1u)) + p.piece - 1u) / p.piece, long);
    } else if (PASS == 1u) {
        if (i > p.nrows) {
            return;
        }
        let pieces = pieces_before[p.nrows];
        if (i == p.nrows) {
            let longs = longs_before[p.nrows];
            desc[0] = pieces;
            desc[1] = longs;
            set_grid(0u, pieces);
            set_grid(3u, longs);
        } else if (row_len(i) > p.long_row) {
            let at = 2u + 2u * pieces + 3u * longs_before[i];
            desc[at] = i;
            desc[at + 1u] = pieces_before[i];
            desc[at + 2u] = pieces_before[i] + (row_len(i) + p.piece - 1u) / p.piece;
        }
    } else {
        let pieces = desc[0];
        if (i >= pieces) {
            return;
        }
        let rows = 2u + 2u * pieces;
        // The last long row whose first piece is at most i.
        var lo = 0u;
        var hi = desc[1];
        while (hi - lo > 1u) {
            let mid = (lo + hi) / 2u;
            if (desc[rows + 3u * mid + 1u] <= i) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let r = desc[rows + 3u * lo];
        let begin = row_ptr[r] + (i - desc[rows + 3u * lo + 1u]) * p.piece;
        desc[2u + 2u * i] = begin;
        desc[3u + 2u * i] = min(begin + p.piece, row_ptr[r + 1u]);
    }
}
