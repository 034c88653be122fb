// One pass of an LSD radix sort of 64-bit keys (two u32 words) by 8-bit digits, stable, in
// tiles of RADIX_WG * ITEMS keys: radix_count writes each tile's digit counts digit-major, so an
// exclusive scan of them gives every (digit, tile) its first output position; radix_scatter
// moves the keys there, ranking equal digits by index within the tile. No workgroup ever waits
// for another (no forward-progress assumption).

struct RadixParams {
    n: u32,
    // Bit position of the digit in the 64-bit key (a multiple of 8).
    shift: u32,
    tiles: u32,
    // 1 where the keys have a high word to move, 0 where they fit in `keys_lo` (the high
    // buffers are then placeholders, never read or written).
    hi_words: u32,
}

const RADIX_WG: u32 = 256u;
const RADIX: u32 = 256u;
override ITEMS: u32 = 8u;

@group(0) @binding(0) var<storage, read> keys_lo: array<u32>;
@group(0) @binding(1) var<storage, read> keys_hi: array<u32>;
@group(0) @binding(3) var<uniform> params: RadixParams;

fn digit_of(i: u32) -> u32 {
    if (params.shift < 32u) {
        return (keys_lo[i] >> params.shift) & (RADIX - 1u);
    }
    return (keys_hi[i] >> (params.shift - 32u)) & (RADIX - 1u);
}
