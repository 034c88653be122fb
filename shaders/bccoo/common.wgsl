#import bccoo/group_scan_{lanes}
#import shared/scalar_bits_{scalar}
#import bccoo/block_rows_{height}
// Shared by shaders/bccoo/bccoo.wgsl and shaders/bccoo/carry.wgsl: the bindings both read, the plan's parameters, the
// per-workgroup carry slots and the row writes. See src/methods/bccoo/format.rs for the format.

// Mirrors `BccooParams` in src/methods/bccoo/mod.rs.
struct Params {
    // Blocks after padding: the stride between value planes.
    padded_blocks: u32,
    // Rows of the product (stacked rows for BCCOO+).
    out_rows: u32,
    ncols: u32,
    groups: u32,
    // Threads per workgroup of the main kernel (aux[g * group_threads] is group g's first row).
    group_threads: u32,
    // Where the escape list starts in `cols`, and the per-thread escape offsets in `aux`.
    escape_base: u32,
    thread_escape_base: u32,
    // Where the per-workgroup info and the two-pass carry list start in `aux`.
    group_info_base: u32,
    carry_base: u32,
    carry_groups: u32,
    // Blocks per invocation (the thread tile): a loop bound, so a uniform rather than an override
    // (a constant trip count invites the driver to unroll the tile loop, and every tile size
    // would be a pipeline of its own to compile while tuning).
    tile: u32,
    // Single pass: what a workgroup whose wait ran out adds to the `done` word besides its 1
    // (a power of two above the dispatch's workgroup count; see `finish_product` in shaders/bccoo/bccoo.wgsl).
    stall_unit: u32,
}

// Per-workgroup info bits (format.rs GROUP_*); the chain length sits above them.
const GROUP_ALL_STOP: u32 = 1u;
const GROUP_HAS_STOP: u32 = 2u;
const GROUP_NEEDS_CARRY: u32 = 4u;
const GROUP_CHAIN_SHIFT: u32 = 3u;

// Per thread: first result row (threads + 1 entries); per thread: first escape; per workgroup:
// info; the two-pass carry list.
@group(0) @binding(0) var<storage, read> aux: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<scalar>;
@group(0) @binding(2) var<uniform> coeffs: Coeffs;
@group(0) @binding(3) var<uniform> params: Params;
// Per workgroup, 4 rows of SCALAR_WORDS words: what it passes on to the workgroups after it (the
// sum after its last row stop, or its whole sum when it holds no stop). Then, per workgroup, the
// same again for single pass's pending rows: a first row whose wait ran out, still without its
// carry. SENTINEL = not written.
@group(0) @binding(4) var<storage, read_write> slots: array<atomic<u32>>;

// HEIGHT (the block height) and `rows` (a block row's HEIGHT sums: the scalar itself for height
// 1, a vector otherwise) with `row_of` / `put_row` are generated per height by the assembler
// (src/kernel/mod.rs): a vec4 for every height wastes registers, shuffles and workgroup memory.

// An invocation's index in the order the group scans use: subgroup (team), then lane.
fn group_slot(l: Lanes) -> u32 {
    return l.team * l.width + l.lane;
}

// Word k of row r at slot index `at`: group g's slot is at g, its pending row at groups + g.
fn slot_word(at: u32, r: u32, k: u32) -> u32 {
    return (at * 4u + r) * SCALAR_WORDS + k;
}

struct SlotRead {
    value: rows,
    ok: bool,
}

// The HEIGHT values stored at slot index `at` (a group index; groups + g for pending rows).
fn store_values(at: u32, v: rows) {
    for (var r = 0u; r < HEIGHT; r++) {
        let w = to_words(row_of(v, r));
        for (var k = 0u; k < SCALAR_WORDS; k++) {
            atomicStore(&slots[slot_word(at, r, k)], w[k]);
        }
    }
}

// Waits at most `spins` polls per word for the values at `at` to be written.
fn load_values(at: u32, spins: u32) -> SlotRead {
    var out = rows(scalar(0));
    var ok = true;
    for (var r = 0u; r < HEIGHT; r++) {
        var w = vec2<u32>(0u);
        for (var k = 0u; k < SCALAR_WORDS; k++) {
            var v = atomicLoad(&slots[slot_word(at, r, k)]);
            for (var n = 0u; v == SENTINEL && n < spins; n++) {
                v = atomicLoad(&slots[slot_word(at, r, k)]);
            }
            ok = ok && v != SENTINEL;
            w[k] = v;
        }
        put_row(&out, r, from_words(w));
    }
    return SlotRead(out, ok);
}

fn clear_values(at: u32) {
    for (var r = 0u; r < HEIGHT; r++) {
        for (var k = 0u; k < SCALAR_WORDS; k++) {
            atomicStore(&slots[slot_word(at, r, k)], SENTINEL);
        }
    }
}

// This invocation's share of the carry into group g: the slots of its chain (the workgroups back
// to the nearest one holding a row stop), every WG_SIZE-th one from `slot`.
fn chain_part(g: u32, info: u32, slot: u32, spins: u32) -> SlotRead {
    let start = g - (info >> GROUP_CHAIN_SHIFT);
    var part = SlotRead(rows(scalar(0)), true);
    for (var i = start + slot; i < g; i += WG_SIZE) {
        let s = load_values(i, spins);
        part.value += s.value;
        part.ok = part.ok && s.ok;
    }
    return part;
}

// Puts the slots of group g's chain back to SENTINEL for the next product (single pass only:
// each slot is read by exactly one workgroup, the one whose chain holds it).
fn reset_chain(g: u32, info: u32, slot: u32) {
    for (var i = g - (info >> GROUP_CHAIN_SHIFT) + slot; i < g; i += WG_SIZE) {
        clear_values(i);
    }
}

// Writes one block row's HEIGHT results (rows past the end are padding).
fn write_rows(brow: u32, v: rows) {
    for (var r = 0u; r < HEIGHT; r++) {
        let row = brow * HEIGHT + r;
        if (row < params.out_rows) {
            write_y(row, row_of(v, r));
        }
    }
}
