#import shared/grid
#import shared/common
// Value updates of formats that reorder the values (CMRS strips, SURAA's rows): y[i] =
// src[sources[i] - base], or 0 where sources[i] is NONE (padding the format added). `src` is a
// range of the new values in CSR order, bound from CSR entry `base` on. (BCCOO's blocks have
// their own, shaders/bccoo/gather.wgsl.)
@group(0) @binding(0) var<storage, read> sources: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<scalar>;
// Named y for shaders/shared/common.wgsl's helpers: the format's buffer being refilled.
@group(0) @binding(2) var<storage, read_write> y: array<scalar>;
@group(0) @binding(3) var<uniform> params: GatherParams;
// Declared for shaders/shared/common.wgsl; unused, so not in the layout.
@group(0) @binding(4) var<uniform> coeffs: Coeffs;

struct GatherParams {
    count: u32,
    base: u32,
}

const NONE: u32 = 0xFFFFFFFFu;

override WG_SIZE: u32 = 256u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG_SIZE + lid;
    if (i < params.count) {
        let s = sources[i];
        y[i] = select(src[s - params.base], scalar(0), s == NONE);
    }
}
