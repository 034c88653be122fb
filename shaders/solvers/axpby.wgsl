#import shared/grid
#import shared/scalar
// Vector updates with α and β read from a buffer when the work runs (`Coefficients`):
// OP 0: y = α·x + β·y (β = 0 leaves y unread: it may hold NaN, as the products do);
// OP 1: y = y ⊙ x (elementwise; a diagonal scaling);
// OP 2: y = α·y (x is not read).

const UPDATE_WG: u32 = 256u;
override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> coeffs: array<scalar>;
@group(0) @binding(1) var<storage, read> x: array<scalar>;
@group(0) @binding(2) var<storage, read_write> y: array<scalar>;
@group(0) @binding(3) var<uniform> len: vec4<u32>;

@compute @workgroup_size(UPDATE_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * UPDATE_WG + lid;
    if (i >= len.x) {
        return;
    }
    let alpha = coeffs[0];
    let beta = coeffs[1];
    if (OP == 1u) {
        y[i] = y[i] * x[i];
    } else if (OP == 2u) {
        y[i] = alpha * y[i];
    } else if (beta == scalar(0)) {
        y[i] = alpha * x[i];
    } else {
        y[i] = alpha * x[i] + beta * y[i];
    }
}
