#import bccoo/group_scan_common
// Workgroup-wide scans of bccoo's block-row partial sums: subgroup shuffles within each subgroup, then
// the subgroups' totals through workgroup memory. Invocations are numbered by `slot` (subgroup,
// then lane; subgroups are full because the workgroup is a multiple of the largest subgroup).
// Called in uniform control flow.

fn group_seg_scan(head: bool, v: rows, slot: u32, l: Lanes, sh: Shape) -> GroupScan {
    var f = select(0u, 1u, head);
    var s = v;
    for (var d = 1u; d < sh.width; d = d * 2u) {
        let other_flag = subgroupShuffleUp(f, d);
        let other_sum = subgroupShuffleUp(s, d);
        if (l.lane >= d) {
            if (f == 0u) {
                s = other_sum + s;
            }
            f = f | other_flag;
        }
    }
    var excl = subgroupShuffleUp(s, 1u);
    var before = subgroupShuffleUp(f, 1u);
    if (l.lane == 0u) {
        excl = rows(scalar(0));
        before = 0u;
    }
    if (l.lane == l.width - 1u) {
        gs_val[l.team] = s;
        gs_flag[l.team] = f;
    }
    workgroupBarrier();
    var open = before == 0u;
    if (open) {
        // Walk back over earlier subgroups until one holds a head.
        for (var k = l.team; k > 0u; k--) {
            excl += gs_val[k - 1u];
            if (gs_flag[k - 1u] != 0u) {
                open = false;
                break;
            }
        }
    }
    workgroupBarrier();
    return GroupScan(excl, open);
}

fn group_sum(v: rows, slot: u32, l: Lanes, sh: Shape) -> rows {
    let s = subgroupAdd(v);
    if (l.lane == 0u) {
        gs_val[l.team] = s;
    }
    workgroupBarrier();
    var total = rows(scalar(0));
    for (var k = 0u; k < sh.teams; k++) {
        total += gs_val[k];
    }
    workgroupBarrier();
    return total;
}
