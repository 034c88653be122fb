// Lane teams of LANES invocations, reduced through workgroup memory: for adapters without
// subgroup operations, or when they are turned off.
struct LaneInput {
    @builtin(local_invocation_index) lid: u32,
}

// Never read: the shape is constant here. (An entry-point input needs some builtin, and the
// kernels take workgroup_id and num_workgroups themselves.)
struct ShapeInput {
    @builtin(global_invocation_id) unused: vec3<u32>,
}

fn lanes_of(li: LaneInput, si: ShapeInput) -> Lanes {
    return Lanes(li.lid, li.lid / LANES, WG_SIZE / LANES, li.lid % LANES, LANES);
}

fn shape_of(si: ShapeInput) -> Shape {
    return Shape(WG_SIZE / LANES, LANES);
}

var<workgroup> team_partials: array<scalar, WG_SIZE>;

// Sum of `v` over the caller's team: a tree in workgroup memory. Called in workgroup-uniform
// control flow (it contains barriers).
fn team_sum(v: scalar, l: Lanes) -> scalar {
    team_partials[l.lid] = v;
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s = s / 2u) {
        if (l.lane < s) {
            team_partials[l.lid] += team_partials[l.lid + s];
        }
        workgroupBarrier();
    }
    let total = team_partials[l.team * LANES];
    workgroupBarrier();
    return total;
}
