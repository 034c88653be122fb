#import shared/grid
#import shared/scalar
// CG, after β: p = z + β·p (z is r itself without a preconditioner). β is 0 once the solve
// stopped, and at the start (p is zeroed first, so 0·p adds nothing).

const UPDATE_WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read> z: array<scalar>;
@group(0) @binding(2) var<storage, read_write> p: array<scalar>;
@group(0) @binding(3) var<uniform> len: vec4<u32>;

const BETA: u32 = 2u;

@compute @workgroup_size(UPDATE_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * UPDATE_WG + lid;
    if (i >= len.x) {
        return;
    }
    let beta = scalars[BETA];
    // β = 0: p = z exactly, whatever p held (NaN included).
    if (beta == scalar(0)) {
        p[i] = z[i];
    } else {
        p[i] = z[i] + beta * p[i];
    }
}
