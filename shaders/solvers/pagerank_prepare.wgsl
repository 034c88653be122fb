#import shared/grid
#import shared/scalar
#import solvers/partials
// PageRank's start: from each node's weighted out-degree s (G·1), 1/s for the nodes with links
// and -1 for the dangling ones (s ≤ 0 counts as none: a negative inverse degree marks them);
// the ranks r = v, what the first product multiplies, w = r / s (0 for dangling nodes), and the
// partial sums of the dangling nodes' rank as partials.wgsl lays them out, for `reduce.wgsl`.

@group(0) @binding(0) var<storage, read> out_degree: array<scalar>;
@group(0) @binding(1) var<storage, read> v: array<scalar>;
@group(0) @binding(2) var<storage, read_write> inv_degree: array<scalar>;
@group(0) @binding(3) var<storage, read_write> r: array<scalar>;
@group(0) @binding(4) var<storage, read_write> w: array<scalar>;
@group(0) @binding(5) var<storage, read_write> partials: array<scalar>;
@group(0) @binding(6) var<uniform> params: DotParams;

@compute @workgroup_size(SUM_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    var s = vec2<scalar>(scalar(0), scalar(0));
    if (g < params.groups) {
        let end = span_end(g);
        for (var i = g * params.span + lid; i < end; i += SUM_WG) {
            let degree = out_degree[i];
            let vi = v[i];
            var inv = scalar(-1);
            if (degree > scalar(0)) {
                inv = scalar(1) / degree;
            } else {
                s.x += vi;
            }
            inv_degree[i] = inv;
            r[i] = vi;
            w[i] = vi * max(inv, scalar(0));
        }
    }
    write_partials(g, lid, s, 0u);
}
