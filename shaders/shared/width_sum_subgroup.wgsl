// Sums over aligned runs of `width` lanes (a power of two up to the workgroup), on subgroups:
// a butterfly of shuffles inside a subgroup, then workgroup memory across the subgroups of a run.
// Lanes are numbered by `lane_slot` (subgroup, then lane), so no mapping of local invocation
// indices to subgroups is assumed.

var<workgroup> wide_partials: array<scalar, WG_SIZE>;

fn lane_slot(l: Lanes) -> u32 {
    return l.team * l.width + l.lane;
}

// Called in workgroup-uniform control flow with a uniform `width`.
fn width_sum(v: scalar, l: Lanes, sh: Shape, width: u32) -> scalar {
    var s = v;
    let inner = min(width, sh.width);
    for (var o = 1u; o < inner; o = o * 2u) {
        s += subgroupShuffleXor(s, o);
    }
    if (width <= sh.width) {
        return s;
    }
    if (l.lane == 0u) {
        wide_partials[l.team] = s;
    }
    workgroupBarrier();
    let per = width / sh.width;
    let first = l.team - l.team % per;
    var total = scalar(0);
    for (var k = 0u; k < per; k++) {
        total += wide_partials[first + k];
    }
    workgroupBarrier();
    return total;
}
