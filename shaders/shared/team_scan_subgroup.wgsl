#import shared/team_scan_common
// Scans over teams of LANES lanes, with subgroup shuffles. A subgroup may hold several teams
// (the host sets LANES to the smallest subgroup size). Called in uniform control flow.

fn team_lane(l: Lanes) -> TeamLane {
    let slot = l.team * (l.width / LANES) + l.lane / LANES;
    let lane = l.lane % LANES;
    return TeamLane(slot, lane, slot * LANES + lane, l.lane - lane);
}

// Exclusive sum of `v` over the team, and the team's total.
fn team_scan_u32(v: u32, t: TeamLane) -> ScanU32 {
    var incl = v;
    for (var d = 1u; d < LANES; d = d * 2u) {
        let o = subgroupShuffleUp(incl, d);
        if (t.lane >= d) {
            incl += o;
        }
    }
    return ScanU32(incl - v, subgroupShuffle(incl, t.first + LANES - 1u));
}

// Exclusive segmented sum over the team.
fn team_seg_scan(head: bool, v: scalar, t: TeamLane) -> SegScan {
    var f = select(0u, 1u, head);
    var s = v;
    for (var d = 1u; d < LANES; d = d * 2u) {
        let other_flag = subgroupShuffleUp(f, d);
        let other_sum = subgroupShuffleUp(s, d);
        if (t.lane >= d) {
            if (f == 0u) {
                s = other_sum + s;
            }
            f = f | other_flag;
        }
    }
    let before = subgroupShuffleUp(s, 1u);
    return SegScan(select(before, scalar(0), t.lane == 0u));
}
