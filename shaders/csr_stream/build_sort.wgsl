#import shared/grid
#import csr_stream/tiles
// csr_stream_build_sort: csr-stream's entries reordered on the GPU, as StreamFormat::build
// does on the host (src/methods/csr_stream/format.rs).
// PASS 0, one invocation per entry: every entry copied in CSR order (what long rows keep).
// PASS 1, one workgroup per tile: a tile that is not one long row sorts its entries by (column,
//   place in the tile) in workgroup memory (a bitonic sort over TILE slots, the empty ones last)
//   and writes them in that order, packed by chunk as csr_stream/tiles.wgsl says, with their
//   places and CSR entry numbers.
// Values move as VAL_WORDS u32 words each.

@group(0) @binding(0) var<storage, read> col_in: array<u32>;
@group(0) @binding(1) var<storage, read> val_in: array<u32>;
// Read_write: PASS 1 writes the chunk words after the tiles.
@group(0) @binding(2) var<storage, read_write> tile_rows: array<u32>;
@group(0) @binding(3) var<storage, read_write> col_out: array<u32>;
@group(0) @binding(4) var<storage, read_write> val_out: array<u32>;
// Two 16-bit places per word, zeroed before: neighbouring tiles may share a word.
@group(0) @binding(5) var<storage, read_write> places: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> sources: array<u32>;

override PASS: u32 = 0u;
override VAL_WORDS: u32 = 1u;
override TILE: u32 = 2048u;
const WG: u32 = 256u;

var<workgroup> keys: array<u32, TILE>;
var<workgroup> slots: array<u32, TILE>;

fn copy_value(dst: u32, src: u32) {
    for (var w = 0u; w < VAL_WORDS; w++) {
        val_out[dst * VAL_WORDS + w] = val_in[src * VAL_WORDS + w];
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let group = linear_group(wid, nwg);
    if (PASS == 0u) {
        let e = group * WG + lid;
        if (e < arrayLength(&col_in)) {
            col_out[e] = col_in[e];
            copy_value(e, e);
            sources[e] = e;
        }
        return;
    }
    let tile = tile_of(group);
    let first = tile.first;
    let count = tile.count;
    let sorted = tile.sorted;
    for (var i = lid; i < TILE; i += WG) {
        var key = 0xffffffffu;
        if (sorted && i < count) {
            key = col_in[first + i];
        }
        keys[i] = key;
        slots[i] = i;
    }
    for (var k = 2u; k <= TILE; k <<= 1u) {
        for (var j = k >> 1u; j > 0u; j >>= 1u) {
            workgroupBarrier();
            for (var t = lid; t < TILE / 2u; t += WG) {
                let a = 2u * t - (t & (j - 1u));
                let b = a + j;
                let ka = keys[a];
                let kb = keys[b];
                let later = ka > kb || (ka == kb && slots[a] > slots[b]);
                if (later == ((a & k) == 0u)) {
                    keys[a] = kb;
                    keys[b] = ka;
                    let s = slots[a];
                    slots[a] = slots[b];
                    slots[b] = s;
                }
            }
        }
    }
    workgroupBarrier();
    if (!sorted) {
        return;
    }
    let chunks = first_chunk(group, first);
    for (var i = lid; i < count; i += WG) {
        let e = first + i;
        let slot = slots[i];
        // The chunk's columns, sorted: its first and last give its span.
        let start = i - i % CHUNK;
        let base = keys[start];
        let raw = keys[min(start + CHUNK, count) - 1u] - base > OFFSET_MASK;
        if (i == start) {
            tile_rows[chunks + i / CHUNK] = select(base, RAW_CHUNK, raw);
        }
        col_out[e] = select((slot << PLACE_SHIFT) | (keys[i] - base), keys[i], raw);
        copy_value(e, first + slot);
        sources[e] = first + slot;
        atomicOr(&places[e >> 1u], slot << ((e & 1u) * 16u));
    }
}
