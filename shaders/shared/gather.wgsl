#import shared/grid
// Value updates of formats that reorder the values (CMRS strips, SURAA's rows, BCCOO's blocks;
// src/plan/values.rs), on u32 words: word k of value i is word k of CSR entry sources[i] - base
// of `src`, or 0 where sources[i] is NONE (padding the format added). `src` is a range of the new
// values in CSR order, bound from CSR entry `base` on. With MARK_ZEROS (BCCOO) a zero value of
// either sign becomes -0, which its kernel multiplies while it skips +0, its fill (`put_value`
// in shaders/bccoo/build_blocks.wgsl and `stored_value` in format.rs do the same).
@group(0) @binding(0) var<storage, read> sources: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<uniform> params: GatherParams;

struct GatherParams {
    count: u32,
    base: u32,
}

const NONE: u32 = 0xFFFFFFFFu;

override WG_SIZE: u32 = 256u;
// u32 words per value: 1 (f32) or 2 (f64).
override VAL_WORDS: u32 = 1u;
override MARK_ZEROS: u32 = 0u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG_SIZE + lid;
    if (i >= params.count) {
        return;
    }
    let s = sources[i];
    var zero = true;
    for (var k = 0u; k < VAL_WORDS; k += 1u) {
        var word = 0u;
        if (s != NONE) {
            word = src[(s - params.base) * VAL_WORDS + k];
        }
        dst[i * VAL_WORDS + k] = word;
        zero = zero && (word & select(0xFFFFFFFFu, 0x7FFFFFFFu, k + 1u == VAL_WORDS)) == 0u;
    }
    if (MARK_ZEROS != 0u && s != NONE && zero) {
        dst[i * VAL_WORDS + VAL_WORDS - 1u] = 0x80000000u;
    }
}
