#import shared/grid
#import shared/scalar
// CG, after α, in one pass: x += α·p, r -= α·q (q = A·p), with JACOBI z = r / diag(A), and the
// partial sums of r·z and r·r laid out as dot.wgsl's (workgroup g takes its fixed range, summed
// in a fixed tree), for reduce.wgsl's β. One pass over r where an update and a dot product took
// two. α = 0 (stopped, or the start): x and r stay as they are, whatever p and q hold.

struct DotParams {
    n: u32,
    span: u32,
    groups: u32,
    pad: u32,
}

const DOT_WG: u32 = 256u;
const ALPHA: u32 = 1u;
override JACOBI: u32 = 0u;

@group(0) @binding(0) var<storage, read> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read> p: array<scalar>;
@group(0) @binding(2) var<storage, read> q: array<scalar>;
@group(0) @binding(3) var<storage, read> inv_diag: array<scalar>;
@group(0) @binding(4) var<storage, read_write> x: array<scalar>;
@group(0) @binding(5) var<storage, read_write> r: array<scalar>;
@group(0) @binding(6) var<storage, read_write> z: array<scalar>;
@group(0) @binding(7) var<storage, read_write> partials: array<scalar>;
@group(0) @binding(8) var<uniform> params: DotParams;

var<workgroup> sums: array<vec2<scalar>, DOT_WG>;

@compute @workgroup_size(DOT_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let alpha = scalars[ALPHA];
    var s = vec2<scalar>(scalar(0), scalar(0));
    if (g < params.groups) {
        let end = min((g + 1u) * params.span, params.n);
        for (var i = g * params.span + lid; i < end; i += DOT_WG) {
            var ri = r[i];
            if (alpha != scalar(0)) {
                x[i] += alpha * p[i];
                ri -= alpha * q[i];
                r[i] = ri;
            }
            var zi = ri;
            if (JACOBI != 0u) {
                zi = ri * inv_diag[i];
                z[i] = zi;
            }
            s += vec2<scalar>(ri * zi, ri * ri);
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
