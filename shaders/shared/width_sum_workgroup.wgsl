// Sums over aligned runs of `width` lanes (a power of two up to the workgroup): a tree in
// workgroup memory, for adapters without subgroup operations.

var<workgroup> wide_partials: array<scalar, WG_SIZE>;

fn lane_slot(l: Lanes) -> u32 {
    return l.lid;
}

// Called in workgroup-uniform control flow with a uniform `width`.
fn width_sum(v: scalar, l: Lanes, sh: Shape, width: u32) -> scalar {
    if (width == 1u) {
        return v;
    }
    wide_partials[l.lid] = v;
    workgroupBarrier();
    for (var s = width / 2u; s > 0u; s = s / 2u) {
        if (l.lid % width < s) {
            wide_partials[l.lid] += wide_partials[l.lid + s];
        }
        workgroupBarrier();
    }
    let total = wide_partials[l.lid - l.lid % width];
    workgroupBarrier();
    return total;
}
