#import shared/grid
#import shared/scalar
// CG, after α: x += α·p, r -= α·q (q = A·p), and with JACOBI the preconditioned residual
// z = r / diag(A) (`inv_diag` holds 1 / diag). α is 0 once the solve stopped.

const UPDATE_WG: u32 = 256u;
override JACOBI: u32 = 0u;

@group(0) @binding(0) var<storage, read> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read> p: array<scalar>;
@group(0) @binding(2) var<storage, read> q: array<scalar>;
@group(0) @binding(3) var<storage, read> inv_diag: array<scalar>;
@group(0) @binding(4) var<storage, read_write> x: array<scalar>;
@group(0) @binding(5) var<storage, read_write> r: array<scalar>;
@group(0) @binding(6) var<storage, read_write> z: array<scalar>;
@group(0) @binding(7) var<uniform> len: vec4<u32>;

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
    var ri = r[i];
    // α = 0 (stopped, or the start): x and r stay as they are, whatever p and q hold.
    if (alpha != scalar(0)) {
        x[i] += alpha * p[i];
        ri -= alpha * q[i];
        r[i] = ri;
    }
    if (JACOBI != 0u) {
        z[i] = ri * inv_diag[i];
    }
}
