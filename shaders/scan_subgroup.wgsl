// Scans over teams of LANES lanes, with subgroup shuffles. A subgroup may hold several teams
// (the host sets LANES to the smallest subgroup size). Called in uniform control flow.

// Where a lane sits in its team of LANES lanes, and its cell in per-lane workgroup arrays.
struct TeamLane {
    slot: u32,
    lane: u32,
    cell: u32,
    // The subgroup lane of this team's lane 0.
    first: u32,
}

fn team_lane(l: Lanes) -> TeamLane {
    let slot = l.team * (l.width / LANES) + l.lane / LANES;
    let lane = l.lane % LANES;
    return TeamLane(slot, lane, slot * LANES + lane, l.lane - lane);
}

struct ScanU32 {
    excl: u32,
    total: u32,
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

struct SegScan {
    // Sum of `v` over the lanes before this one, back to and including the nearest lane whose
    // `head` is set (0 on lane 0).
    excl: scalar,
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
