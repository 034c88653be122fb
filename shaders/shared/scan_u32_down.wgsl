#import shared/grid
#import shared/workgroup_scan_u32
#import shared/scan_u32_common
// Block b scanned in place, starting from its offset (scan_u32_sums: the sum of blocks 0..b).

@compute @workgroup_size(SCAN_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = linear_group(wid, nwg);
    if (b >= scan.blocks) {
        return;
    }
    let offset = block_sums[b];
    let v = block_items(b, lid);
    var s = 0u;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        s += v[k];
    }
    var at = offset + workgroup_inclusive_scan(s, lid).x - s;
    let base = (b * SCAN_WG + lid) * SCAN_ITEMS;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        if (base + k < scan.n) {
            data[base + k] = at;
        }
        at += v[k];
    }
}
