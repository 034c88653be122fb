// Exclusive scan of a u32 array in place, in blocks of SCAN_WG * SCAN_ITEMS entries:
// scan_u32_reduce sums each block, scan_u32_sums turns the sums into each block's offset (one
// workgroup: a block sum per 2048 entries), scan_u32_down scans each block from its offset.
// (A down-sweep workgroup that added up the sums before its block itself made the scan
// quadratic in the blocks.)

struct ScanParams {
    n: u32,
    blocks: u32,
}

const SCAN_ITEMS: u32 = 8u;

@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> block_sums: array<u32>;
@group(0) @binding(2) var<uniform> scan: ScanParams;

// The invocation's SCAN_ITEMS consecutive entries of block b (zero past the end).
fn block_items(b: u32, lid: u32) -> array<u32, SCAN_ITEMS> {
    var v: array<u32, SCAN_ITEMS>;
    let base = (b * SCAN_WG + lid) * SCAN_ITEMS;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        v[k] = select(0u, data[base + k], base + k < scan.n);
    }
    return v;
}
