#import shared/grid
#import shared/common
#import shared/lanes_{lanes}
#import bccoo/common
// bccoo: the matrix-based segmented sum of yaSpMV (section 3) over the BCCOO / BCCOO+ format.
// Each invocation takes a thread tile of `params.tile` consecutive blocks and does a sequential segmented
// sum over it, the bit flags marking row stops; the workgroup then scans the invocations' last
// partial sums, and each completed block row is written once. Carries between workgroups:
//   - SINGLE_PASS = 1 (adjacent synchronization, section 3.2.4): workgroups take logical ids from
//     an atomic ticket, so a workgroup only ever waits on ones that have started; every workgroup
//     publishes its slot before it waits on anything, and only a workgroup whose first row began
//     earlier waits, on the slots of its chain (all published by workgroups that never wait
//     before publishing), with a bounded spin. A workgroup whose spin runs out keeps its first
//     row, without the carry, in a pending slot and puts itself on the repair list; the last
//     workgroup to finish adds those carries (`finish_product`). No second kernel.
//   - SINGLE_PASS = 0 (two-pass): nobody waits; shaders/bccoo/carry.wgsl adds the carries afterwards.

// Words of `state`: the ticket that hands out logical workgroup ids, the count of finished
// workgroups (plus `stall_unit` per workgroup whose wait ran out), the length of the repair list,
// a running count of stalled waits (diagnostics), then the repair list (SENTINEL where unwritten).
const STATE_TICKET: u32 = 0u;
const STATE_DONE: u32 = 1u;
const STATE_REPAIR_COUNT: u32 = 2u;
const STATE_STALLS: u32 = 3u;
const STATE_LIST: u32 = 4u;

@group(0) @binding(5) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read> flags: array<u32>;
@group(0) @binding(7) var<storage, read> cols: array<u32>;
@group(0) @binding(8) var<storage, read> vals: array<scalar>;
@group(0) @binding(9) var<storage, read> x: array<scalar>;

override WG_SIZE: u32 = 256u;
override LANES: u32 = 32u;
override WIDTH: u32 = 1u;
// Column coding: 0 u32, 1 two 16-bit columns per word, 2 16-bit differences with escapes.
override COLS: u32 = 0u;
// 1: completed rows written straight to y; 2: gathered in a workgroup result cache of CACHE_ROWS
// block rows and written coalesced (rows beyond the cache go straight to y).
override STRATEGY: u32 = 2u;
override CACHE_FACTOR: u32 = 1u;
// Per-thread writes need no cache: one row keeps the array declared without taking the workgroup
// memory (and occupancy) the cache would.
override CACHE_ROWS: u32 = select(1u, CACHE_FACTOR * WG_SIZE, STRATEGY == 2u);
override SINGLE_PASS: u32 = 1u;
// Polls per slot word before a waiting workgroup gives up and leaves its carry to the last
// workgroup of the dispatch; 0: no workgroup waits, the last one adds every carry.
override SPIN_LIMIT: u32 = 1048576u;
// 1: the invocations' stores that the last workgroup reads come before the workgroup counts
// itself finished (an execution barrier), for adapters whose invocations can be held up for
// longer than its polls (CPU adapters run a workgroup as chunks on OS threads). 0 where every
// started workgroup keeps running, as single pass by default assumes: the polls cover the lag.
override ORDERED_FINISH: u32 = 1u;
// Polls per word for the last workgroup, which only reads words whose writers' workgroups have
// counted themselves finished: a bound for the sake of having one.
const FINISH_SPIN_LIMIT: u32 = 1u << 24u;

const DELTA_ESCAPE: u32 = 0x8000u;
// Blocks whose loads are issued together (every tile size is a multiple of it); `run_group` is
// unrolled for exactly 4, which measured best overall (docs/bccoo.md).
const LOAD_BATCH: u32 = 4u;

var<workgroup> group_shared: vec2<u32>;
var<workgroup> done_shared: u32;
var<workgroup> cache: array<scalar, CACHE_ROWS * HEIGHT>;
var<workgroup> chain_failed: atomic<u32>;

fn half_word(p: u32) -> u32 {
    return (cols[p >> 1u] >> ((p & 1u) * 16u)) & 0xFFFFu;
}

// Block p's column word: the column itself (COLS 0, 1) or its 16-bit difference code (COLS 2).
fn column_code(p: u32) -> u32 {
    if (COLS == 0u) {
        return cols[p];
    }
    return half_word(p);
}

// One block times x: HEIGHT sums (columns past the matrix are padding and hold zeros). +0 values
// are skipped: fill, zero blocks and padding must add nothing even where x is NaN or Inf. A
// stored zero is kept as -0 (format.rs), so it is multiplied: 0 * NaN and 0 * Inf make the row
// NaN, as the CSR reference does, and 0 * finite adds nothing.
fn block_product(p: u32, col: u32) -> rows {
    var out = rows(scalar(0));
    for (var j = 0u; j < WIDTH; j++) {
        let c = col * WIDTH + j;
        if (c < params.ncols) {
            let xv = x[c];
            for (var r = 0u; r < HEIGHT; r++) {
                let v = vals[(r * params.padded_blocks + p) * WIDTH + j];
                put_row(&out, r, row_of(out, r) + select(v * xv, scalar(0), is_positive_zero(v)));
            }
        }
    }
    return out;
}

fn emit(brow: u32, group_row: u32, v: rows) {
    if (STRATEGY == 2u) {
        let local = brow - group_row;
        if (local < CACHE_ROWS) {
            for (var r = 0u; r < HEIGHT; r++) {
                cache[local * HEIGHT + r] = row_of(v, r);
            }
            return;
        }
    }
    write_rows(brow, v);
}

// The column words of blocks p, p + WG_SIZE, p + 2 WG_SIZE, p + 3 WG_SIZE (one load batch).
fn column_codes(p: u32) -> vec4<u32> {
    return vec4<u32>(column_code(p), column_code(p + WG_SIZE), column_code(p + 2u * WG_SIZE),
                     column_code(p + 3u * WG_SIZE));
}

// The block's column from its code: the code itself, or (COLS 2) the running column moved by a
// 16-bit difference, or the next escaped full column.
fn next_column(code: u32, col: ptr<function, u32>, esc: ptr<function, u32>) -> u32 {
    if (COLS == 2u) {
        if (code == DELTA_ESCAPE) {
            *col = cols[*esc];
            *esc += 1u;
        } else {
            *col = u32(i32(*col) + (i32(code << 16u) >> 16u));
        }
    } else {
        *col = code;
    }
    return *col;
}

// One block of the sequential segmented sum; bit 0 of `bits` clear is a row stop. The first stop's
// sum still needs what came before the tile, so it is kept in `first` rather than written.
fn segment_step(v: rows, bits: u32, sum: ptr<function, rows>, first: ptr<function, rows>,
                stops: ptr<function, u32>, first_row: u32, group_row: u32) {
    *sum += v;
    if ((bits & 1u) == 0u) {
        if (*stops == 0u) {
            *first = *sum;
        } else {
            emit(first_row + *stops, group_row, *sum);
        }
        *stops += 1u;
        *sum = rows(scalar(0));
    }
}

// The paper's fast path when every invocation holds a row stop: each segment of the scan is one
// invocation long, so the scan is a shift.
fn group_shift(v: rows, slot: u32) -> GroupScan {
    gs_val[slot] = v;
    workgroupBarrier();
    var out = GroupScan(rows(scalar(0)), true);
    if (slot > 0u) {
        out = GroupScan(gs_val[slot - 1u], false);
    }
    workgroupBarrier();
    return out;
}

// Returns whether the workgroup's wait for its carry ran out (single pass).
fn run_group(g: u32, info: u32, slot: u32, l: Lanes, sh: Shape) -> bool {
    let t = g * WG_SIZE + slot;
    let first_row = aux[t];
    let group_row = aux[g * WG_SIZE];
    let tile = params.tile;
    let base = g * WG_SIZE * tile;
    var sum = rows(scalar(0));
    var first = sum;
    var stops = 0u;
    var word = 0u;
    var col = 0u;
    var esc = 0u;
    if (COLS == 2u) {
        esc = params.escape_base + aux[params.thread_escape_base + t];
    }
    // The tile goes LOAD_BATCH blocks at a time: first every load of the batch (values, the
    // gathers of x), then the segmented sum over them. Gathers of a batch do not wait on each
    // other, so an invocation keeps LOAD_BATCH random reads of x in flight; interleaved with the
    // sum's branches and row writes, each waited for the one before. The column words of the next
    // batch are read while this batch's gathers are out, so a gather waits on one memory latency
    // rather than two (column read, then x). Tiles are multiples of the batch, and a batch never
    // straddles a flag word (32 is a multiple of it too).
    // The batch is unrolled by hand (codes in a vec4, products in four values): written as loops
    // over arrays, a driver may keep the f64 variant rolled with its arrays in local memory.
    var codes = column_codes(base + slot);
    for (var k0 = 0u; k0 < tile; k0 += LOAD_BATCH) {
        let n0 = t * tile + k0;
        if (k0 == 0u || (n0 & 31u) == 0u) {
            word = flags[n0 >> 5u];
        }
        let batch = codes;
        let p = base + k0 * WG_SIZE + slot;
        let p0 = block_product(p, next_column(batch.x, &col, &esc));
        let p1 = block_product(p + WG_SIZE, next_column(batch.y, &col, &esc));
        let p2 = block_product(p + 2u * WG_SIZE, next_column(batch.z, &col, &esc));
        let p3 = block_product(p + 3u * WG_SIZE, next_column(batch.w, &col, &esc));
        if (k0 + LOAD_BATCH < tile) {
            codes = column_codes(p + LOAD_BATCH * WG_SIZE);
        }
        let bits = word >> (n0 & 31u);
        segment_step(p0, bits, &sum, &first, &stops, first_row, group_row);
        segment_step(p1, bits >> 1u, &sum, &first, &stops, first_row, group_row);
        segment_step(p2, bits >> 2u, &sum, &first, &stops, first_row, group_row);
        segment_step(p3, bits >> 3u, &sum, &first, &stops, first_row, group_row);
    }

    let head = stops > 0u;
    var scan: GroupScan;
    if ((info & GROUP_ALL_STOP) != 0u) {
        scan = group_shift(sum, slot);
    } else {
        scan = group_seg_scan(head, sum, slot, l, sh);
    }
    // What this workgroup passes on, published before it waits on anything.
    if (slot == WG_SIZE - 1u) {
        store_values(g, select(scan.excl + sum, sum, head));
    }

    var carry = rows(scalar(0));
    var stalled = false;
    if (SINGLE_PASS != 0u && (info & GROUP_NEEDS_CARRY) != 0u) {
        var total = carry;
        if (SPIN_LIMIT == 0u) {
            stalled = true;
        } else {
            let part = chain_part(g, info, slot, SPIN_LIMIT);
            if (!part.ok) {
                atomicOr(&chain_failed, 1u);
            }
            total = group_sum(part.value, slot, l, sh);
            stalled = atomicLoad(&chain_failed) != 0u;
        }
        if (!stalled) {
            carry = total;
            reset_chain(g, info, slot);
        } else if (slot == 0u) {
            let k = atomicAdd(&state[STATE_REPAIR_COUNT], 1u);
            atomicStore(&state[STATE_LIST + k], g);
            atomicAdd(&state[STATE_STALLS], 1u);
        }
    }

    if (head) {
        var v = first + scan.excl;
        if (scan.open) {
            v += carry;
        }
        if (stalled && scan.open) {
            // The workgroup's first row, still without its carry: the last workgroup adds it.
            store_values(params.groups + g, v);
        } else {
            emit(first_row, group_row, v);
        }
    }
    if (STRATEGY == 2u) {
        workgroupBarrier();
        let cells = min(aux[(g + 1u) * WG_SIZE] - group_row, CACHE_ROWS) * HEIGHT;
        // A stalled workgroup leaves its first row (never cached) to the last workgroup.
        for (var i = select(0u, HEIGHT, stalled) + slot; i < cells; i += WG_SIZE) {
            let row = group_row * HEIGHT + i;
            if (row < params.out_rows) {
                write_y(row, cache[i]);
            }
        }
    }
    return stalled;
}

// Single pass: run by the last workgroup of the dispatch to count itself finished. It adds the
// carries whose waits ran out (every slot is stored by now, or about to be: see ORDERED_FINISH)
// and resets the ticket, the counters and the list for the next product. The stall
// count travels in the same `done` word as the finish count: one read-modify-write sees both, so
// no ordering between two atomic words is needed. The list's entries, the pending rows and the
// slots are single atomic words written once, polled until the store is visible.
fn finish_product(stalls: u32, slot: u32, l: Lanes, sh: Shape) {
    for (var i = 0u; i < stalls; i++) {
        if (l.lid == 0u) {
            var g = atomicLoad(&state[STATE_LIST + i]);
            for (var n = 0u; g == SENTINEL && n < FINISH_SPIN_LIMIT; n++) {
                g = atomicLoad(&state[STATE_LIST + i]);
            }
            atomicStore(&state[STATE_LIST + i], SENTINEL);
            var info = 0u;
            if (g != SENTINEL) {
                info = aux[params.group_info_base + g];
            }
            group_shared = vec2<u32>(g, info);
        }
        let gi = workgroupUniformLoad(&group_shared);
        if (gi.x == SENTINEL) {
            // Only if an entry stayed unwritten for 2^24 polls after its writer finished: skipped
            // rather than read out of bounds.
            continue;
        }
        let part = chain_part(gi.x, gi.y, slot, FINISH_SPIN_LIMIT);
        let carry = group_sum(part.value, slot, l, sh);
        reset_chain(gi.x, gi.y, slot);
        if (slot == 0u) {
            let pending = load_values(params.groups + gi.x, FINISH_SPIN_LIMIT);
            clear_values(params.groups + gi.x);
            write_rows(aux[gi.x * WG_SIZE], pending.value + carry);
        }
    }
    if (l.lid == 0u) {
        atomicStore(&state[STATE_TICKET], 0u);
        atomicStore(&state[STATE_DONE], 0u);
        atomicStore(&state[STATE_REPAIR_COUNT], 0u);
    }
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        li: LaneInput,
        si: ShapeInput) {
    let l = lanes_of(li, si);
    let sh = shape_of(si);
    let slot = group_slot(l);
    if (l.lid == 0u) {
        var g = linear_group(wid, nwg);
        if (SINGLE_PASS != 0u) {
            g = atomicAdd(&state[STATE_TICKET], 1u);
        }
        var info = 0u;
        if (g < params.groups) {
            info = aux[params.group_info_base + g];
        }
        group_shared = vec2<u32>(g, info);
    }
    let gi = workgroupUniformLoad(&group_shared);
    var stalled = false;
    if (gi.x < params.groups) {
        stalled = run_group(gi.x, gi.y, slot, l, sh);
    }
    if (SINGLE_PASS != 0u) {
        // The stores the last workgroup reads (this workgroup's slot, list entry and pending
        // row) are made by other invocations than the one counting. The result cache's barrier
        // already puts them before the count; per-thread writes have none, and where a
        // workgroup's invocations may be descheduled between them (ORDERED_FINISH) the last
        // workgroup's polls could run out while the writer waits, so one is added there.
        if (ORDERED_FINISH != 0u && STRATEGY == 1u) {
            workgroupBarrier();
        }
        if (l.lid == 0u) {
            let add = 1u + select(0u, params.stall_unit, stalled);
            let before = atomicAdd(&state[STATE_DONE], add) + add;
            done_shared = before;
        }
        let done = workgroupUniformLoad(&done_shared);
        if (done % params.stall_unit == nwg.x * nwg.y) {
            finish_product(done / params.stall_unit, slot, l, sh);
        }
    }
}
