#import shared/grid
#import shared/scalar
// BiCGStab, after α: x += α·p and r -= α·v (v = A·p), so r holds s. α = 0 (stopped): x and r
// stay as they are, whatever p and v hold.

const UPDATE_WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read> p: array<scalar>;
@group(0) @binding(2) var<storage, read> v: array<scalar>;
@group(0) @binding(3) var<storage, read_write> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> r: array<scalar>;
@group(0) @binding(5) var<uniform> len: vec4<u32>;

const ALPHA: u32 = 1u;

@compute @workgroup_size(UPDATE_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * UPDATE_WG + lid;
    if (i >= len.x) {
        return;
    }
    let alpha = scalars[ALPHA];
    if (alpha != scalar(0)) {
        x[i] += alpha * p[i];
        r[i] -= alpha * v[i];
    }
}
