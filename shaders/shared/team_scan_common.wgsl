// Shared by shaders/shared/team_scan_subgroup.wgsl and shaders/shared/team_scan_workgroup.wgsl: what their team scans take and return.

// Where a lane sits in its team of LANES lanes, and its cell in per-lane workgroup arrays.
struct TeamLane {
    slot: u32,
    lane: u32,
    cell: u32,
    // The subgroup lane (subgroup path) or workgroup cell (workgroup path) of the team's lane 0.
    first: u32,
}

struct ScanU32 {
    excl: u32,
    total: u32,
}

struct SegScan {
    // Sum of `v` over the lanes before this one, back to and including the nearest lane whose
    // `head` is set (0 on lane 0).
    excl: scalar,
}
