#import shared/grid
// Copies n elements of WORDS 32-bit words each: dst[dst_at + i * dst_step] = src[src_at + i *
// src_step] (in elements): a column of a row-major dense matrix to or from a vector.
struct Strides {
    n: u32,
    src_at: u32,
    src_step: u32,
    dst_at: u32,
    dst_step: u32,
}
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> strides: Strides;

override WG_SIZE: u32 = 256u;
override WORDS: u32 = 1u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG_SIZE + lid;
    if (i >= strides.n) {
        return;
    }
    let s = (strides.src_at + i * strides.src_step) * WORDS;
    let d = (strides.dst_at + i * strides.dst_step) * WORDS;
    for (var w = 0u; w < WORDS; w++) {
        dst[d + w] = src[s + w];
    }
}
