#import shared/grid
#import shared/scalar
// PageRank's start: from each node's weighted out-degree s (G·1), 1/s for the nodes with links
// and a dangling mark for those without (s ≤ 0 counts as none).

const UPDATE_WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> out_degree: array<scalar>;
@group(0) @binding(1) var<storage, read_write> inv_degree: array<scalar>;
@group(0) @binding(2) var<storage, read_write> dangling: array<scalar>;
@group(0) @binding(3) var<uniform> len: vec4<u32>;

@compute @workgroup_size(UPDATE_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * UPDATE_WG + lid;
    if (i >= len.x) {
        return;
    }
    let s = out_degree[i];
    if (s > scalar(0)) {
        inv_degree[i] = scalar(1) / s;
        dangling[i] = scalar(0);
    } else {
        inv_degree[i] = scalar(0);
        dangling[i] = scalar(1);
    }
}
