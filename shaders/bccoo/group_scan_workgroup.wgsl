#import bccoo/group_scan_common
// Workgroup-wide scans of bccoo's block-row partial sums in workgroup memory (Hillis–Steele), for
// adapters without subgroups. Invocations are numbered by `slot`; called in uniform control flow.

fn group_seg_scan(head: bool, v: rows, slot: u32, l: Lanes, sh: Shape) -> GroupScan {
    var f = select(0u, 1u, head);
    var s = v;
    gs_flag[slot] = f;
    gs_val[slot] = s;
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d = d * 2u) {
        var other_flag = 0u;
        var other_sum = rows(scalar(0));
        if (slot >= d) {
            other_flag = gs_flag[slot - d];
            other_sum = gs_val[slot - d];
        }
        workgroupBarrier();
        if (slot >= d) {
            if (f == 0u) {
                s = other_sum + s;
            }
            f = f | other_flag;
        }
        gs_flag[slot] = f;
        gs_val[slot] = s;
        workgroupBarrier();
    }
    var out = GroupScan(rows(scalar(0)), true);
    if (slot > 0u) {
        out = GroupScan(gs_val[slot - 1u], gs_flag[slot - 1u] == 0u);
    }
    workgroupBarrier();
    return out;
}

fn group_sum(v: rows, slot: u32, l: Lanes, sh: Shape) -> rows {
    gs_val[slot] = v;
    workgroupBarrier();
    for (var s = WG_SIZE / 2u; s > 0u; s = s / 2u) {
        if (slot < s) {
            gs_val[slot] += gs_val[slot + s];
        }
        workgroupBarrier();
    }
    let total = gs_val[0];
    workgroupBarrier();
    return total;
}
