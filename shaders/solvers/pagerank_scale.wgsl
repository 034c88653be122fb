#import shared/grid
#import shared/scalar
// PageRank: w = r / out-degree (0 for dangling nodes), the vector Gᵀ multiplies.

const UPDATE_WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> r: array<scalar>;
@group(0) @binding(1) var<storage, read> inv_degree: array<scalar>;
@group(0) @binding(2) var<storage, read_write> w: array<scalar>;
@group(0) @binding(3) var<uniform> len: vec4<u32>;

@compute @workgroup_size(UPDATE_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * UPDATE_WG + lid;
    if (i >= len.x) {
        return;
    }
    w[i] = r[i] * inv_degree[i];
}
