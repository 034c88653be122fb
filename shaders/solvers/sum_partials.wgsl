#import shared/scalar
// The one fixed tree every solver sum goes through: a workgroup of SUM_WG invocations adds
// its pairs, and the partials of a dot product (partials.wgsl) are added up the same way
// wherever that happens (reduce.wgsl's one workgroup, or every workgroup of a kernel that
// needs the sum before its own work), so a sum is the same bits wherever it is taken. The
// kernel declares `partials`.

const SUM_WG: u32 = 256u;

var<workgroup> sums: array<vec2<scalar>, SUM_WG>;

// The workgroup's total of each invocation's pair, returned to every invocation. Called from
// uniform control flow: it has barriers.
fn workgroup_sum(lid: u32, s: vec2<scalar>) -> vec2<scalar> {
    sums[lid] = s;
    workgroupBarrier();
    for (var half = SUM_WG / 2u; half > 0u; half /= 2u) {
        if (lid < half) {
            sums[lid] += sums[lid + half];
        }
        workgroupBarrier();
    }
    let total = sums[0];
    // `sums` may be written again after this returns.
    workgroupBarrier();
    return total;
}

// The two sums of `count` partial pairs laid out from `base` (the firsts at base + i, the
// seconds at base + count + i). Called from uniform control flow.
fn sum_partials(lid: u32, base: u32, count: u32) -> vec2<scalar> {
    var s = vec2<scalar>(scalar(0), scalar(0));
    for (var i = lid; i < count; i += SUM_WG) {
        s += vec2<scalar>(partials[base + i], partials[base + count + i]);
    }
    return workgroup_sum(lid, s);
}
