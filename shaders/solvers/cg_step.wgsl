#import shared/grid
#import shared/scalar
#import shared/scalar_bits_{scalar}
#import solvers/partials
// CG, after q = A·p, in one pass: every workgroup adds up the partials of p·q itself (the same
// bits in each, sum_partials.wgsl) and takes α = ρ / p·q, then x += α·p, r -= α·q, with the
// partial sums of r·z and r·r (z = r / diag(A) with JACOBI, computed where it is used, never
// stored) written after p·q's partials, for cg_update_p.wgsl's β. One dispatch where a
// reduction and an update took two. α = 0 where the solve stopped, at the START and where p·q
// is not positive (workgroup 0 then records why, for cg_update_p.wgsl to stop the solve):
// x and r stay as they are, whatever p and q hold.

override JACOBI: u32 = 0u;
override START: u32 = 0u;

// `scalars` slots (reduce.wgsl's, and CG's own).
const RHO: u32 = 0u;
const ALPHA: u32 = 1u;
const RHO_ODD: u32 = 9u;
const FAILED: u32 = 10u;
// `state` slots and stop codes.
const STOP: u32 = 1u;
const RUNNING: u32 = 0u;
const NOT_POSITIVE: u32 = 2u;
const BREAKDOWN: u32 = 3u;

@group(0) @binding(0) var<storage, read_write> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read> state: array<u32>;
@group(0) @binding(2) var<storage, read> p: array<scalar>;
@group(0) @binding(3) var<storage, read> q: array<scalar>;
@group(0) @binding(4) var<storage, read> inv_diag: array<scalar>;
@group(0) @binding(5) var<storage, read_write> x: array<scalar>;
@group(0) @binding(6) var<storage, read_write> r: array<scalar>;
// p·q's partials from 0 (dot.wgsl), r·z's and r·r's written from 2 · groups.
@group(0) @binding(7) var<storage, read_write> partials: array<scalar>;
@group(0) @binding(8) var<uniform> params: DotParams;

@compute @workgroup_size(SUM_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    var alpha = scalar(0);
    if (START == 0u) {
        let pq = sum_partials(lid, 0u, params.groups).x;
        let positive = pq > scalar(0) && is_finite(pq);
        let running = state[STOP] == RUNNING;
        if (running && positive) {
            alpha = scalars[select(RHO, RHO_ODD, params.parity == 1u)] / pq;
        }
        if (g == 0u && lid == 0u) {
            scalars[ALPHA] = alpha;
            if (running && !positive) {
                scalars[FAILED] = scalar(select(BREAKDOWN, NOT_POSITIVE, pq < scalar(0)));
            }
        }
    }
    var s = vec2<scalar>(scalar(0), scalar(0));
    if (g < params.groups) {
        let end = span_end(g);
        for (var i = g * params.span + lid; i < end; i += SUM_WG) {
            var ri = r[i];
            if (alpha != scalar(0)) {
                x[i] += alpha * p[i];
                ri -= alpha * q[i];
                r[i] = ri;
            }
            var zi = ri;
            if (JACOBI != 0u) {
                zi = ri * inv_diag[i];
            }
            s += vec2<scalar>(ri * zi, ri * ri);
        }
    }
    write_partials(g, lid, s, 2u * params.groups);
}
