#import shared/grid
#import shared/radix_common
// Moves one tile's keys and payloads to their sorted positions. Per round of RADIX_WG keys, each
// digit gets a RADIX_WG-bit mask of the invocations holding it; an invocation's rank among its
// digit is the number of mask bits below its own, so equal digits keep their order (stable).

@group(0) @binding(2) var<storage, read> rows_in: array<u32>;
@group(0) @binding(4) var<storage, read> offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> lo_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> hi_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> rows_out: array<u32>;

const WORDS: u32 = RADIX_WG / 32u;
var<workgroup> masks: array<atomic<u32>, RADIX * WORDS>;
var<workgroup> next: array<u32, RADIX>;

@compute @workgroup_size(RADIX_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let tile = linear_group(wid, nwg);
    if (tile >= params.tiles) {
        return;
    }
    // Invocation `lid` keeps digit `lid`'s next output position.
    next[lid] = offsets[lid * params.tiles + tile];
    let word = lid / 32u;
    let bit = 1u << (lid % 32u);
    for (var r = 0u; r < ITEMS; r++) {
        for (var w = 0u; w < WORDS; w++) {
            atomicStore(&masks[lid * WORDS + w], 0u);
        }
        workgroupBarrier();
        let i = (tile * ITEMS + r) * RADIX_WG + lid;
        let valid = i < params.n;
        var d = 0u;
        if (valid) {
            d = digit_of(i);
            atomicOr(&masks[d * WORDS + word], bit);
        }
        workgroupBarrier();
        if (valid) {
            var rank = next[d] + countOneBits(atomicLoad(&masks[d * WORDS + word]) & (bit - 1u));
            for (var w = 0u; w < word; w++) {
                rank += countOneBits(atomicLoad(&masks[d * WORDS + w]));
            }
            lo_out[rank] = keys_lo[i];
            if (params.hi_words != 0u) {
                hi_out[rank] = keys_hi[i];
            }
            rows_out[rank] = rows_in[i];
        }
        workgroupBarrier();
        var count = 0u;
        for (var w = 0u; w < WORDS; w++) {
            count += countOneBits(atomicLoad(&masks[lid * WORDS + w]));
        }
        next[lid] += count;
    }
}
