#import shared/grid
#import shared/radix_common
// Digit counts of one tile: counts[digit * tiles + tile].

@group(0) @binding(2) var<storage, read_write> counts: array<u32>;

var<workgroup> hist: array<atomic<u32>, RADIX>;

@compute @workgroup_size(RADIX_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let tile = linear_group(wid, nwg);
    atomicStore(&hist[lid], 0u);
    workgroupBarrier();
    if (tile < params.tiles) {
        for (var r = 0u; r < ITEMS; r++) {
            let i = (tile * ITEMS + r) * RADIX_WG + lid;
            if (i < params.n) {
                atomicAdd(&hist[digit_of(i)], 1u);
            }
        }
    }
    workgroupBarrier();
    if (tile < params.tiles) {
        counts[lid * params.tiles + tile] = atomicLoad(&hist[lid]);
    }
}
