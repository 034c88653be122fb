#import shared/team_scan_common
// Scans over teams of LANES lanes through workgroup memory (Hillis-Steele), for adapters
// without subgroup operations. Called in workgroup-uniform control flow (they hold barriers).

fn team_lane(l: Lanes) -> TeamLane {
    return TeamLane(l.team, l.lane, l.team * LANES + l.lane, l.team * LANES);
}

var<workgroup> scan_u32: array<u32, WG_SIZE>;
var<workgroup> scan_flag: array<u32, WG_SIZE>;
var<workgroup> scan_val: array<scalar, WG_SIZE>;

fn team_scan_u32(v: u32, t: TeamLane) -> ScanU32 {
    var incl = v;
    scan_u32[t.cell] = incl;
    workgroupBarrier();
    for (var d = 1u; d < LANES; d = d * 2u) {
        var o = 0u;
        if (t.lane >= d) {
            o = scan_u32[t.cell - d];
        }
        workgroupBarrier();
        incl += o;
        scan_u32[t.cell] = incl;
        workgroupBarrier();
    }
    let total = scan_u32[t.first + LANES - 1u];
    workgroupBarrier();
    return ScanU32(incl - v, total);
}

fn team_seg_scan(head: bool, v: scalar, t: TeamLane) -> SegScan {
    var f = select(0u, 1u, head);
    var s = v;
    scan_flag[t.cell] = f;
    scan_val[t.cell] = s;
    workgroupBarrier();
    for (var d = 1u; d < LANES; d = d * 2u) {
        var other_flag = 0u;
        var other_sum = scalar(0);
        if (t.lane >= d) {
            other_flag = scan_flag[t.cell - d];
            other_sum = scan_val[t.cell - d];
        }
        workgroupBarrier();
        if (t.lane >= d) {
            if (f == 0u) {
                s = other_sum + s;
            }
            f = f | other_flag;
        }
        scan_flag[t.cell] = f;
        scan_val[t.cell] = s;
        workgroupBarrier();
    }
    var before = scalar(0);
    if (t.lane > 0u) {
        before = scan_val[t.cell - 1u];
    }
    workgroupBarrier();
    return SegScan(before);
}
