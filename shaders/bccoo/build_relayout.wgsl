#import shared/grid
#import bccoo/build_layout
// bccoo_build_relayout: blocks a GPU build placed for one tile and workgroup size, rearranged
// for another (src/methods/bccoo/gpu_build.rs): a tuning's candidates that differ from the last
// only there skip placing every entry again. One invocation per value slot of the new layout
// (or per padded block, where that is more): the slot's value and source from the old layout;
// the first `padded` also a block column (natural order, padding repeats the last stored
// block's) and the first `flag_words` a word of row-stop flags (padding is no stop), as the
// placing passes of build_blocks.wgsl and build_rows.wgsl leave them.

struct RelayoutParams {
    // Stored blocks (natural order, before padding).
    blocks: u32,
    width: u32,
    old_padded: u32,
    old_tile: u32,
    old_threads: u32,
    old_flag_words: u32,
    padded: u32,
    tile: u32,
    threads: u32,
    slots: u32,
    flag_words: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> old_vals: array<u32>;
@group(0) @binding(1) var<storage, read> old_sources: array<u32>;
@group(0) @binding(2) var<storage, read> old_cols: array<u32>;
@group(0) @binding(3) var<storage, read> old_flags: array<u32>;
@group(0) @binding(4) var<storage, read_write> vals: array<u32>;
@group(0) @binding(5) var<storage, read_write> sources: array<u32>;
@group(0) @binding(6) var<storage, read_write> cols: array<u32>;
@group(0) @binding(7) var<storage, read_write> flags: array<u32>;
@group(0) @binding(8) var<uniform> params: RelayoutParams;

// u32 words per value: 1 (f32) or 2 (f64).
override VAL_WORDS: u32 = 1u;

const NONE: u32 = 0xFFFFFFFFu;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let k = linear_group(wid, nwg) * 256u + lid;
    if (k < params.slots) {
        // Slot k = (row in block * padded + layout position) * width + column in block.
        let j = k % params.width;
        let q = k / params.width;
        let r = q / params.padded;
        let n = natural_in(q % params.padded, params.tile, params.threads);
        var source = NONE;
        if (n < params.blocks) {
            let old_pos = layout_in(n, params.old_tile, params.old_threads);
            let old = (r * params.old_padded + old_pos) * params.width + j;
            for (var v = 0u; v < VAL_WORDS; v += 1u) {
                vals[k * VAL_WORDS + v] = old_vals[old * VAL_WORDS + v];
            }
            source = old_sources[old];
        }
        // Fill and padding: value 0 (the buffer is zeroed), no source.
        sources[k] = source;
    }
    if (k < params.padded) {
        cols[k] = old_cols[min(k, params.blocks - 1u)];
    }
    if (k < params.flag_words) {
        flags[k] = select(NONE, old_flags[k], k < params.old_flag_words);
    }
}
