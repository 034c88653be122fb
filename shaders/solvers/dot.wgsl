#import shared/grid
#import shared/scalar
// Partial dot products, deterministic: workgroup g sums elements [g * span, (g + 1) * span) in a
// fixed order (each invocation a strided run, then a tree in workgroup memory), so the result
// depends on n and `groups` only, never on the adapter or the timing. With DOTS = 2 it also
// sums c·d in the same pass. `reduce.wgsl` adds the partials up.

struct DotParams {
    n: u32,
    // Elements per workgroup (a multiple of DOT_WG).
    span: u32,
    groups: u32,
    pad: u32,
}

const DOT_WG: u32 = 256u;
override DOTS: u32 = 1u;

@group(0) @binding(0) var<storage, read> a: array<scalar>;
@group(0) @binding(1) var<storage, read> b: array<scalar>;
@group(0) @binding(2) var<storage, read> c: array<scalar>;
@group(0) @binding(3) var<storage, read> d: array<scalar>;
@group(0) @binding(4) var<storage, read_write> partials: array<scalar>;
@group(0) @binding(5) var<uniform> params: DotParams;

var<workgroup> sums: array<vec2<scalar>, DOT_WG>;

@compute @workgroup_size(DOT_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    var s = vec2<scalar>(scalar(0), scalar(0));
    if (g < params.groups) {
        let end = min((g + 1u) * params.span, params.n);
        for (var i = g * params.span + lid; i < end; i += DOT_WG) {
            s.x += a[i] * b[i];
            if (DOTS == 2u) {
                s.y += c[i] * d[i];
            }
        }
    }
    sums[lid] = s;
    workgroupBarrier();
    for (var half = DOT_WG / 2u; half > 0u; half /= 2u) {
        if (lid < half) {
            sums[lid] += sums[lid + half];
        }
        workgroupBarrier();
    }
    if (lid == 0u && g < params.groups) {
        partials[g] = sums[0].x;
        partials[params.groups + g] = sums[0].y;
    }
}
