#import shared/grid
#import shared/scalar
// BiCGStab: p = r + β·(p − ω·v). β = 0 (the start, or stopped): p = r exactly, whatever p and v
// held.

const UPDATE_WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read> r: array<scalar>;
@group(0) @binding(2) var<storage, read> v: array<scalar>;
@group(0) @binding(3) var<storage, read_write> p: array<scalar>;
@group(0) @binding(4) var<uniform> len: vec4<u32>;

const BETA: u32 = 2u;
const OMEGA: u32 = 6u;

@compute @workgroup_size(UPDATE_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * UPDATE_WG + lid;
    if (i >= len.x) {
        return;
    }
    let beta = scalars[BETA];
    if (beta == scalar(0)) {
        p[i] = r[i];
    } else {
        p[i] = r[i] + beta * (p[i] - scalars[OMEGA] * v[i]);
    }
}
