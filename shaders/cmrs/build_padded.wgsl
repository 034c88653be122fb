#import shared/grid
#import cmrs/build_place
// cmrs_build_padded: cmrs-padded's strips (packed row-in-strip numbers) built on the GPU from a
// CSR matrix in GPU buffers (src/methods/cmrs/gpu_build.rs); `arrange_for_small_buffer` in
// format.rs is its CPU twin. A strip's rows are dealt to the team's TEAM / BUF_COLS lane groups,
// longest row first (ties: lower row first) to the least loaded group (ties: lower group); a
// group's rows lie one after another over its BUF_COLS lanes, pass after pass, and the strip is
// padded to its busiest group's passes.
// Rows that make a strip longer than the budget go to the long-row passes instead (the longest
// first): the strip is dealt and placed without them (cmrs/build_long gathers them).
// PASS 0, one invocation per strip: each row's group and start in the group's queue, the strip's
//   padded length (into strip_ptr) and its chunks of CHUNK kept entries beyond the first (both
//   scanned next), the most entries a strip keeps, the entries and rows it leaves to the
//   long-row passes.
// PASS 1, one invocation: the padded total (after the scan), for the host to size the format.
// PASS 2, one invocation per item: padding everywhere (column word and source NONE).
// PASS 3, one workgroup per strip, then one per further chunk of a strip: each entry to its
//   place.

struct PaddedParams {
    nrows: u32,
    height: u32,
    strips: u32,
    team: u32,
    buf_cols: u32,
    items: u32,
    // Entries a strip may keep; its longest rows beyond that go to the long-row passes.
    budget: u32,
    // Placing workgroups (PASS 3): one per strip and per further chunk.
    chunks: u32,
}

@group(0) @binding(3) var<storage, read_write> strip_ptr: array<u32>;
// [each strip's chunks beyond its first (strips + 1 words, scanned after PASS 0), the most
// entries a strip keeps, the padded total, the entries and the rows left to the long-row passes,
// then (group, start in the group's queue) per row]: one buffer, so that the kernel binds no more than the 8 storage buffers every adapter
// allows.
@group(0) @binding(4) var<storage, read_write> plan: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> col_words: array<u32>;
@group(0) @binding(6) var<storage, read_write> vals_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> sources: array<u32>;
@group(0) @binding(8) var<uniform> params: PaddedParams;

override PASS: u32 = 0u;
const NONE: u32 = 0xFFFFFFFFu;

fn more_chunks_before(s: u32) -> u32 {
    return atomicLoad(&plan[s]);
}

// Word k of the counts after the chunk pointers: the most kept, the padded total, the entries and
// the rows left out.
fn stat(k: u32) -> u32 {
    return params.strips + 1u + k;
}

// Row r's group (and start, the word after).
fn row_word(r: u32) -> u32 {
    return params.strips + 5u + 2u * r;
}
// Most lane groups of a team (the widest team, one buffer column each).
const MAX_GROUPS: u32 = 128u;

fn plan_strip(s: u32) {
    let r0 = s * params.height;
    let rows = min(params.height, params.nrows - r0);
    var len: array<u32, 16>;
    var order: array<u32, 16>;
    var total = 0u;
    var left_out = 0u;
    if (row_ptr[r0 + rows] - row_ptr[r0] > params.budget) {
        left_out = long_rows_of(r0, rows, params.budget);
    }
    for (var i = 0u; i < rows; i += 1u) {
        len[i] = row_ptr[r0 + i + 1u] - row_ptr[r0 + i];
        if ((left_out & (1u << i)) != 0u) {
            atomicAdd(&plan[stat(2u)], len[i]);
            atomicAdd(&plan[stat(3u)], 1u);
            len[i] = 0u;
        }
        total += len[i];
        // Insertion by length, longest first; equal lengths keep row order. (A loop with
        // breaks: written as `while (j > 0u && len[order[j - 1u]] < len[i])`, llvmpipe through
        // GL dealt rows wrongly, and the plan's products were wrong on 89 of 6000 rows.)
        var j = i;
        loop {
            if (j == 0u) {
                break;
            }
            if (len[order[j - 1u]] >= len[i]) {
                break;
            }
            order[j] = order[j - 1u];
            j -= 1u;
        }
        order[j] = i;
    }
    let groups = params.team / params.buf_cols;
    var load: array<u32, MAX_GROUPS>;
    for (var g = 0u; g < groups; g += 1u) {
        load[g] = 0u;
    }
    var busiest = 0u;
    for (var t = 0u; t < rows; t += 1u) {
        let r = order[t];
        if (len[r] == 0u) {
            continue;
        }
        var least = 0u;
        for (var g = 1u; g < groups; g += 1u) {
            if (load[g] < load[least]) {
                least = g;
            }
        }
        atomicStore(&plan[row_word(r0 + r)], least);
        atomicStore(&plan[row_word(r0 + r) + 1u], load[least]);
        load[least] += len[r];
        busiest = max(busiest, load[least]);
    }
    strip_ptr[s] = (busiest + params.buf_cols - 1u) / params.buf_cols * params.team;
    atomicStore(&plan[s], more_chunks(total));
    atomicMax(&plan[stat(0u)], total);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (PASS == 0u) {
        let s = g * WG + lid;
        if (s < params.strips) {
            plan_strip(s);
        } else if (s == params.strips) {
            strip_ptr[s] = 0u;
            atomicStore(&plan[s], 0u);
        }
        return;
    }
    if (PASS == 1u) {
        if (g == 0u && lid == 0u) {
            atomicStore(&plan[stat(1u)], strip_ptr[params.strips]);
        }
        return;
    }
    if (PASS == 2u) {
        let i = g * WG + lid;
        if (i < params.items) {
            col_words[i] = NONE;
            sources[i] = NONE;
        }
        return;
    }
    // PASS 3: a chunk of a strip (workgroups past the last chunk, in a grid split over two
    // dimensions, return).
    if (g >= params.chunks) {
        return;
    }
    let chunk = locate_chunk(g, lid, params.strips);
    let r0 = chunk.x * params.height;
    let rows = min(params.height, params.nrows - r0);
    load_strip(r0, rows, lid, params.budget);
    let at = strip_ptr[chunk.x];
    let end = min(kept[rows], (chunk.y + 1u) * CHUNK);
    for (var k = chunk.y * CHUNK + lid; k < end; k += WG) {
        let r = strip_row(k);
        let e = ptrs[r] + (k - kept[r]);
        let group = atomicLoad(&plan[row_word(r0 + r)]);
        let q = atomicLoad(&plan[row_word(r0 + r) + 1u]) + (e - ptrs[r]);
        let pos = at + q / params.buf_cols * params.team + group * params.buf_cols
            + q % params.buf_cols;
        place(pos, e, r);
    }
}
