#import shared/grid
#import shared/scalar
#import solvers/partials
// Partial dot products a·b (and, with DOTS = 2, c·d in the same pass), laid out and summed as
// partials.wgsl says.

override DOTS: u32 = 1u;

@group(0) @binding(0) var<storage, read> a: array<scalar>;
@group(0) @binding(1) var<storage, read> b: array<scalar>;
@group(0) @binding(2) var<storage, read> c: array<scalar>;
@group(0) @binding(3) var<storage, read> d: array<scalar>;
@group(0) @binding(4) var<storage, read_write> partials: array<scalar>;
@group(0) @binding(5) var<uniform> params: DotParams;

@compute @workgroup_size(SUM_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    var s = vec2<scalar>(scalar(0), scalar(0));
    if (g < params.groups) {
        let end = span_end(g);
        for (var i = g * params.span + lid; i < end; i += SUM_WG) {
            s.x += a[i] * b[i];
            if (DOTS == 2u) {
                s.y += c[i] * d[i];
            }
        }
    }
    write_partials(g, lid, s, 0u);
}
