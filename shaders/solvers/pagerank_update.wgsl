#import shared/grid
#import shared/scalar
#import solvers/partials
// PageRank: r' = d·y + c·v (y = Gᵀ·w, c = d·dangling + 1 − d from `reduce.wgsl`), written over
// r, and in the same pass what the next iteration multiplies, w = r' / out-degree, with the
// partial sums of |r' − r| and of r'·dangling as partials.wgsl lays them out, for
// `reduce.wgsl` to turn into the stop and the next c. Nothing is written once the solve
// stopped.

const DAMPING: u32 = 7u;
const ADD: u32 = 8u;
const STOP: u32 = 1u;

@group(0) @binding(0) var<storage, read> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read> state: array<u32>;
@group(0) @binding(2) var<storage, read> y: array<scalar>;
@group(0) @binding(3) var<storage, read> v: array<scalar>;
// 1 / out-degree, negative for dangling nodes (pagerank_prepare.wgsl).
@group(0) @binding(4) var<storage, read> inv_degree: array<scalar>;
@group(0) @binding(5) var<storage, read_write> r: array<scalar>;
@group(0) @binding(6) var<storage, read_write> w: array<scalar>;
@group(0) @binding(7) var<storage, read_write> partials: array<scalar>;
@group(0) @binding(8) var<uniform> params: DotParams;

@compute @workgroup_size(SUM_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let running = state[STOP] == 0u;
    let d = scalars[DAMPING];
    let c = scalars[ADD];
    var s = vec2<scalar>(scalar(0), scalar(0));
    if (g < params.groups && running) {
        let end = span_end(g);
        for (var i = g * params.span + lid; i < end; i += SUM_WG) {
            let next = d * y[i] + c * v[i];
            let inv = inv_degree[i];
            s.x += abs(next - r[i]);
            if (inv < scalar(0)) {
                s.y += next;
            }
            r[i] = next;
            w[i] = next * max(inv, scalar(0));
        }
    }
    write_partials(g, lid, s, 0u);
}
