#import shared/grid
#import shared/common
#import suraa/common
// SURAA with ScalarWrites::Gather, last pass: one invocation per original row r; if r is a G3
// row, its sum is read from sorted_sums through the inverse permutation and y[r] written, so
// neighbouring invocations write neighbouring entries of y.

@group(0) @binding(0) var<storage, read_write> y: array<scalar>;
@group(0) @binding(1) var<uniform> coeffs: Coeffs;
@group(0) @binding(2) var<uniform> schedule: Schedule;
@group(0) @binding(3) var<storage, read> inv: array<u32>;
@group(0) @binding(4) var<storage, read> sorted_sums: array<scalar>;

override WG_SIZE: u32 = 256u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let r = linear_group(wid, nwg) * WG_SIZE + lid;
    if (r < schedule.nrows) {
        let i = inv[r];
        if (i >= schedule.scalar_begin) {
            write_y(r, sorted_sums[i]);
        }
    }
}
