#import shared/grid
#import shared/workgroup_scan_u32
#import shared/scan_u32_common
// block_sums[b] = sum of block b.

@compute @workgroup_size(SCAN_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = linear_group(wid, nwg);
    if (b >= scan.blocks) {
        return;
    }
    let v = block_items(b, lid);
    var s = 0u;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        s += v[k];
    }
    let total = workgroup_inclusive_scan(s, lid).y;
    if (lid == 0u) {
        block_sums[b] = total;
    }
}
