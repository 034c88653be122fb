#import shared/workgroup_scan_u32
#import shared/scan_u32_common
// block_sums turned in place into each block's offset (the exclusive scan of the block sums),
// by one workgroup walking them in chunks of SCAN_WG * SCAN_ITEMS with a running total, so that
// scan_u32_down reads its block's offset instead of adding up the blocks before it.

@compute @workgroup_size(SCAN_WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    // The scan's three passes share one binding layout: `data` stays bound here.
    _ = arrayLength(&data);
    var carry = 0u;
    for (var c0 = 0u; c0 < scan.blocks; c0 += SCAN_WG * SCAN_ITEMS) {
        let base = c0 + lid * SCAN_ITEMS;
        var v: array<u32, SCAN_ITEMS>;
        var s = 0u;
        for (var k = 0u; k < SCAN_ITEMS; k++) {
            v[k] = select(0u, block_sums[base + k], base + k < scan.blocks);
            s += v[k];
        }
        let r = workgroup_inclusive_scan(s, lid);
        var at = carry + r.x - s;
        for (var k = 0u; k < SCAN_ITEMS; k++) {
            if (base + k < scan.blocks) {
                block_sums[base + k] = at;
            }
            at += v[k];
        }
        carry += r.y;
    }
}
