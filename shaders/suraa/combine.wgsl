#import shared/grid
#import shared/common
#import shared/lanes_{lanes}
#import shared/width_sum_{lanes}
#import suraa/common
// SURAA, after the main dispatch: each G1 row's partial sums (one per dynamic workgroup) added in
// order by one workgroup, then written through the permutation.

@group(0) @binding(0) var<storage, read_write> y: array<scalar>;
@group(0) @binding(1) var<uniform> coeffs: Coeffs;
@group(0) @binding(2) var<uniform> schedule: Schedule;
@group(0) @binding(3) var<storage, read> perm: array<u32>;
@group(0) @binding(4) var<storage, read> dynamic_ptr: array<u32>;
@group(0) @binding(5) var<storage, read> partials: array<scalar>;

override WG_SIZE: u32 = 256u;
// Lane-team width of the workgroup-memory lane module (unused here, which sums whole workgroups).
override LANES: u32 = 32u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        li: LaneInput,
        si: ShapeInput) {
    let l = lanes_of(li, si);
    let sh = shape_of(si);
    let v = lane_slot(l);
    let i = linear_group(wid, nwg);
    if (i >= schedule.dynamic_rows) {
        return;
    }
    var sum = scalar(0);
    for (var k = dynamic_ptr[i] + v; k < dynamic_ptr[i + 1u]; k += WG_SIZE) {
        sum += partials[k];
    }
    let total = width_sum(sum, l, sh, WG_SIZE);
    if (v == 0u) {
        write_y(perm[i], total);
    }
}
