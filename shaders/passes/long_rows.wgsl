#import shared/grid
#import shared/common
// Rows too long for one invocation to loop over (src/methods/passes/long_rows.rs): the main kernel
// treats them as empty, these two passes add them. FINISH 0: one workgroup per piece of at most
// WG_SIZE * PER_LANE entries writes the piece's sum to `partials`. FINISH 1: one workgroup per
// long row adds its pieces into y (where the main kernel left beta * y). No loop of an invocation
// runs more than PER_LANE times (pieces per row / WG_SIZE for FINISH 1), whatever the row length.
//
// `desc`: [pieces, long rows, (begin, end) per piece, (row, first piece, end piece) per long row];
// piece bounds index `long_cols` / `long_vals`, the long rows' entries one after another.
@group(0) @binding(0) var<storage, read> desc: array<u32>;
@group(0) @binding(1) var<storage, read> long_cols: array<u32>;
@group(0) @binding(2) var<storage, read> long_vals: array<scalar>;
@group(0) @binding(3) var<storage, read> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> y: array<scalar>;
@group(0) @binding(5) var<uniform> coeffs: Coeffs;
@group(0) @binding(6) var<storage, read_write> partials: array<scalar>;

override WG_SIZE: u32 = 256u;
override FINISH: u32 = 0u;
// Entries per invocation and piece; mirrored by PER_LANE in long_rows.rs.
const PER_LANE: u32 = 64u;

var<workgroup> sums: array<scalar, WG_SIZE>;

// Sum of `v` over the workgroup (called in uniform control flow).
fn workgroup_total(v: scalar, lid: u32) -> scalar {
    sums[lid] = v;
    workgroupBarrier();
    for (var s = WG_SIZE / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            sums[lid] += sums[lid + s];
        }
        workgroupBarrier();
    }
    return sums[0];
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let pieces = desc[0];
    var sum = scalar(0);
    if (FINISH == 0u) {
        if (g < pieces) {
            let end = desc[3u + 2u * g];
            for (var k = desc[2u + 2u * g] + lid; k < end; k += WG_SIZE) {
                sum += long_vals[k] * x[long_cols[k]];
            }
        }
    } else if (g < desc[1]) {
        let at = 2u + 2u * pieces + 3u * g;
        let end = desc[at + 2u];
        for (var p = desc[at + 1u] + lid; p < end; p += WG_SIZE) {
            sum += partials[p];
        }
    }
    let total = workgroup_total(sum, lid);
    if (lid == 0u) {
        if (FINISH == 0u) {
            if (g < pieces) {
                partials[g] = total;
            }
        } else if (g < desc[1]) {
            let row = desc[2u + 2u * pieces + 3u * g];
            y[row] = coeffs.alpha * total + y[row];
        }
    }
}
