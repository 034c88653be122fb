#import shared/grid
#import shared/scalar
#import solvers/partials
// CG, after α, in one pass: x += α·p, r -= α·q (q = A·p), with JACOBI z = r / diag(A), and the
// partial sums of r·z and r·r as partials.wgsl lays them out, for reduce.wgsl's β. One pass over
// r where an update and a dot product took two. α = 0 (stopped, or the start): x and r stay as
// they are, whatever p and q hold.

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

@compute @workgroup_size(DOT_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let alpha = scalars[ALPHA];
    var s = vec2<scalar>(scalar(0), scalar(0));
    if (g < params.groups) {
        let end = span_end(g);
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
    write_partials(g, lid, s);
}
